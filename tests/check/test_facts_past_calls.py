"""A guard's fact on an attribute (`if batch.mode.is_idle():` makes `batch.mode` IDLE inside)
stops holding past a call that may write that attribute: one the callee, or anything it calls,
stores by name on an object of that class (`analysis.stability`'s writers), and, where the
model cannot see the write, any attribute of an object the call hands to code it cannot
resolve, or stores into by a name data spells (`setattr(batch, name, v)`, `batch.__dict__[k]`,
`vars(batch)[k]`). A call that writes nothing the fact reads keeps it, so the inner branch the
guard contradicts stays cut.

Written first and seen failing on main (25a183d): the ten recall cases each reported nothing
where their `# expect` is; the five guards passed there and pin the pruning a blunter fix
(any call forgets everything, or any write of `mode` on any class) would lose."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.check.test_blocking import _assert_marked

_PROGRAM = """
import enum
import extlib

class Mode(enum.IntEnum):
    EXTEND = 1
    IDLE = 3

    def is_idle(self):
        return self == Mode.IDLE

    def is_extend(self):
        return self == Mode.EXTEND

class Batch:
    def __init__(self, mode: Mode):
        self.mode = mode
        self.size = 0

    def switch(self):
        self.mode = Mode.EXTEND

class Job:
    def __init__(self):
        self.mode = Mode.IDLE

    def restart(self):
        self.mode = Mode.EXTEND

def relabel(batch: Batch):
    batch.mode = Mode.EXTEND

def prepare(batch: Batch):
    relabel(batch)

def put(obj, name, value):
    setattr(obj, name, value)

def resize(batch: Batch):
    batch.size = 1

class Runner:
    def __init__(self, key: str):
        self.key = key
        self.job = Job()

    def dispatch(self, batch: Batch):
        if batch.mode.is_idle():
            {BETWEEN}
            if batch.mode.is_extend():
                torch.cuda.synchronize(){MARK}
            return

def loop(runner: Runner):
    while True:
        runner.dispatch(recv())
        dist.barrier()
"""


def _program(between: str, reported: bool) -> str:
    return _PROGRAM.replace("{BETWEEN}", between).replace(
        "{MARK}", "  # expect" if reported else ""
    )


ROUNDS = {"rounds": ["mod.loop"]}


@pytest.mark.parametrize(
    "between",
    [
        "relabel(batch)",  # the callee writes the attribute
        "prepare(batch)",  # two calls deep
        "batch.switch()",  # a method of the object itself
        "extlib.frob(batch)",  # code the model cannot see, handed the object
        "setattr(batch, self.key, Mode.EXTEND)",  # a name data spells
        "put(batch, self.key, Mode.EXTEND)",  # the same, inside a callee taking the object
        "batch.__dict__[self.key] = Mode.EXTEND",
        "vars(batch)[self.key] = Mode.EXTEND",
    ],
)
def test_a_call_that_may_write_the_attribute_ends_the_guard(tmp_path: Path, between: str):
    _assert_marked(tmp_path, _program(between, reported=True), ROUNDS)


@pytest.mark.parametrize(
    "between",
    [
        "pass",  # nothing between: the inner branch contradicts the guard
        "resize(batch)",  # the callee writes another attribute of the object
        "self.job.restart()",  # it writes `mode`, but on another class's objects
        "extlib.frob(batch.size)",  # code the model cannot see gets an int, not the object
    ],
)
def test_a_call_that_cannot_write_the_attribute_keeps_the_guard(tmp_path: Path, between: str):
    _assert_marked(tmp_path, _program(between, reported=False), ROUNDS)


def test_a_container_filled_in_between_is_no_longer_empty(tmp_path: Path):
    """`self.queue.append(x)` changes the truth of `self.queue` that `if not self.queue:` gave."""
    _assert_marked(
        tmp_path,
        """
        class Runner:
            def __init__(self):
                self.queue = []

            def dispatch(self, x):
                if not self.queue:
                    self.queue.append(x)
                    if self.queue:
                        torch.cuda.synchronize()  # expect
                    return

        def loop(runner: Runner):
            while True:
                runner.dispatch(recv())
                dist.barrier()
        """,
        ROUNDS,
    )


def test_a_global_a_callee_assigns_is_no_longer_known(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        READY = False

        def arm():
            global READY
            READY = True

        def dispatch():
            if not READY:
                arm()
                if READY:
                    torch.cuda.synchronize()  # expect
                return

        def loop():
            while True:
                dispatch()
                dist.barrier()
        """,
        ROUNDS,
    )


