"""A local bound to a reference (`mode = batch.forward_mode`) is that reference while neither is
reassigned: a test on the local is a test on what it names. A dispatcher that tests its copy of
the mode (`if mode.is_idle(): return self._execute_idle(batch)`) tells the callee what the batch's
mode is. Where one path rebinds the local to a constant (`mode = Mode.EXTEND` beside
`batch.mode = Mode.EXTEND`), a later test the constant fails still speaks of the reference."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_blocking import _assert_marked

_PROGRAM = """
class Mode:
    EXTEND = 0
    IDLE = 1
    MIXED = 2

class Batch:
    def __init__(self, mode):
        self.mode = mode

def dispatch(batch: Batch):
    mode = batch.mode
    if mode == Mode.MIXED:
        batch.mode = Mode.EXTEND
        mode = Mode.EXTEND
    if mode == Mode.IDLE:
        if batch.mode == Mode.EXTEND:
            time.sleep(1)
        else:
            time.sleep(2)  # expect

def rebound(batch: Batch, other: Batch):
    mode = batch.mode
    batch = other
    if mode == Mode.IDLE:
        if batch.mode == Mode.EXTEND:
            time.sleep(3)  # expect

def reassigned(batch: Batch):
    mode = batch.mode
    batch.mode = next_mode()
    if mode == Mode.IDLE:
        if batch.mode == Mode.EXTEND:
            time.sleep(4)  # expect

def either(batch: Batch, flag):
    mode = batch.mode
    if flag:
        mode = next_mode()
    if mode == Mode.IDLE:
        if batch.mode == Mode.EXTEND:
            time.sleep(5)  # expect

def same_constant(batch: Batch, flag):
    mode = batch.mode
    if flag:
        mode = Mode.IDLE
    if mode == Mode.IDLE:
        if batch.mode == Mode.EXTEND:
            time.sleep(6)  # expect

def iterated(batch: Batch, modes):
    mode = batch.mode
    for mode in modes:
        if mode == Mode.IDLE:
            if batch.mode == Mode.EXTEND:
                time.sleep(7)  # expect

def loop():
    while True:
        batch = recv()
        dispatch(batch)
        rebound(batch, recv())
        reassigned(batch)
        either(batch, recv())
        same_constant(batch, recv())
        iterated(batch, recv())
        dist.barrier()
"""


def test_a_test_on_a_local_copy_speaks_of_what_it_copies(tmp_path: Path):
    """`dispatch`: an IDLE `mode` is an IDLE batch (the MIXED path set both to EXTEND); the
    others break the copy on some path (the batch rebound or reassigned, the local rebound to
    an unknown value, to the very constant tested, or by a loop), so nothing is said of it."""
    _assert_marked(tmp_path, _PROGRAM, {"rounds": ["mod.loop"]})
