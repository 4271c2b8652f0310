"""What runs only in another mode: a dispatcher selects one event loop per process
(`if mode == A: s.loop_a() else: s.loop_b()`), so what the other loops alone store does not
reach the state of the loop under analysis (issue #18: sglang's normal loop took its request
state to vary with transfer polls that only the disaggregated prefill/decode loops make)."""

from __future__ import annotations

from rankguard.analysis.collectives import CollectiveReach
from rankguard.analysis.uniformity import find_divergent_calls
from rankguard.catalogs.catalog import collective_catalog
from tests.uniformity.programs import HEAD, lines

LOOPS = (
    "class S:\n"
    "    def __init__(self, mode, tp_group):\n"
    "        self.mode = mode\n"
    "        self.tp_group = tp_group\n"
    "        self.pending = 0\n\n"
    "    def loop_a(self):\n"
    "        while True:\n"
    "            if self.pending > 0:\n"
    "                dist.barrier(group=self.tp_group)\n\n"
    "    def loop_b(self):\n"
    "        while True:\n"
    "            self.stage()\n"
    "            dist.barrier(group=self.tp_group)\n\n"
    "    def stage(self):\n"
    "        self.pending = time.monotonic()\n\n"
)
A_LINE = 10  # the barrier in loop_a


def _found(program_of, code: str) -> list:
    program = program_of({"m.py": HEAD + code})
    reach = CollectiveReach(program, collective_catalog())
    return find_divergent_calls(program, ["m.S.loop_a"], reach)


def test_state_only_another_modes_loop_stores_does_not_reach_this_loop(program_of) -> None:
    code = LOOPS + (
        "def dispatch(s):\n"
        "    if s.mode == 'a':\n"
        "        s.loop_a()\n"
        "    elif s.mode == 'b':\n"
        "        s.loop_b()\n"
    )
    assert _found(program_of, code) == []


def test_state_stored_on_the_way_to_every_loop_still_varies(program_of) -> None:
    # The dispatcher stages before it picks a loop: that store runs in every mode.
    code = LOOPS + (
        "def dispatch(s):\n"
        "    s.stage()\n"
        "    if s.mode == 'a':\n"
        "        s.loop_a()\n"
        "    else:\n"
        "        s.loop_b()\n"
    )
    found = _found(program_of, code)
    assert lines(found) == [A_LINE]
    assert found[0].sources[0][0].kind == "time"


# Inside the round: the branch that selects it (`else: s.event_loop_normal()` under
# `if s.enable_overlap`) makes `self.enable_overlap` falsy there, the facts the blocking
# analysis walks with; a collective only the overlap path reaches is not reached.
SELECTED = (
    "class S:\n"
    "    def __init__(self, tp_group, overlap):\n"
    "        self.tp_group = tp_group\n"
    "        self.enable_overlap = overlap\n\n"
    "    def event_loop_normal(self):\n"
    "        while True:\n"
    "            self.step()\n\n"
    "    def event_loop_overlap(self):\n"
    "        while True:\n"
    "            dist.barrier(group=self.tp_group)\n\n"
    "    def step(self):\n"
    "        if {test}:\n"
    "            if time.monotonic() > 5:\n"
    "                dist.barrier(group=self.tp_group)\n\n"
    "def dispatch(s: S):\n"
    "    if s.enable_overlap:\n"
    "        s.event_loop_overlap()\n"
    "    else:\n"
    "        s.event_loop_normal()\n"
)


def _normal(program_of, code: str) -> list:
    program = program_of({"m.py": HEAD + code})
    reach = CollectiveReach(program, collective_catalog())
    return find_divergent_calls(program, ["m.S.event_loop_normal"], reach)


def test_a_collective_only_an_excluded_mode_reaches_is_not_reached(program_of) -> None:
    assert _normal(program_of, SELECTED.format(test="self.enable_overlap")) == []


def test_a_collective_the_selected_mode_reaches_still_diverges(program_of) -> None:
    found = _normal(program_of, SELECTED.format(test="not self.enable_overlap"))
    assert lines(found) == [17]
    assert found[0].sources[0][0].kind == "time"
