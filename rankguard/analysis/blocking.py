"""Regions before collectives, and the blocking calls in them.

A round's *region* for a collective C is everything that may execute between the round start
(or the collective executed just before C on that path) and C. We walk statements in program
order, path-sensitively (branches fork and join, loops run to a fixpoint, `return`, `break`,
`continue`, `raise`, `try/finally` and `with` route their states), carrying the blocking calls
seen since the last collective. Reaching a collective pairs every pending call with it and
empties the set.

Only feasible paths are walked: a branch whose condition contradicts what is known there is
skipped (`model.facts`). What is known comes from the round's context (the caller's branch that
selects the round, constructor asserts: `analysis.context`), from `assert`s and branches on the
path, and from the call site (constant arguments, omitted defaults). Calling a generator runs
none of its body; a `for` over it does. Tensor placement (`model.placement`) flows through
locals, attributes and parameters, and decides whether a device sync is one.

Interprocedurally each function gets a summary per entry context (the facts and tensor
placements that hold on entry, usually none), memoised:

- `first`: the collectives it reaches before any other collective (with the chain);
- `pairs`: (blocking call, collective) pairs wholly inside it;
- `tail`: blocking calls that may still be pending when it returns;
- `passes`: some path returns without running a collective.

A call into a function whose `first` is non-empty is a collective site for its caller (DESIGN
§2.1): pending calls pair with every collective in `first`, and only its `tail` is pending
after, unless it `passes`: then, as on its collective-free path, the caller's pending calls
still wait for the next collective too. (A path taken only by a group of one rank, `if
world_size == 1: return`, is not walked: `analysis.single_rank`.) Otherwise the function is
transparent and its `tail` joins the caller's pending calls. Recursion
is cut (the recursive call is transparent); a summary computed under a cut to a function still
being summarised is not memoised, so it never stands for the function's whole answer.

The walk is reusable: `BlockingAnalysis.regions(round)` gives every pair with both chains, and the
calls pending at the end of the round (its tail).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from rankguard.adapters import store
from rankguard.adapters.keyed import KeyedStore
from rankguard.analysis.blocking_calls import CallClassifier
from rankguard.analysis.blocking_keep import KeptSummaries
from rankguard.analysis.blocking_types import (
    BlockingCall,
    Guards,
    Key,
    Pair,
    Regions,
    State,
    Summary,
    cadenced,
    join,
    merge,
    same,
)
from rankguard.analysis.collectives import CollectiveSite
from rankguard.analysis.context import RoundContext, placements
from rankguard.analysis.hardware import platform_facts
from rankguard.analysis.precision import assigned_fact, cadence_of
from rankguard.analysis.reach import edge_of, followed
from rankguard.analysis.rounds import Round
from rankguard.analysis.single_rank import peer_facts
from rankguard.catalogs.catalog import BlockingCatalog, CollectiveCatalog
from rankguard.catalogs.platforms import Platforms, platform_catalog
from rankguard.catalogs.rank_sources import rank_source_catalog
from rankguard.core.chains import Hop
from rankguard.model.facts import Cond, assume, contradicts, forget, pure
from rankguard.model.placement import asserted
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord
from rankguard.summary.ir import CALL, SUBSCRIPT, CallSite, Segs, Stmt

_MAX_LOOP_PASSES = 8
_CONTEXT_MANAGERS = frozenset(("contextmanager", "asynccontextmanager"))

__all__ = ["BlockingAnalysis", "BlockingCall", "Pair", "Regions"]
MemoKey = tuple[str, frozenset[tuple[Cond, Any]], frozenset[tuple[str, str]]]


class BlockingAnalysis:
    def __init__(
        self,
        program: Program,
        collectives: CollectiveCatalog,
        catalog: BlockingCatalog,
        cadence_helpers: Sequence[str] = (),
        platforms: Platforms | None = None,
        store: KeyedStore | None = None,
        salt: str = "",
    ) -> None:
        """With a `store`, summaries are kept across runs (`analysis.blocking_keep`); `salt`
        must then name everything else they depend on: the configuration and this code."""
        self.program = program
        self.platforms = platforms or platform_catalog()
        self.collectives = collectives
        self.catalog = catalog
        self.classify = CallClassifier(program, catalog, cadence_helpers)
        self.context = RoundContext(program)
        self.ranks = rank_source_catalog()
        self._memo: dict[MemoKey, tuple[Summary, bool]] = {}
        self._stack: list[str] = []
        self.kept = (
            KeptSummaries(program, self.classify, self.context, store, salt) if store else None
        )

    # -- summaries -----------------------------------------------------------------------------
    def summary(
        self, name: str, known: Mapping[Cond, Any], env: Mapping[str, str]
    ) -> tuple[Summary, set[str], bool]:
        """`name`'s summary under `known` and `env` (facts on entry), the functions still on
        the stack that it was cut short at, and whether it touched a function on a cycle of
        calls (then it is never kept across runs: `analysis.blocking_keep`)."""
        key = (name, frozenset(known.items()), frozenset(env.items()))
        memo = self._memo.get(key)
        if memo is not None:
            return memo[0], set(), memo[1]
        kept = self.kept
        cyclic = kept is None or kept.cyclic(name)
        if not cyclic:
            assert kept is not None
            found = kept.load(name, known, env)
            if found is not None:
                self._memo[key] = (found, False)
                return found, set(), False
        store.COUNTS[f"blocking summary computed: {name}"] += 1
        record = self.program.functions[name]
        self._stack.append(name)
        try:
            walk = _Walk(self, record)
            out = walk.block(record.info.body, State(True, {}, env, known), (), None)
            end = join([out, *walk.returns])
        finally:
            self._stack.pop()
        passes = end is not None and end.clean
        result = Summary(walk.first, walk.pairs, dict(end.pending) if end else {}, passes)
        cadence = self.classify.function_cadence(name)
        if cadence:
            result = Summary(
                result.first,
                {
                    k: replace(p, blocking=cadenced(p.blocking, cadence))
                    for k, p in result.pairs.items()
                },
                {k: cadenced(c, cadence) for k, c in result.tail.items()},
                passes,
            )
        cut = walk.cut - {name}
        tainted = cyclic or walk.tainted
        if not cut:
            self._memo[key] = (result, tainted)
            if not tainted:
                assert kept is not None
                kept.save(name, known, env, result)
        return result, cut, tainted

    def entry_facts(
        self, name: str, call: CallSite | None, known: Mapping[Cond, Any]
    ) -> dict[Cond, Any]:
        return self.context.entry_facts(self.program.functions[name], call, known)

    def suspended(self, name: str) -> bool:
        """Calling `name` runs none of its body: a generator (not a context manager's)."""
        info = self.program.functions[name].info
        return info.is_generator and not any(
            d and d[-1] in _CONTEXT_MANAGERS for d in info.decorators
        )

    def infeasible(self, cond: Cond, positive: bool, known: Mapping[Cond, Any]) -> bool:
        """Taking this side of `cond` contradicts the facts, or needs a group of one rank
        (`analysis.single_rank`: nobody can wait for a straggler there), or runs only on a
        platform the run does not analyse (`analysis.hardware`)."""
        ambient = {**platform_facts(cond, self.platforms), **peer_facts(cond, self.ranks)}
        # What is known wins: the normal loop's pp_size <= 1.
        return contradicts(cond, positive, {**ambient, **known} if ambient else known)

    def on_stack(self, name: str) -> bool:
        return name in self._stack

    # -- rounds --------------------------------------------------------------------------------
    def regions(self, rnd: Round, include_tail: bool = False) -> Regions:
        """Every pair in one round; with `include_tail`, the tail pairs with the next round."""
        record = rnd.function
        loop = rnd.loop
        header = list(loop.calls) if not loop.targets else []
        self._stack.append(record.qualname)
        known = self.context.round_facts(record)
        try:
            walk = _Walk(self, record)
            end = walk.round_body(loop, header, State(True, {}, {}, known))
            pairs = dict(walk.pairs)
            tail = dict(end.pending) if end else {}
            if include_tail and tail:
                again = _Walk(self, record)
                again.round_body(loop, header, State(False, tail, {}, known))
                for key, pair in again.pairs.items():
                    if key not in pairs and pair.blocking.key in tail:
                        pairs[key] = replace(pair, tail=True)
        finally:
            self._stack.pop()
        return Regions(rnd, list(pairs.values()), list(tail.values()))


class _Walk:
    """One function body, walked once per summary (or per round)."""

    def __init__(self, analysis: BlockingAnalysis, record: FunctionRecord) -> None:
        self.a = analysis
        self.record = record
        self.fn = record.qualname
        self.first: dict[CollectiveSite, tuple[Hop, ...]] = {}
        self.pairs: dict[tuple[Key, CollectiveSite], Pair] = {}
        self.returns: list[State] = []
        self.loops: list[tuple[list[State], list[State]]] = []
        self.cut: set[str] = set()
        self.tainted = False  # entered a function on a cycle of calls (`summary`)

    # -- statements ----------------------------------------------------------------------------
    def round_body(self, loop: Stmt, header: list[CallSite], start: State) -> State | None:
        self.loops.append(([], []))
        state = self.calls(header, start, (), None)
        out = self.block(loop.blocks[0], state, (), None)
        _, continues = self.loops.pop()
        return join([out, *continues])

    def block(
        self,
        stmts: Sequence[Stmt],
        state: State | None,
        guards: Guards,
        cadence: str | None,
        trace: list[State] | None = None,
    ) -> State | None:
        for stmt in stmts:
            if state is None:
                return None
            if trace is not None:
                trace.append(state)
            state = self.stmt(stmt, state, guards, cadence)
        return state

    def stmt(self, stmt: Stmt, state: State, guards: Guards, cadence: str | None) -> State | None:
        kind = stmt.kind
        state = self.properties(stmt, state, cadence)
        if kind == "with":
            return self.with_(stmt, state, guards, cadence)
        state = self.calls(stmt.calls, state, guards, cadence)
        if kind == "assign":
            return self.assign(stmt, state)
        if kind == "return":
            self.returns.append(state)
            return None
        if kind == "raise":
            return None
        if kind in ("break", "continue"):
            if self.loops:
                self.loops[-1][0 if kind == "break" else 1].append(state)
            return None
        if kind in ("if", "loop"):
            state = self.truth_test(stmt, state, cadence)
        if kind == "if":
            inner = cadence or cadence_of(stmt.text, state.env)
            body = self.branch(stmt, 0, state, guards, inner)
            orelse = self.branch(stmt, 1, state, guards, cadence)
            return join([body, orelse])
        if kind == "expr" and stmt.cond:  # assert: a path where it fails raises
            if self.a.infeasible(stmt.cond, True, state.known):
                return None
            return self.assume(state, stmt.cond, True)
        if kind == "loop":
            return self.loop(stmt, state, guards, cadence)
        if kind == "try":
            return self.try_(stmt, state, guards, cadence)
        if kind == "match":
            cases = [self.block(case, state, guards, cadence) for case in stmt.blocks]
            return join([state, *cases])
        return state

    def branch(
        self, stmt: Stmt, side: int, state: State, guards: Guards, cadence: str | None
    ) -> State | None:
        """One side of an `if`, unless the known facts contradict it."""
        positive = side == 0
        if self.a.infeasible(stmt.cond, positive, state.known):
            return None
        inner = self.assume(state, stmt.cond, positive)
        inner = inner.evolve(taken=(*inner.taken, (stmt.cond, positive)))
        return self.block(stmt.blocks[side], inner, (*guards, (stmt.cond, positive)), cadence)

    def truth_test(self, stmt: Stmt, state: State, cadence: str | None) -> State:
        """`if done:` / `while not flag:` on a device tensor reads its value on the host."""
        found = self.a.classify.truth_test(self.record, stmt, state.env, cadence)
        if found is None:
            return state
        pending = dict(state.pending)
        merge(pending, {found.key: found})
        return state.evolve(pending=pending)

    def assume(self, state: State, cond: Cond, positive: bool) -> State:
        env = asserted(cond, positive, state.env, state.known, self.a.classify.placement.attribute)
        state = state if env is state.env else state.evolve(env=env)
        facts = {c: v for c, v in assume(cond, positive).items() if pure(c)}
        if not facts:
            return state
        return state.evolve(known={**state.known, **facts})

    def assign(self, stmt: Stmt, state: State) -> State:
        state = self._forget_facts(state, stmt.targets)
        names = [".".join(t) for t in stmt.targets if CALL not in t and SUBSCRIPT not in t]
        if not names:
            return state
        env = dict(state.env)
        attrs = self.a.classify.placement.attribute
        single = len(stmt.targets) == 1
        fact = assigned_fact(stmt, state.env, state.known, attrs) if single else None
        for name in names:
            if fact is None:
                env.pop(name, None)
            else:
                env[name] = fact
        return state.evolve(env=env)

    def _forget_facts(self, state: State, targets: Sequence[Segs]) -> State:
        known = state.known
        for target in targets:
            known = forget(known, target)
        return state if known is state.known else state.evolve(known=known)

    def _forget(self, state: State, targets: Sequence[Segs]) -> State:
        state = self._forget_facts(state, targets)
        names = [t[0] for t in targets if len(t) == 1 and t[0] in state.env]
        if not names:
            return state
        return state.evolve(env={k: v for k, v in state.env.items() if k not in names})

    def loop(self, stmt: Stmt, state: State, guards: Guards, cadence: str | None) -> State | None:
        # A `for` header advances what it iterates: a generator's body runs here. Its target
        # takes an element of what it iterates, which lives where that does.
        state = self.assign(stmt, self.calls(stmt.calls, state, guards, cadence, advance=True))
        entry = current = state
        breaks: list[State] = []
        for _ in range(_MAX_LOOP_PASSES):
            self.loops.append(([], []))
            out = self.block(stmt.blocks[0], current, guards, cadence)
            broke, continued = self.loops.pop()
            breaks.extend(broke)
            following = join([entry, out, *continued])
            assert following is not None
            if same(following, current):
                break
            current = following
        normal = None if stmt.infinite else self.block(stmt.blocks[1], current, guards, cadence)
        return join([normal, *breaks])

    def with_(self, stmt: Stmt, state: State, guards: Guards, cadence: str | None) -> State | None:
        inner = cadence
        for call in stmt.calls:
            for target in followed(self.a.program, self.fn, call):
                helper = self.a.classify.function_cadence(target.name)
                if helper and "cadence helper" in helper:
                    inner = inner or helper
        state = self.calls(stmt.calls, state, guards, cadence)
        state = self.lock_context(stmt, state, cadence)
        state = self._forget(state, stmt.targets)
        out = self.block(stmt.blocks[0], state, guards, inner)
        return self.calls(stmt.exits, out, guards, cadence) if out is not None else None

    def lock_context(self, stmt: Stmt, state: State, cadence: str | None) -> State:
        """`with self._lock:` acquires the lock (no call appears in the source)."""
        found = self.a.classify.lock_calls(self.record, stmt, cadence)
        if not found:
            return state
        pending = dict(state.pending)
        merge(pending, found)
        return state.evolve(pending=pending)

    def try_(self, stmt: Stmt, state: State, guards: Guards, cadence: str | None) -> State | None:
        body, orelse, final, *handlers = stmt.blocks
        returned = len(self.returns)
        trace: list[State] = []
        out = self.block(body, state, guards, cadence, trace)
        after = self.block(orelse, out, guards, cadence) if out is not None else None
        raised = join([*trace, out])
        caught = [self.block(h, raised, guards, cadence) for h in handlers] if raised else []
        fall = join([after, *caught])
        if final:
            early = self.returns[returned:]
            del self.returns[returned:]
            if early:
                through = self.block(final, join(early), guards, cadence)
                if through is not None:
                    self.returns.append(through)
            if fall is not None:
                fall = self.block(final, fall, guards, cadence)
        return fall

    # -- calls ---------------------------------------------------------------------------------
    def calls(
        self,
        calls: Sequence[CallSite],
        state: State,
        guards: Guards,
        cadence: str | None,
        advance: bool = False,
    ) -> State:
        for call in calls:
            if not call.deferred:
                state = self.call(call, calls, state, guards, cadence, advance)
        return state

    def call(
        self,
        call: CallSite,
        stmt_calls: Sequence[CallSite],
        state: State,
        guards: Guards,
        cadence: str | None,
        advance: bool = False,
    ) -> State:
        targets = followed(self.a.program, self.fn, call)
        blocking = self.a.classify.blocking_call(
            self.record, call, stmt_calls, targets, state.env, state.taken, cadence, state.known
        )
        if blocking is not None:
            pending = dict(state.pending)
            merge(pending, {blocking.key: blocking})
            return state.evolve(pending=pending)
        outcomes: list[State | None] = []
        for target in targets:
            hop = Hop(self.fn, self.record.path, call.line, edge_of(target))
            kind = self.a.collectives.kind(target.name)
            if kind is not None:
                site = CollectiveSite(target.name, kind, self.record.path, call.line, self.fn)
                outcomes.append(self.apply(Summary({site: ()}, {}, {}), state, hop, cadence))
            elif target.name in self.a.program.functions:
                if not advance and target.via != "advanced" and self.a.suspended(target.name):
                    continue  # a generator: its body runs where it is advanced
                outcomes.append(self.enter(target.name, state, hop, cadence, call, stmt_calls))
        if not outcomes:
            return state
        return join(outcomes) or state

    def properties(self, stmt: Stmt, state: State, cadence: str | None) -> State:
        for ref in stmt.reads:
            for name in self.a.classify.property_targets(self.record, ref):
                state = self.enter(name, state, Hop(self.fn, self.record.path, stmt.line), cadence)
        return state

    def enter(
        self,
        name: str,
        state: State,
        hop: Hop,
        cadence: str | None,
        call: CallSite | None = None,
        stmt_calls: Sequence[CallSite] = (),
    ) -> State:
        if self.a.on_stack(name):
            self.cut.add(name)
            self.tainted = self.tainted or name != self.fn
            return state
        record = self.a.program.functions[name]
        if self.a.platforms.foreign(record.module):
            return state  # another platform's code (`catalogs.platforms`): not run here
        env = {}
        if call is not None:
            attrs = self.a.classify.placement.attribute
            env = placements(record, call, stmt_calls, state.env, attrs)
        known = self.a.entry_facts(name, call, state.known)
        summary, cut, tainted = self.a.summary(name, known, env)
        self.cut |= cut
        self.tainted = self.tainted or tainted
        return self.apply(summary, state, hop, cadence)

    def apply(self, summary: Summary, state: State, hop: Hop, cadence: str | None) -> State:
        for pair in summary.pairs.values():
            below = pair.below(hop, cadence)
            self.pairs.setdefault(below.key, below)
        tail = {key: call.below(hop, cadence) for key, call in summary.tail.items()}
        first = {site: (hop, *chain) for site, chain in summary.first.items()}
        for call in state.pending.values():
            for site, chain in first.items():
                pair = Pair(call, site, chain)
                self.pairs.setdefault(pair.key, pair)
        if state.clean:
            for site, chain in first.items():
                self.first.setdefault(site, chain)
        if summary.passes or not first:  # a path with no collective: pending calls still wait
            pending = dict(state.pending)
            merge(pending, tail)
            return state.evolve(pending=pending)
        return state.evolve(clean=False, pending=tail)
