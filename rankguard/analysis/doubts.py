"""Paths a round takes only if a fact it is chosen under stops holding mid-round.

`if s.mode == Mode.NULL: s.event_loop_normal()` chooses the loop with `self.mode` NULL. Where
some method may reassign `mode` after construction (`analysis.stability`), the fact cannot cut
a branch (`if self.mode == Mode.DECODE:` stays walked: the mode may have changed), but such a
branch needs the change: a finding behind it is reported with low confidence, saying which fact
must stop holding. The dropped ("shaky") facts ride along the walk beside the trusted ones, on
`self` calls only, like the trusted facts on `self`; a path that took such a branch carries the
doubt into every call it makes.

The start-up validation gives the round facts on settings (`analysis.settings`). A check the
launcher runs only past an early return (`if cfg.model_path == "dummy": return`), or that one
launcher reaches inside a `with`, a loop, a `try` or an `if` while another calls it whenever it
starts (`analysis.launch_paths`), may not have run, so what it asserts is no fact; but a branch
it rules out runs only in the launch that skips it. Such facts ride along as `SKIPPABLE`
(settings are process-wide: into every call), and a path that takes a branch they rule out
carries `SKIPPED`: its findings are low confidence and say which check and how a launch passes
it by. Unlike a doubt, nothing in the round can make them hold, so
`BlockingAnalysis.inductive` never drops such a path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from rankguard.analysis.blocking_types import BlockingCall, Key, lowered
from rankguard.model.facts import Cond, contradicts, member, refs
from rankguard.model.records import FunctionRecord
from rankguard.summary.ir import Segs, Stmt, segs_text

DOUBT: Cond = ("doubt",)
SKIPPABLE: Cond = ("skippable",)  # a `Skippable`: the facts a skippable check would give
SKIPPED: Cond = ("skipped",)  # why the path runs only where the validation was skipped
_SHAKY = "shaky"


class Skippable(NamedTuple):
    """Facts on settings that hold wherever the start-up validation ran (sorted pairs), and
    which checks give them, past which early return."""

    facts: tuple[tuple[Cond, Any], ...]
    reason: str


def shaky_facts(facts: Mapping[Cond, Any]) -> dict[Cond, Any]:
    """Facts the round is chosen under but cannot trust, as entries of the walk's facts."""
    return {(_SHAKY, cond): value for cond, value in facts.items()}


def shaky_of(known: Mapping[Cond, Any]) -> dict[Cond, Any]:
    """The shaky facts among the walk's facts, as plain facts."""
    return {k[1]: v for k, v in known.items() if k[0] == _SHAKY}


def passed_on(known: Mapping[Cond, Any], on_self: bool) -> dict[Cond, Any]:
    """What a callee inherits: the doubt and what the skippable validation gives always,
    shaky facts through a call on `self`."""
    out = {k: v for k, v in known.items() if on_self and k[0] == _SHAKY}
    for key in (DOUBT, SKIPPABLE, SKIPPED):
        if key in known:
            out[key] = known[key]
    return out


def forget_shaky(known: Mapping[Cond, Any], target: Segs) -> Mapping[Cond, Any]:
    """Shaky facts on an attribute the path assigns no longer hold (`model.facts.forget`)."""
    size = len(target)
    stale = [k for k in known if k[0] == _SHAKY and any(s[:size] == target for s in refs(k[1]))]
    return {k: v for k, v in known.items() if k not in stale} if stale else known


def doubt(stmt: Stmt, positive: bool, known: Mapping[Cond, Any], record: FunctionRecord) -> str:
    """Why taking this side of `stmt` needs a shaky fact to stop holding ("" if it does not)."""
    if DOUBT in known:
        return ""  # the path is in doubt already: the first reason stands
    shaky = shaky_of(known)
    if not shaky or not contradicts(stmt.cond, positive, shaky):
        return ""
    names = sorted({segs_text(s) for c in shaky for s in refs(c) if _attribute(s)})
    side = "" if positive else "the other side of "
    return (
        f"reached through {side}`{stmt.text}` ({record.path}:{stmt.line}), which runs only if "
        f"{', '.join(f'`{n}`' for n in names)} changes during the round: the round is chosen "
        "otherwise, and the attribute is reassigned after construction"
    )


def skipped(
    stmt: Stmt,
    positive: bool,
    known: Mapping[Cond, Any],
    restated: Callable[[], Mapping[Cond, Any]],
    record: FunctionRecord,
) -> str:
    """Why taking this side of `stmt` needs the start-up validation skipped ("" if it does
    not): `restated` gives the skippable facts as the function reads them, asked only once
    the path is not in doubt or skipped already."""
    skip = known.get(SKIPPABLE)
    if skip is None or DOUBT in known or SKIPPED in known:
        return ""
    if not contradicts(stmt.cond, positive, {**known, **dict(skip.facts), **restated()}):
        return ""
    side = "" if positive else "the other side of "
    where = f"{record.path}:{stmt.line}"
    return f"reached through {side}`{stmt.text}` ({where}), which runs only where {skip.reason}"


def _attribute(segs: Segs) -> bool:
    """`self.mode`, `s.mode`: an attribute, not a local or an enum member (`Mode.NULL`)."""
    return len(segs) >= 2 and not member(segs)


def doubted(
    calls: Mapping[Key, BlockingCall], known: Mapping[Cond, Any]
) -> dict[Key, BlockingCall]:
    """Blocking calls met on this path, each at low confidence if the path is in doubt or
    runs only where the validation is skipped."""
    reason, skip = known.get(DOUBT), known.get(SKIPPED)
    if not reason and not skip:
        return dict(calls)
    why = reason or skip
    return {
        key: lowered(call, "low", why, **({"doubt": reason} if reason else {"skipped": skip}))
        for key, call in calls.items()
    }
