"""Fault 9: the rank order `(doubt, skipped, drained_by)` lets a drained path that needs no
fact to change outrank a path where the call waits by itself but that needs the round's mode
to change (or a skipped validation). Every kept pair is then `drained_by`, and the call is
folded as a follower, although on the doubted path it runs *before* the sync it "follows" and
waits by itself. README: "On a path where nothing drained it, it is a finding of its own"; a
path that needs a fact to change is "still reported, at low confidence".

`self.helper(other)` runs under `mode == PREFILL` (the round is chosen under `NULL`, and
`switch`, which the round never runs, may change it: a doubted path) before any sync, and
again right after `out.lengths.tolist()`. Expected: `other.ids.tolist()` reported on its own
(low, naming the doubt). Got: only listed as `out.lengths.tolist()`'s follower."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_blocking import _run

BODY = """
class Mode:
    NULL = 0
    PREFILL = 1

class Out:
    lengths: torch.Tensor
    ids: torch.Tensor

class S:
    def __init__(self, mode):
        self.mode = mode

    def switch(self):
        self.mode = Mode.PREFILL

    def helper(self, other: Out):
        return other.ids.tolist()

    def event_loop_normal(self, out: Out, other: Out):
        while True:
            if self.mode == Mode.PREFILL:
                self.helper(other)
            lens = out.lengths.tolist()
            self.helper(other)
            dist.barrier()

def dispatch(s: S, out: Out, other: Out):
    if s.mode == Mode.NULL:
        s.event_loop_normal(out, other)
"""


def test_a_doubted_path_where_the_call_waits_alone_keeps_it_a_finding(tmp_path: Path):
    _, result = _run(tmp_path, BODY, {"rounds": ["*.event_loop_*"]})
    texts = {f.extra["blocking"]["text"]: f for f in result.findings}
    assert "other.ids.tolist()" in texts, {
        t: [x["text"] for x in f.extra.get("followers", [])] for t, f in texts.items()
    }
