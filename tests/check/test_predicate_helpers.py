"""A helper that only tests something (`def graphs_enabled(self): return get_exec().backend is
not None`) decides a branch as its test would written in place: what the round knows cuts the
side that needs the test to go the other way. Anything the expansion cannot see whole (an
earlier return, several overrides) stays a call of unknown truth, and what would name something
else at the call is unknown there (the review's programs, `tests/check/review/`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.check.test_blocking import _assert_marked, _run
from tests.check.test_feasible_paths import _ELASTIC_EP_VALIDATED

_RUNNER = """
    class Runner:
        def __init__(self):
            self.elastic = get_exec().elastic_ep_backend is not None

        def forward(self):
            if self.elastic:
                time.sleep(1)  # expect
"""


def _rounds(tmp_path: Path, runner: str) -> list[str]:
    """The rounds whose `forward` keeps its finding, with `Runner` replaced by `runner`."""
    code = _ELASTIC_EP_VALIDATED.replace(_RUNNER, runner)
    assert code != _ELASTIC_EP_VALIDATED
    _, result = _run(tmp_path, code, {"rounds": ["*.event_loop_*"]})
    return sorted(f.extra["round"].rsplit(".", 1)[-1] for f in result.findings)


_HELPER = """
    class Graphs:
        def enabled(self{params}):
            {extra}return get_exec().elastic_ep_backend is not None and get_exec().max_ep > 1

    class Runner:
        def __init__(self):
            self.graphs = Graphs()

        def forward(self):
            if self.{receiver}enabled({args}):
                time.sleep(1)  # expect
"""


@pytest.mark.parametrize(
    "shape",
    [
        {"receiver": "graphs."},  # on another object
        {"receiver": "graphs.", "params": ", strict=True"},  # a default the call leaves alone
    ],
)
def test_a_predicate_helper_decides_as_its_test_would(tmp_path: Path, shape: dict):
    """Validation: elastic EP runs with one pipeline stage. The pipeline loop cannot take
    `if self.graphs.enabled():`, whose helper returns `elastic_ep_backend is not None and ...`;
    the normal loop, which knows nothing of it, keeps its finding."""
    runner = _HELPER.format(**{"params": "", "extra": "", "args": "", **shape})
    assert _rounds(tmp_path, runner) == ["event_loop_normal"]


def test_a_helper_not_seen_whole_decides_nothing(tmp_path: Path):
    """Reading only the last `return` would be wrong here: an earlier one may answer."""
    extra = "if get_exec().forced:\n                return True\n            "
    runner = _HELPER.format(receiver="graphs.", params="", extra=extra, args="")
    assert _rounds(tmp_path, runner) == ["event_loop_normal", "event_loop_pp"]


def test_a_helper_a_subclass_overrides_decides_nothing(tmp_path: Path):
    """`self.graphs` is only declared a `Graphs`, which a subclass overrides with a test the
    normal loop rules out: either test may run, so each loop keeps its finding (reading either
    helper alone would cut one of them)."""
    runner = _HELPER.format(receiver="graphs.", params="", extra="", args="")
    runner = runner.replace(
        "        def __init__(self):\n            self.graphs = Graphs()\n",
        "        def __init__(self, graphs: Graphs = None):\n            self.graphs = graphs\n",
    )
    runner += """
    class StagedGraphs(Graphs):
        def enabled(self):
            return get_exec().pp_size > 1
"""
    assert "graphs: Graphs" in runner
    assert _rounds(tmp_path, runner) == ["event_loop_normal", "event_loop_pp"]


def test_a_helper_asking_another_helper_decides_too(tmp_path: Path):
    """`enabled()` returns `self.backend_set() and ...`, which returns the elastic test: two
    levels of helpers read as one test."""
    runner = _HELPER.format(receiver="graphs.", params="", extra="", args="").replace(
        "            return get_exec().elastic_ep_backend is not None and get_exec().max_ep > 1\n",
        "            return self.backend_set() and get_exec().max_ep > 1\n\n"
        "        def backend_set(self):\n"
        "            return get_exec().elastic_ep_backend is not None\n",
    )
    assert "backend_set" in runner
    assert _rounds(tmp_path, runner) == ["event_loop_normal"]


def test_a_decorated_helper_decides_nothing(tmp_path: Path):
    """A decorator may stand in for the helper's result (a test double, a cached override)."""
    runner = _HELPER.format(receiver="graphs.", params="", extra="", args="").replace(
        "        def enabled(self):\n", "        @overridable\n        def enabled(self):\n"
    )
    assert "@overridable" in runner
    assert _rounds(tmp_path, runner) == ["event_loop_normal", "event_loop_pp"]


_MODE_TESTS = """
    from dataclasses import dataclass
    from enum import IntEnum, auto

    class Mode(IntEnum):
        EXTEND = auto()
        IDLE = auto()
        DRAFT = auto()

        def is_extend(self, include_draft: bool = False):
            return self == Mode.EXTEND or (include_draft and self == Mode.DRAFT)

    @dataclass
    class Batch:
        mode: Mode

    def run(batch: Batch, flag):
        if batch.mode == Mode.DRAFT:
            if batch.mode.is_extend():
                time.sleep(1)
            if batch.mode.is_extend(include_draft=True):
                time.sleep(2)  # expect
            if batch.mode.is_extend(include_draft=bool(flag)):
                time.sleep(3)  # expect
        if batch.mode == Mode.IDLE:
            if batch.mode.is_extend(include_draft=bool(flag)):
                time.sleep(4)

    def loop():
        while True:
            run(recv(), recv())
            dist.barrier()
"""


def test_a_helper_reads_the_parameters_the_call_leaves_alone_as_their_defaults(tmp_path: Path):
    """`is_extend()` leaves `include_draft` at its default, False: a DRAFT batch is not an
    extend one there, and is where the call passes True. A parameter the call passes a value
    the facts do not know (`bool(flag)`) is unknown in the test, not the whole test: an IDLE
    batch is no extend batch whatever `flag` holds, a DRAFT one may be."""
    _assert_marked(tmp_path, _MODE_TESTS, {"rounds": ["mod.loop"]})


@pytest.mark.parametrize("receiver", ["self", "this"])
def test_a_helpers_receiver_is_its_first_parameter_whatever_its_name(tmp_path: Path, receiver: str):
    # `def idle(this): return this.kind == Kind.IDLE` reads its receiver as `self` would.
    _assert_marked(
        tmp_path,
        f"""
        class Kind(enum.Enum):
            IDLE = 1
            BUSY = 2

        class Work:
            def __init__(self, kind):
                self.kind = kind

            def idle({receiver}):
                return {receiver}.kind == Kind.IDLE

        def step(w: Work):
            if w.kind == Kind.IDLE:
                if not w.idle():
                    time.sleep(1)
                if w.idle():
                    time.sleep(2)  # expect

        def loop(w: Work):
            while True:
                step(w)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )
