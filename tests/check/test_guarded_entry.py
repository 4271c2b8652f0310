"""A callee entered only under its caller's guard on an argument (`if batch.mode.is_idle():
self._execute_idle(batch)`) starts with the guard holding for its parameter, and hands it on with
the argument, even where some other code reassigns that attribute (`mode` is relabelled
elsewhere, so it is no settled attribute). The guard stops holding where it may stop being true:
where the callee (or anything it calls) may reassign the attribute, or rebinds the parameter; a
way in under no such guard keeps what it reaches. A local bound to the argument's attribute
(`mode = batch.mode`) tests the attribute while nothing may change either (the local copies
withdrawn in 4a7b000 lacked that watch: `tests/check/test_review_tenth_b2_aliases.py`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.check.helpers import HEAD, check_files, marked_lines
from tests.check.test_blocking import RULE, _assert_marked

_PROGRAM = """
    from dataclasses import dataclass, replace

    class Mode(enum.IntEnum):
        EXTEND = 1
        DECODE = 2
        IDLE = 3
        MIXED = 4

        def is_idle(self):
            return self == Mode.IDLE

        def is_mixed(self):
            return self == Mode.MIXED

        def is_extend(self):
            return self == Mode.EXTEND or self == Mode.MIXED

    @dataclass
    class Batch:
        mode: Mode
        lens: torch.Tensor
        size: int

    def relabel(batch: Batch):
        batch.mode = Mode.EXTEND

    class Backend:
        def init_metadata(self, batch: Batch):
            if batch.mode.is_extend():
                batch.lens.max().item(){EXTEND}
            if batch.mode.is_idle():
                batch.lens.tolist()  # expect

    class Wrapper:
        def __init__(self):
            self.inner = Backend()

        def init_metadata(self, batch: Batch):
            self.inner.init_metadata(batch)

    class Runner:
        def __init__(self):
            self.backend = Backend()
            self.wrapper = Wrapper()

        def execute(self, batch: Batch):
            {DISPATCH}
            relabel(batch)

        def _execute_idle(self, batch: Batch):
            {IDLE}

    def loop(runner: Runner):
        while True:
            runner.execute(recv())
            {LOOP}
            dist.barrier()
"""

_GUARD = "if batch.mode.is_idle():\n                return self._execute_idle(batch)"


def _program(dispatch: str = _GUARD, idle: str = "", loop: str = "", kept: bool = False) -> str:
    idle = idle or "self.backend.init_metadata(batch)"
    return (
        _PROGRAM.replace("{DISPATCH}", dispatch)
        .replace("{IDLE}", idle)
        .replace("{LOOP}", loop or "pass")
        .replace("{EXTEND}", "  # expect" if kept else "")
    )


@pytest.mark.parametrize(
    "idle",
    [
        "self.backend.init_metadata(batch)",  # the callee branches on the guarded argument
        "self.wrapper.init_metadata(batch)",  # passed on one call deeper
        "if batch.size > 0:\n                self.backend.init_metadata(batch)",
        "with torch.no_grad():\n                self.backend.init_metadata(batch)",
    ],
)
def test_the_callers_guard_holds_in_the_callee(tmp_path: Path, idle: str):
    """`relabel` reassigns `mode` in the program, but nothing between the guard and the
    backend's branch runs it: an idle batch takes no extend branch there."""
    _assert_marked(tmp_path, _program(idle=idle), {"rounds": ["mod.loop"]})


@pytest.mark.parametrize(
    "dispatch",
    [
        "mode = batch.mode\n            if mode.is_idle():\n"
        "                return self._execute_idle(batch)",
        # relabelled on one path: there the local is EXTEND (and the guard cannot hold)
        "mode = batch.mode\n            if mode.is_mixed():\n"
        "                batch.mode = Mode.EXTEND\n                mode = Mode.EXTEND\n"
        "            if mode.is_idle():\n                return self._execute_idle(batch)",
    ],
)
def test_a_local_bound_to_the_attribute_tests_the_attribute(tmp_path: Path, dispatch: str):
    _assert_marked(tmp_path, _program(dispatch=dispatch), {"rounds": ["mod.loop"]})


@pytest.mark.parametrize(
    "idle",
    [
        # something the callee runs first may reassign the attribute
        "relabel(batch)\n            self.backend.init_metadata(batch)",
        # the callee assigns it through another name for the same object
        "other = batch\n            other.mode = Mode.EXTEND\n"
        "            self.backend.init_metadata(batch)",
        # a lambda it hands on may run one that may reassign it
        "sorted([batch], key=lambda b: relabel(b))\n            self.backend.init_metadata(batch)",
        # the parameter is rebound to what a call returns
        "batch = self.load(batch)\n            self.backend.init_metadata(batch)",
    ],
)
def test_the_guard_stops_holding_where_it_may_stop_being_true(tmp_path: Path, idle: str):
    program = _program(idle=idle, kept=True).replace(
        "        def _execute_idle(",
        "        def load(self, batch: Batch) -> Batch:\n"
        "            return make_batch(batch)\n\n"
        "        def _execute_idle(",
    )
    _assert_marked(tmp_path, program, {"rounds": ["mod.loop"]})


