"""Fault 3: a sync the path may not run still makes the next read its follower.

`if flag: lens = out.lengths.tolist()` then `other.ids.tolist()` keeps the second as its own
finding (the lead's `skip` fixture in test_drained_stream.py). The same code written with a
conditional expression, `and`, or a comprehension folds the second read into the first:
`Walk.calls` undoes only `ran` for a call that may be skipped (`may_skip`), not the SYNCED
mark `after()` set. Where `flag` is false (or `outs` is empty) `other.ids.tolist()` waits by
itself and is reported nowhere. In the worst case the two sides of one `x if c else y` are
folded together although they never run on the same path. At 84adc74 each was reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.check.test_blocking import _assert_marked, _run

FIRST = {
    "ifexp": "lens = out.lengths.tolist() if flag else None  # expect",
    "and": "lens = flag and out.lengths.tolist()  # expect",
    "comprehension": "lens = [o.lengths.tolist() for o in outs]  # expect",
}


@pytest.mark.parametrize("form", sorted(FIRST))
def test_a_read_after_a_sync_that_may_not_run_is_its_own_finding(tmp_path: Path, form: str):
    _assert_marked(
        tmp_path,
        f"""
        class Out:
            lengths: torch.Tensor
            ids: torch.Tensor

        def commit(out: Out, other: Out, outs: list[Out], flag):
            {FIRST[form]}
            ids = other.ids.tolist()  # expect

        def loop(out: Out, other: Out, outs: list[Out], flag):
            while True:
                commit(out, other, outs, flag)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )


def test_the_two_sides_of_a_conditional_expression_are_not_one_wait(tmp_path: Path):
    _, result = _run(
        tmp_path,
        """
        class Out:
            lengths: torch.Tensor
            ids: torch.Tensor

        def commit(out: Out, other: Out, flag):
            lens = out.lengths.tolist() if flag else other.ids.tolist()

        def loop(out: Out, other: Out, flag):
            while True:
                commit(out, other, flag)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )
    texts = sorted(f.extra["blocking"]["text"] for f in result.findings)
    assert texts == ["other.ids.tolist()", "out.lengths.tolist()"], texts
