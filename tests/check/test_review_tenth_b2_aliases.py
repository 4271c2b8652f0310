"""Local copies of a reference (003d3a9/ca03a8d): the copy must end wherever the reference
may change."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_blocking import _assert_marked

_HEAD = """
class Mode:
    EXTEND = 0
    IDLE = 1

class Batch:
    def __init__(self, mode):
        self.mode = mode
"""


def test_reference_reassigned_through_another_name(tmp_path: Path):
    _assert_marked(
        tmp_path,
        _HEAD
        + """
def via_name(batch: Batch):
    mode = batch.mode
    same = batch
    same.mode = Mode.EXTEND
    if mode == Mode.IDLE:
        if batch.mode == Mode.EXTEND:
            time.sleep(1)  # expect

def loop():
    while True:
        via_name(recv())
        dist.barrier()
""",
        {"rounds": ["mod.loop"]},
    )


def test_reference_reassigned_by_setattr(tmp_path: Path):
    _assert_marked(
        tmp_path,
        _HEAD
        + """
def via_setattr(batch: Batch):
    mode = batch.mode
    setattr(batch, "mode", Mode.EXTEND)
    if mode == Mode.IDLE:
        if batch.mode == Mode.EXTEND:
            time.sleep(1)  # expect

def loop():
    while True:
        via_setattr(recv())
        dist.barrier()
""",
        {"rounds": ["mod.loop"]},
    )


def test_reference_root_rebound_by_with(tmp_path: Path):
    _assert_marked(
        tmp_path,
        _HEAD
        + """
def via_with(batch: Batch, ctx):
    mode = batch.mode
    with ctx as batch:
        if mode == Mode.IDLE:
            if batch.mode == Mode.EXTEND:
                time.sleep(1)  # expect

def loop():
    while True:
        via_with(recv(), recv())
        dist.barrier()
""",
        {"rounds": ["mod.loop"]},
    )


def test_reference_reassigned_by_a_method(tmp_path: Path):
    _assert_marked(
        tmp_path,
        _HEAD
        + """
def via_call(batch: Batch):
    mode = batch.mode
    reset(batch)
    if mode == Mode.IDLE:
        if batch.mode == Mode.EXTEND:
            time.sleep(1)  # expect

def reset(batch: Batch):
    batch.mode = Mode.EXTEND

def loop():
    while True:
        via_call(recv())
        dist.barrier()
""",
        {"rounds": ["mod.loop"]},
    )


def test_reference_rebound_by_for(tmp_path: Path):
    _assert_marked(
        tmp_path,
        _HEAD
        + """
def via_for(batch: Batch, batches):
    mode = batch.mode
    for batch in batches:
        if mode == Mode.IDLE:
            if batch.mode == Mode.EXTEND:
                time.sleep(1)  # expect

def loop():
    while True:
        via_for(recv(), recv())
        dist.barrier()
""",
        {"rounds": ["mod.loop"]},
    )
