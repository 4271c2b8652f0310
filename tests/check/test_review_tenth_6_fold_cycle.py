"""Fault 6 (code level; no program found that reaches it): `_drained_into` folds every member
of a `drained_by` cycle away, so none of them is reported.

For A (drained_by B) and B (drained_by A), `_drained_into(A)` walks A -> B -> A, breaks on the
repeat with `host` = A, and returns A (not None): A is folded (into itself). Likewise B. The
cycle guard (`earlier in seen`) stops the loop but still returns a host inside the cycle, so
`_findings` yields nothing for either call; the same holds for a call whose `drained_by` is its
own place. The docstring says a follower is attached to "the reported sync"; here no sync of
the chain is reported. Expected: a chain that closes on itself reports (at least) one member,
with the others as its followers."""

from __future__ import annotations

from rankguard.analysis.blocking_types import BlockingCall, Pair
from rankguard.analysis.collectives import CollectiveSite
from rankguard.rules.blocking_before_collective import _findings

RULE = "blocking-before-collective"
SITE = CollectiveSite("torch.distributed.barrier", "collective", "mod.py", 30, "mod.loop")


def _call(text: str, line: int, drained_by: str) -> BlockingCall:
    return BlockingCall(
        callee="torch.Tensor.tolist", target="torch.Tensor.tolist", kind="device-sync",
        reason="copies", confidence="low", note="", text=text, path="mod.py", line=line,
        col=4, function="mod.commit", chain=(), drained_by=drained_by,
    )  # fmt: skip


def _never(finding: object) -> bool:
    return False  # no suppression silences anything here


def _grouped(*calls: BlockingCall) -> dict:
    return {c.key: [Pair(c, SITE, ())] for c in calls}


def test_a_two_cycle_still_reports_one_of_them():
    a = _call("a.x.tolist()", 10, "`b.y.tolist()` (mod.py:11)")
    b = _call("b.y.tolist()", 11, "`a.x.tolist()` (mod.py:10)")
    found = list(_findings(RULE, "mod.loop", _grouped(a, b), frozenset(), _never))
    assert found, "both members of the cycle were folded away"


def test_a_call_drained_by_its_own_place_is_still_reported():
    a = _call("a.x.tolist()", 10, "`a.x.tolist()` (mod.py:10)")
    found = list(_findings(RULE, "mod.loop", _grouped(a), frozenset(), _never))
    assert found, "folded into itself"