def test_a_generator_is_entered_with_no_guard(tmp_path: Path):
    """Its body runs a step at a time, and the loop that advances it relabels the batch in
    between: what held where it was called need not hold at its next step."""
    idle = (
        "for _ in self.steps(batch):\n                batch.mode = Mode.EXTEND\n\n"
        "        def steps(self, batch: Batch):\n"
        "            for _ in range(3):\n"
        "                if batch.mode.is_extend():\n"
        "                    batch.lens.max().item()  # expect\n"
        "                yield batch"
    )
    program = _program(idle=idle).replace("tolist()  # expect", "tolist()")  # not called
    _assert_marked(tmp_path, program, {"rounds": ["mod.loop"]})


def test_a_local_binding_ends_at_a_yield(tmp_path: Path):
    """The loop advancing the generator relabels the batch while it is suspended."""
    idle = (
        "for _ in self.steps(batch):\n                batch.mode = Mode.EXTEND\n\n"
        "        def steps(self, batch: Batch):\n"
        "            mode = batch.mode\n"
        "            for _ in range(3):\n"
        "                yield batch\n"
        "                if mode.is_idle():\n"
        "                    if batch.mode.is_extend():\n"
        "                        batch.lens.max().item()  # expect"
    )
    program = _program(idle=idle).replace("tolist()  # expect", "tolist()")  # not called
    _assert_marked(tmp_path, program, {"rounds": ["mod.loop"]})


def test_a_way_in_under_no_guard_keeps_what_it_reaches(tmp_path: Path):
    loop = "runner._execute_idle(recv())"
    _assert_marked(tmp_path, _program(loop=loop, kept=True), {"rounds": ["mod.loop"]})


def test_a_local_bound_to_a_property_stands_for_nothing(tmp_path: Path):
    """A property's value follows other state: the local keeps the one it read."""
    dispatch = (
        "mode = batch.current\n            batch.size = 1\n            if mode.is_idle():\n"
        "                if batch.current.is_extend():\n"
        "                    batch.lens.max().item()  # expect\n"
        "                return self._execute_idle(batch)"
    )
    program = _program(dispatch=dispatch, kept=True).replace(
        "        size: int\n",
        "        size: int\n\n        @property\n        def current(self) -> Mode:\n"
        "            return Mode.IDLE if self.size == 0 else self.mode\n",
    )
    assert "def current" in program
    _assert_marked(tmp_path, program, {"rounds": ["mod.loop"]})


def test_a_local_rebound_stops_standing_for_the_attribute(tmp_path: Path):
    """`mode` is the batch's mode only until either is rebound."""
    dispatch = (
        "mode = batch.mode\n            batch = recv()\n            if mode.is_idle():\n"
        "                return self._execute_idle(batch)"
    )
    _assert_marked(tmp_path, _program(dispatch=dispatch, kept=True), {"rounds": ["mod.loop"]})


# The shapes of the withdrawn local copies (003d3a9, reverted by 4a7b000), which still hold.
_COPIES = """
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


def test_local_copies_end_where_the_local_or_the_reference_may_change(tmp_path: Path):
    """`dispatch`: an IDLE `mode` is an IDLE batch (the MIXED path set both to EXTEND); the
    others break the copy on some path (the batch rebound or reassigned, the local rebound to
    an unknown value, to the very constant tested, or by a loop), so nothing is said of it."""
    _assert_marked(tmp_path, _COPIES, {"rounds": ["mod.loop"]})


_PREPARE = """
    class Prepared(Backend):
        def prepare(self, batch: Batch):
            pass

    class Runner2(Runner):
        def __init__(self, backend: Prepared):
            self.backend = backend

        def _execute_idle(self, batch: Batch):
            self.backend.prepare(batch)
            self.backend.init_metadata(batch)

    def loop2(runner: Runner2):
        while True:
            runner.execute(recv())
            dist.barrier()
"""


@pytest.mark.parametrize(
    ("module", "override", "kept"),
    [
        # an override only another platform's module holds: not run here
        ("npu_backend", "relabel(batch)", False),
        ("other_backend", "relabel(batch)", True),
        # reflection the model does not follow (a computed name on an untyped object)
        ("other_backend", "put(batch, name_of(batch), Mode.EXTEND)", False),
    ],
)
def test_what_may_reassign_is_what_may_run_here(
    tmp_path: Path, module: str, override: str, kept: bool
):
    """`self.backend.prepare(batch)` may run a subclass's override: one that relabels the
    batch ends the guard, unless only another platform runs it."""
    main = HEAD + textwrap.dedent(_program(kept=kept).replace("{LOOP}", "pass") + _PREPARE)
    other = f"""
from mod import Batch, Mode, Prepared, relabel


def put(obj, name, value):
    setattr(obj, name, value)


class Special(Prepared):
    def prepare(self, batch: Batch):
        {override}
"""
    result = check_files(
        tmp_path, {"mod.py": main, f"{module}.py": other}, RULE, {"rounds": ["mod.loop2"]}
    )
    got = sorted(f.line for f in result.findings if f.path == "mod.py")
    assert got == marked_lines(main), [(f.path, f.line) for f in result.findings]
