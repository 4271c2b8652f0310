"""What runs only in another mode: the code the rounds' alternatives reach and the rounds do not.

A serving process runs one event loop, picked by a dispatcher on its mode (`if mode == NULL:
s.event_loop_normal() elif mode == PREFILL: s.event_loop_disagg_prefill()`). The functions
called on the other branches of the `if`s that select a round are its alternatives; what only
they reach runs in a process of another mode, so its stores are not the round's state. This is
the round's selecting facts (`analysis.context.RoundContext.round_facts`) applied to the whole
program-wide state induction: a value only another mode's loop stores cannot reach this one.

A function called from anywhere else (start-up code, the dispatcher before it picks a loop, a
thread) runs in this mode too. Limit, on purpose: a supervisor that switches modes in one
process (a prefill/decode role switch) carries state from one loop into the next.
"""

from __future__ import annotations

from collections.abc import Sequence

from rankguard.analysis.reach import FOLLOWED, enclosing, reach_from
from rankguard.model.program import Program
from rankguard.summary.ir import CallSite, Stmt, walk_calls


def other_modes_only(program: Program, rounds: Sequence[str]) -> frozenset[str]:
    """Functions only the rounds' alternatives reach: every call into one comes from an
    alternative's side of a selecting `if`, or from another such function."""
    selecting: set[int] = set()  # the calls on the other sides of the selecting `if`s
    wanted = set(rounds)
    for caller, resolved in sorted(program.calls.items()):
        record = program.functions.get(caller)
        if record is None:
            continue
        for item in resolved:
            if any(t.name in wanted and t.kind in FOLLOWED for t in item.targets):
                selecting.update(id(call) for call in _beside(record.info.body, item.call) or ())
    if not selecting:
        return frozenset()
    callers: dict[str, set[str]] = {}  # callee -> callers, the selecting calls left out
    alternatives: set[str] = set()
    for caller, resolved in program.calls.items():
        for item in resolved:
            for target in item.targets:
                if target.kind not in FOLLOWED or target.name not in program.functions:
                    continue
                if id(item.call) in selecting:
                    alternatives.add(target.name)
                else:
                    callers.setdefault(target.name, set()).add(caller)
    ours = reach_from(program, rounds)
    only = {name for name in reach_from(program, sorted(alternatives)) if name not in ours}
    changed = True
    while changed:  # called from outside: runs in this mode too, and so does what it calls
        outside = {name for name in only if callers.get(name, set()) - only}
        only -= outside
        changed = bool(outside)
    return frozenset(only)


def _beside(body: tuple[Stmt, ...], call: CallSite) -> list[CallSite] | None:
    """The calls on the other sides of the `if`s (and `match`es) that enclose `call` in `body`
    (None when `call` is not in `body`)."""
    path = enclosing(body, call)
    if path is None:
        return None
    return [
        c
        for stmt, index in path
        if stmt.kind in ("if", "match")
        for i, other in enumerate(stmt.blocks)
        if i != index
        for c in walk_calls(other)
    ]
