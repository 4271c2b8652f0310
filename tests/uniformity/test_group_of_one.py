"""A side only a group of one takes holds values agreed over that group (issue #18).

`if g.world_size > 1: <share it>` leaves, on the side that skips, a group of one rank: what a
rank holds there is agreed over it. The test may name the groups through a flag the program
keeps (`self.needs_sync = pp_size > 1 or tp_size > 1`): skipping it, each of them has one rank.
"""

from __future__ import annotations

from tests.uniformity.programs import lines, run

GROUPS = "def get_tp_group():\n    return _TP\n\n"


def _round(flag: str) -> str:
    return GROUPS + (
        "class Sync:\n"
        "    def __init__(self, pp_size, tp_size):\n"
        "        self.pp_size = pp_size\n"
        "        self.tp_size = tp_size\n"
        f"        self.needs_sync = {flag}\n\n"
        "class S:\n"
        "    def __init__(self):\n"
        "        self.sync = Sync(1, 1)\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            hit = time.monotonic()\n"
        "            if self.sync.needs_sync:\n"
        "                box = [hit]\n"
        "                dist.broadcast_object_list(box, src=0, group=get_tp_group().cpu_group)\n"
        "                hit = box[0]\n"
        "            if hit > 1.0:\n"
        "                dist.barrier(group=get_tp_group().cpu_group)\n"
    )


def test_skipping_a_flag_that_some_group_has_ranks_leaves_groups_of_one(program_of) -> None:
    assert run(program_of, _round("self.pp_size > 1 or self.tp_size > 1")) == []


def test_a_flag_that_says_something_else_decides_nothing(program_of) -> None:
    code = _round("self.pp_size > 1 or time.monotonic() > 1")
    end = code.count("\n")
    assert lines(run(program_of, code)) == [end - 3, end]  # the flag itself varies, too


def test_what_a_container_holds_is_agreed_too(program_of) -> None:
    code = GROUPS + (
        "class S:\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            hits = []\n"
        "            hits.append(time.monotonic())\n"
        "            if get_tp_world_size() > 1:\n"
        "                box = [hits]\n"
        "                dist.broadcast_object_list(box, src=0, group=get_tp_group().cpu_group)\n"
        "                hits = box[0]\n"
        "            if hits[0] > 1.0:\n"
        "                dist.barrier(group=get_tp_group().cpu_group)\n"
    )
    assert run(program_of, code) == []
