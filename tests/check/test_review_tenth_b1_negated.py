"""Negated arguments (7394fcc): the caller's fact must still hold at the call."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_blocking import _assert_marked

CALLEE = """
def communicate(config, wait_on_reqs):
    if config.batch:
        assert wait_on_reqs
    if config.batch and config.sync:
        torch.cuda.synchronize()  # expect
"""


def test_reassigned_local(tmp_path: Path):
    _assert_marked(
        tmp_path,
        CALLEE
        + """
def send_recv(config, other, overlap=False):
    overlap = other.flag
    communicate(config, wait_on_reqs=(not overlap))

def loop(config, other):
    while True:
        send_recv(config, other, overlap=True)
        dist.barrier()
""",
        {"rounds": ["mod.loop"]},
    )


def test_for_target(tmp_path: Path):
    _assert_marked(
        tmp_path,
        CALLEE
        + """
def send_recv(config, overlap=False):
    for overlap in (True, False):
        communicate(config, wait_on_reqs=(not overlap))

def loop(config):
    while True:
        send_recv(config, overlap=True)
        dist.barrier()
""",
        {"rounds": ["mod.loop"]},
    )


def test_with_target(tmp_path: Path):
    _assert_marked(
        tmp_path,
        CALLEE
        + """
def send_recv(config, ctx, overlap=False):
    with ctx as overlap:
        communicate(config, wait_on_reqs=(not overlap))

def loop(config, ctx):
    while True:
        send_recv(config, ctx, overlap=True)
        dist.barrier()
""",
        {"rounds": ["mod.loop"]},
    )


def test_branch_reassigned(tmp_path: Path):
    _assert_marked(
        tmp_path,
        CALLEE
        + """
def send_recv(config, c, overlap=False):
    if c:
        overlap = False
    communicate(config, wait_on_reqs=(not overlap))

def loop(config, c):
    while True:
        send_recv(config, c, overlap=True)
        dist.barrier()
""",
        {"rounds": ["mod.loop"]},
    )


def test_aug_and_tuple_target(tmp_path: Path):
    _assert_marked(
        tmp_path,
        CALLEE
        + """
def send_recv(config, pair, overlap=False):
    a, overlap = pair
    communicate(config, wait_on_reqs=(not overlap))

def loop(config, pair):
    while True:
        send_recv(config, pair, overlap=True)
        dist.barrier()
""",
        {"rounds": ["mod.loop"]},
    )


def test_except_target(tmp_path: Path):
    _assert_marked(
        tmp_path,
        CALLEE
        + """
def send_recv(config, overlap=1):
    try:
        g()
    except Exception as overlap:
        communicate(config, wait_on_reqs=(not overlap))

def loop(config):
    while True:
        send_recv(config, overlap=0)
        dist.barrier()
""",
        {"rounds": ["mod.loop"]},
    )


def test_comprehension_variable_shadows_the_callers_local(tmp_path: Path):
    # Inside the comprehension `overlap` is the loop variable, not the parameter the caller
    # knows is True: the call may pass `wait_on_reqs=True`.
    _assert_marked(
        tmp_path,
        CALLEE
        + """
def send_recv(config, flags, overlap=False):
    return [communicate(config, wait_on_reqs=(not overlap)) for overlap in flags]

def loop(config, flags):
    while True:
        send_recv(config, flags, overlap=True)
        dist.barrier()
""",
        {"rounds": ["mod.loop"]},
    )


def test_lambda_parameter_shadows_the_callers_local(tmp_path: Path):
    _assert_marked(
        tmp_path,
        CALLEE
        + """
def send_recv(config, flags, overlap=False):
    fn = lambda overlap: communicate(config, wait_on_reqs=(not overlap))
    fn(False)

def loop(config, flags):
    while True:
        send_recv(config, flags, overlap=True)
        dist.barrier()
""",
        {"rounds": ["mod.loop"]},
    )
