"""Which functions and calls a round reaches on paths its facts allow (issue #18 shares these
with the blocking analysis, issue #13).

The facts are the blocking analysis's own (`BlockingAnalysis.entry_facts`, `.infeasible`): the
branch of the caller that selects the round (`else: s.event_loop_normal()` makes
`self.enable_overlap` falsy), class invariants, constant arguments, and the guards a path has
passed. A side of an `if` the facts contradict is not walked, so a collective reached only
there is not reached, and what is called only there is not part of the round.

Unlike the blocking walk, this one is context-insensitive: a function is walked with the facts
that hold at *every* feasible call into it (their intersection), again whenever that shrinks.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from rankguard.analysis.context import RoundContext
from rankguard.analysis.reach import edge_of, followed
from rankguard.core.chains import Hop
from rankguard.model.facts import Cond, assume, forget, pure
from rankguard.model.program import Program
from rankguard.summary.ir import CallSite, Segs, Stmt, walk_statements

Known = dict[Cond, Any]
_MISSING = object()


class PathFacts(Protocol):
    """What the blocking analysis knows of paths (`analysis.blocking.BlockingAnalysis`)."""

    context: RoundContext

    def entry_facts(
        self, name: str, call: CallSite | None, known: Mapping[Cond, Any]
    ) -> dict[Cond, Any]: ...

    def infeasible(self, cond: Cond, positive: bool, known: Mapping[Cond, Any]) -> bool: ...


class FeasibleReach:
    """`chains`: each function the rounds reach on feasible paths, with a shortest chain;
    `calls`: the ids of the call sites on those paths."""

    def __init__(self, program: Program, facts: PathFacts, rounds: Sequence[str]) -> None:
        self.program = program
        self.facts = facts
        self.entry: dict[str, Known] = {}
        self.chains: dict[str, list[Hop]] = {}
        self.calls: set[int] = set()
        self._queue: deque[str] = deque()
        for name in rounds:
            record = program.functions.get(name)
            if record is not None and name not in self.entry:
                self.entry[name] = dict(facts.context.round_facts(record))
                self.chains[name] = []
                self._queue.append(name)
        while self._queue:
            name = self._queue.popleft()
            self._fn = name
            self.block(program.functions[name].info.body, dict(self.entry[name]))

    # -- entering callees ---------------------------------------------------------------------
    def enter(self, calls: Iterable[CallSite], known: Known) -> None:
        record = self.program.functions[self._fn]
        for call in calls:
            self.calls.add(id(call))
            targets = followed(self.program, self._fn, call)
            for target in targets:
                if target.name not in self.program.functions:
                    continue
                called = self.facts.context.as_called(call, targets, target)
                facts = self.facts.entry_facts(target.name, called, known)
                hop = Hop(self._fn, record.path, call.line, edge_of(target))
                self.offer(target.name, facts, hop)

    def offer(self, name: str, facts: Known, hop: Hop) -> None:
        held = self.entry.get(name)
        if held is None:
            self.entry[name] = facts
            self.chains[name] = [*self.chains[self._fn], hop]
            self._queue.append(name)
            return
        kept = {c: v for c, v in held.items() if facts.get(c, _MISSING) == v}
        if len(kept) < len(held):  # a call with fewer facts: walk it again with what is common
            self.entry[name] = kept
            self._queue.append(name)

    # -- statements -----------------------------------------------------------------------------
    def block(self, stmts: Sequence[Stmt], known: Known | None) -> Known | None:
        """Walk `stmts`; the facts after them, or None when no run falls through."""
        for stmt in stmts:
            if known is None:
                return None
            known = self.stmt(stmt, known)
        return known

    def stmt(self, stmt: Stmt, known: Known) -> Known | None:
        kind = stmt.kind
        self.enter(stmt.calls, known)
        if kind in ("return", "raise", "break", "continue"):
            return None
        if kind == "assign":
            return _forget(known, stmt.targets)
        if kind == "expr" and stmt.cond:  # an assert: past it, it held
            if self.facts.infeasible(stmt.cond, True, known):
                return None
            return _assumed(known, stmt.cond, True)
        if kind == "if":
            outs = []
            for side, block in enumerate(stmt.blocks):
                if not self.facts.infeasible(stmt.cond, side == 0, known):
                    outs.append(self.block(block, _assumed(known, stmt.cond, side == 0)))
            return _meet(outs)
        # Loops, try, with, match: every block may run, after any of the others' stores.
        after = _forget(known, _assigned(stmt))
        body_known = after
        if kind == "loop" and stmt.cond:
            if self.facts.infeasible(stmt.cond, True, after):
                body_known = None
            else:
                body_known = _assumed(after, stmt.cond, True)
        for index, block in enumerate(stmt.blocks):
            self.block(block, body_known if index == 0 else after)
        self.enter(stmt.exits, after)
        return after


def _assumed(known: Known, cond: Cond, positive: bool) -> Known:
    facts = {c: v for c, v in assume(cond, positive).items() if pure(c)}
    return {**known, **facts} if facts else known


def _forget(known: Known, targets: Iterable[Segs]) -> Known:
    for target in targets:
        known = dict(forget(known, target))
    return known


def _assigned(stmt: Stmt) -> list[Segs]:
    return [t for s in walk_statements((stmt,)) for t in s.targets]


def _meet(outs: list[Known | None]) -> Known | None:
    """What holds after an `if`: the facts every side that falls through agrees on."""
    live = [out for out in outs if out is not None]
    if not live:
        return None
    first, *rest = live
    return {c: v for c, v in first.items() if all(o.get(c, _MISSING) == v for o in rest)}
