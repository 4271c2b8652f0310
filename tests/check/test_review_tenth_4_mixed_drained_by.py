"""Fault 4: a follower drained by different syncs on different paths is attached to one of
them only (`_drained_into` checks that every pair has *some* `drained_by`, then follows
`pairs[0].blocking.drained_by`).

`read(z)` runs after `x.a.tolist()` on the `flag` path (before `dist.barrier`) and after
`y.b.tolist()` on the other (before `dist.all_reduce`). `z.c.tolist()` is listed as a follower
of `x.a.tolist()` only; `y.b.tolist()`'s finding says nothing of it, so where `y.b` is on the
host (or once `y.b.tolist()` is removed) the wait `z.c.tolist()` puts before the all_reduce
is reported nowhere. Which head gets it depends on which pair was found first (swap the
branches and it moves). The rule's docstring ("an earlier one drained on every path found")
says one earlier sync drained it on every path, which is not what is checked.
What should happen: a follower of several heads is listed under each (or reported on its
own where its paths disagree)."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_blocking import _run

BODY = """
class Out:
    a: torch.Tensor
    b: torch.Tensor
    c: torch.Tensor

def read(z: Out):
    return z.c.tolist()

def commit(x: Out, y: Out, z: Out, flag):
    if flag:
        p = x.a.tolist()
        read(z)
        dist.barrier()
    else:
        r = y.b.tolist()
        read(z)
        dist.all_reduce(r)

def loop(x: Out, y: Out, z: Out, flag):
    while True:
        commit(x, y, z, flag)
"""


def test_a_follower_of_two_heads_is_listed_under_each(tmp_path: Path):
    _, result = _run(tmp_path, BODY, {"rounds": ["mod.loop"]})
    listed = {
        f.extra["blocking"]["text"]: [x["text"] for x in f.extra.get("followers", [])]
        for f in result.findings
    }
    # Either `z.c.tolist()` stands alone, or every head it follows on some path names it.
    alone = "z.c.tolist()" in listed
    under_each = all("z.c.tolist()" in listed.get(h, []) for h in ("x.a.tolist()", "y.b.tolist()"))
    assert alone or under_each, listed