def test_a_local_handed_to_unknown_code_keeps_its_value(tmp_path: Path):
    """A guard: unknown code given `flag` cannot rebind the caller's local."""
    _assert_marked(
        tmp_path,
        """
        import extlib

        def dispatch(flag: bool):
            if not flag:
                extlib.log(flag)
                if flag:
                    torch.cuda.synchronize()
                return

        def loop():
            while True:
                dispatch(recv())
                dist.barrier()
        """,
        ROUNDS,
    )


# The enum and the batch the fixtures below share: a mode only this program's code assigns.
_MODE_AND_BATCH = """
import enum

class Mode(enum.IntEnum):
    EXTEND = 1
    IDLE = 3

    def is_idle(self):
        return self == Mode.IDLE

    def is_extend(self):
        return self == Mode.EXTEND

class Batch:
    def __init__(self, mode: Mode):
        self.mode = mode
"""

_IN_TEST = (
    _MODE_AND_BATCH
    + """
def relabel(batch):
    batch.mode = Mode.EXTEND
    return True

def dispatch(batch: Batch):
    {TEST}
        if batch.mode.is_extend():
            torch.cuda.synchronize(){MARK}
        return

def loop():
    while True:
        dispatch(recv())
        dist.barrier()
"""
)


@pytest.mark.parametrize(
    ("test", "reported"),
    [
        # the call runs after the conjunct that gave the fact: the fact ends there
        ("if batch.mode.is_idle() and relabel(batch):", True),
        ("if not (not batch.mode.is_idle() or not relabel(batch)):", True),
        ("assert batch.mode.is_idle() and relabel(batch)\n    if True:", True),
        # the call runs first: the fact the later conjunct gives holds past it
        ("if relabel(batch) and batch.mode.is_idle():", False),
        ("assert relabel(batch) and batch.mode.is_idle()\n    if True:", False),
    ],
)
def test_a_call_in_the_test_after_the_guard_ends_it(tmp_path: Path, test: str, reported: bool):
    program = _IN_TEST.replace("{TEST}", test).replace("{MARK}", "  # expect" if reported else "")
    _assert_marked(tmp_path, program, ROUNDS)


def test_a_global_a_callee_rebinds_ends_the_facts_on_its_attributes(tmp_path: Path):
    """`_CONFIG.mode` read through a module global a callee assigns under `global`."""
    _assert_marked(
        tmp_path,
        """
        import enum

        class Mode(enum.IntEnum):
            EXTEND = 1
            IDLE = 3

            def is_idle(self):
                return self == Mode.IDLE

            def is_extend(self):
                return self == Mode.EXTEND

        class Config:
            def __init__(self, mode: Mode):
                self.mode = mode

        _CONFIG = Config(Mode.IDLE)

        def set_config(c: Config):
            global _CONFIG
            _CONFIG = c

        def dispatch():
            if _CONFIG.mode.is_idle():
                set_config(Config(Mode.EXTEND))
                if _CONFIG.mode.is_extend():
                    torch.cuda.synchronize()  # expect
                return

        def loop():
            while True:
                dispatch()
                dist.barrier()
        """,
        ROUNDS,
    )


_SETTLED = (
    _MODE_AND_BATCH
    + """
def put(obj, name, value):
    setattr(obj, name, value)

def put_via(obj, name, value):
    put(obj, name, value)

def store(obj, name, value):
    obj.__dict__[name] = value

class Runner:
    def __init__(self, key: str):
        self.key = key

    def dispatch(self, batch: Batch):
        if batch.mode.is_idle():
            {BETWEEN}
            if batch.mode.is_extend():
                torch.cuda.synchronize(){MARK}
            return

def loop(runner: Runner):
    while True:
        runner.dispatch(recv())
        dist.barrier()
"""
)


@pytest.mark.parametrize(
    ("between", "reported"),
    [
        # `mode` is assigned only in `__init__`, yet a helper's computed-name write reaches it
        ("put(batch, self.key, Mode.EXTEND)", True),
        ("put_via(batch, self.key, Mode.EXTEND)", True),
        ("store(batch, self.key, Mode.EXTEND)", True),
        ("put(self, self.key, Mode.EXTEND)", False),  # another object
    ],
)
def test_a_helper_setting_a_computed_name_ends_a_settled_fact(
    tmp_path: Path, between: str, reported: bool
):
    program = _SETTLED.replace("{BETWEEN}", between)
    program = program.replace("{MARK}", "  # expect" if reported else "")
    _assert_marked(tmp_path, program, ROUNDS)
