"""A progress display around a sequence yields the sequence's items (issue #18).

Training and serving code shows progress on one rank only: `tqdm(sizes, disable=rank != 0)`,
or `tqdm(sizes) if rank == 0 else sizes`. Either way every rank iterates the same sizes;
the rank decides only what is printed. Read as data, the rank id reached every size iterated,
and from a start-up capture loop everything stored from it.
"""

from __future__ import annotations

import pytest

from tests.uniformity.programs import lines, run


def _round(setup: str, test: str = "bs > 1") -> str:
    return (
        "import tqdm\n"
        "from tqdm.auto import tqdm as bar\n\n"
        "def get_tp_group():\n    return _TP\n\n"
        "class S:\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            sizes = [1, 2, 4]\n"
        "            rank = get_attention_tp_rank()\n"
        f"            {setup}\n"
        "            for bs in steps:\n"
        f"                if {test}:\n"
        "                    dist.barrier(group=get_tp_group().cpu_group)\n"
    )


@pytest.mark.parametrize(
    "setup",
    [
        "steps = tqdm.tqdm(sizes, disable=rank != 0, desc=f'rank {rank}')",
        "steps = bar(sizes, position=rank)",
        "steps = tqdm.tqdm(reversed(sizes)) if rank == 0 else reversed(sizes)",
        "steps = bar(sizes, leave=False) if rank == 0 else sizes",
    ],
)
def test_what_a_display_shows_is_not_what_it_yields(program_of, setup: str) -> None:
    assert run(program_of, _round(setup)) == []


@pytest.mark.parametrize(
    "setup",
    [
        "steps = tqdm.tqdm([rank, 1])",
        "steps = sizes if rank == 0 else [3]",
        "steps = tqdm.tqdm(sizes) if rank == 0 else reversed(sizes[1:])",
        # A copy beside the sequence: not the same items once the sequence changes.
        "steps = tqdm.tqdm(list(sizes)) if rank == 0 else sizes; sizes.append(rank)",
    ],
)
def test_a_rank_that_decides_the_items_still_varies(program_of, setup: str) -> None:
    code = _round(setup)
    assert lines(run(program_of, code)) == [code.count("\n")]
