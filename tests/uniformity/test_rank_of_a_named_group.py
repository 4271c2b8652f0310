"""`torch.distributed.get_rank(group)` is this rank's id in that group (issue #18): the same on
every rank of a group of another dimension of the grid, like `get_tp_group().rank_in_group`.

Read without its group, the rank varied with every group: a tensor-parallel rank gating a
pipeline-group collective was reported, although inside one pipeline group every rank holds the
same tensor-parallel index. Training and serving code asks torch for a group rank this way
everywhere (`dist.get_rank(group=self.tp_group)`).
"""

from __future__ import annotations

import pytest

from tests.uniformity.programs import lines, run


def _round(rank: str, group: str = "get_pp_group().cpu_group") -> str:
    return (
        "def get_tp_group():\n    return _TP\n\n"
        "def get_pp_group():\n    return _PP\n\n"
        "class S:\n"
        "    def __init__(self):\n"
        "        self.tp_group = get_tp_group().cpu_group\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        f"            r = {rank}\n"
        "            if r == 0:\n"
        f"                dist.barrier(group={group})\n"
    )


@pytest.mark.parametrize(
    "rank",
    [
        "dist.get_rank(group=get_tp_group().cpu_group)",
        "dist.get_rank(get_tp_group().cpu_group)",
        "dist.get_rank(self.tp_group)",
        "get_tp_group().rank_in_group",
    ],
)
def test_a_rank_in_another_dimensions_group_is_uniform(program_of, rank: str) -> None:
    assert run(program_of, _round(rank)) == []


@pytest.mark.parametrize(
    "rank",
    [
        "dist.get_rank(group=get_tp_group().cpu_group)",
        "dist.get_rank(self.tp_group)",
    ],
)
def test_it_varies_over_its_own_group(program_of, rank: str) -> None:
    code = _round(rank, group="get_tp_group().cpu_group")
    assert lines(run(program_of, code)) == [code.count("\n")]


def test_a_rank_asked_without_a_group_varies_with_every_group(program_of) -> None:
    code = _round("dist.get_rank()")
    assert lines(run(program_of, code)) == [code.count("\n")]
