"""`with` statements in the blocking walk (`analysis.blocking_walk`).

A `@contextmanager` generator runs in two parts: up to its `yield` where the `with` starts,
and the rest (a `finally` after the `yield`, a cleanup collective) where the body is left, so a
call after the `yield` waits for the collectives after the `with`, not for the body's. Each part
is a summary of its own, told apart by a fact on entry (`PHASE`): entering stops each path at
its `yield`; leaving runs nothing until the `yield`, then the rest. A lock taken by `with
self._lock:` is a wait of its own; a context manager that swallows exceptions
(`contextlib.suppress`) may leave its body at any statement.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rankguard.analysis.blocking_types import Guards, State, join, merge
from rankguard.analysis.doubts import doubted
from rankguard.analysis.reach import edge_of, followed
from rankguard.core.chains import Hop
from rankguard.model.facts import Cond
from rankguard.summary.ir import CallSite, Stmt

if TYPE_CHECKING:
    from rankguard.analysis.blocking_walk import Walk

PHASE: Cond = ("context manager phase",)
ENTERING, WAITING, LEAVING = "entering", "waiting", "leaving"
# Context managers that swallow the exceptions they name: the body may stop anywhere.
_SWALLOWING = frozenset(("contextlib.suppress",))


def waiting(state: State) -> bool:
    """Leaving a context manager, before its `yield`: that part ran on entry."""
    return state.known.get(PHASE) == WAITING


def at_yield(walk: Walk, state: State) -> State | None:
    """At a `yield`: entering, the path stops (the `with` body runs here, inside any `try`
    around the `yield`, so its `finally` is not run now); leaving, what follows runs."""
    phase = state.known.get(PHASE)
    if phase == ENTERING:
        walk.suspended.append(state)
        return None
    if phase == WAITING:
        return state.evolve(known={**state.known, PHASE: LEAVING})
    return state


def with_statement(
    walk: Walk, stmt: Stmt, state: State, guards: Guards, cadence: str | None
) -> State | None:
    program, fn = walk.a.program, walk.fn
    inner = cadence
    for call in stmt.calls:
        for target in followed(program, fn, call):
            helper = walk.a.classify.function_cadence(target.name)
            if helper and "cadence helper" in helper:
                inner = inner or helper
    state = walk.calls(stmt.calls, state, guards, cadence, phase=ENTERING)
    state = lock_context(walk, stmt, state, cadence)
    state = walk.forget(state, stmt.targets)
    swallows = any(t.name in _SWALLOWING for c in stmt.calls for t in followed(program, fn, c))
    trace: list[State] | None = [] if swallows else None
    out = walk.block(stmt.blocks[0], state, guards, inner, trace)
    if trace:  # an exception the context manager swallows leaves the body anywhere
        out = join([out, *trace])
    if out is None:
        return None
    out = walk.calls(stmt.exits, out, guards, cadence)
    for call in reversed(stmt.calls):  # the context managers' code after their `yield`
        out = _leave(walk, call, stmt.calls, out, cadence)
    return out


def _leave(
    walk: Walk, call: CallSite, stmt_calls: Sequence[CallSite], state: State, cadence: str | None
) -> State:
    """What a `@contextmanager` generator the `with` entered runs as its body is left."""
    program, fn = walk.a.program, walk.fn
    outcomes = [
        walk.enter(target.name, state, hop, cadence, call, stmt_calls, phase=WAITING)
        for target in followed(program, fn, call)
        if target.name in program.functions and walk.a.context_manager(target.name)
        for hop in (Hop(fn, walk.record.path, call.line, edge_of(target)),)
    ]
    return (join(outcomes) or state) if outcomes else state


def lock_context(walk: Walk, stmt: Stmt, state: State, cadence: str | None) -> State:
    """`with self._lock:` acquires the lock (no call appears in the source)."""
    if waiting(state):
        return state
    found = walk.a.classify.lock_calls(walk.record, stmt, cadence)
    if not found:
        return state
    pending = dict(state.pending)
    merge(pending, doubted(found, state.known))
    return state.evolve(pending=pending)
