"""Regions before collectives, and the blocking calls in them.

A round's *region* for a collective C is everything that may execute between the round start
(or the collective executed just before C on that path) and C. We walk statements in program
order, path-sensitively (branches fork and join, loops run to a fixpoint, `return`, `break`,
`continue`, `raise`, `try/finally` and `with` route their states), carrying the blocking calls
seen since the last collective. Reaching a collective pairs every pending call with it and
empties the set.

Interprocedurally each function gets a context-free summary, memoised:

- `first`: the collectives it reaches before any other collective (with the chain);
- `pairs`: (blocking call, collective) pairs wholly inside it;
- `tail`: blocking calls that may still be pending when it returns.

A call into a function whose `first` is non-empty is a collective site for its caller (DESIGN
§2.1): pending calls pair with every collective in `first`, and only its `tail` is pending after.
Otherwise the function is transparent and its `tail` joins the caller's pending calls. Recursion
is cut (the recursive call is transparent); a summary computed under a cut to a function still
being summarised is not memoised, so it never stands for the function's whole answer.

The walk is reusable: `BlockingAnalysis.regions(round)` gives every pair with both chains, and the
calls pending at the end of the round (its tail).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rankguard.analysis.collectives import CollectiveSite
from rankguard.analysis.precision import (
    CPU,
    DEVICE,
    assigned_fact,
    cadence_of,
    flags_clear,
    receiver_fact,
    thread_dead,
    timeout_clear,
)
from rankguard.analysis.reach import followed
from rankguard.analysis.rounds import Round
from rankguard.catalogs.caching import caching_catalog
from rankguard.catalogs.catalog import BlockingCatalog, BlockingEntry, CollectiveCatalog
from rankguard.core.chains import Hop
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord, Target
from rankguard.summary.ir import CALL, SUBSCRIPT, CallSite, Segs, Stmt, segs_text

_MAX_LOOP_PASSES = 8
_PROPERTY_DECORATORS = frozenset(("property", "cached_property"))

Key = tuple[str, int, int, str]
Guards = tuple[tuple[str, bool], ...]


@dataclass(frozen=True)
class BlockingCall:
    """One catalog call, with the chain from the function that holds it (innermost last)."""

    callee: str  # the catalog entry's name, e.g. `torch.Tensor.item`
    target: str  # the callee as the model resolved it ("" when it could not)
    kind: str
    reason: str
    confidence: str  # high | medium | low
    note: str  # why that confidence, or what precision check was not conclusive
    text: str
    path: str
    line: int
    col: int
    function: str
    chain: tuple[Hop, ...]
    cadenced: str | None = None

    @property
    def key(self) -> Key:
        return (self.path, self.line, self.col, self.callee)

    def below(self, hop: Hop, cadence: str | None) -> BlockingCall:
        return replace(self, chain=(hop, *self.chain), cadenced=self.cadenced or cadence)

    def to_json(self) -> dict[str, Any]:
        return {
            "callee": self.callee,
            "target": self.target,
            "path": self.path,
            "line": self.line,
            "kind": self.kind,
            "reason": self.reason,
            "text": self.text,
        }


@dataclass(frozen=True)
class Pair:
    """A blocking call and a collective it may delay; `chain` leads to the collective."""

    blocking: BlockingCall
    site: CollectiveSite
    chain: tuple[Hop, ...]
    tail: bool = False  # the previous round's tail: work after its last collective

    @property
    def key(self) -> tuple[Key, CollectiveSite]:
        return (self.blocking.key, self.site)

    def below(self, hop: Hop, cadence: str | None) -> Pair:
        return Pair(self.blocking.below(hop, cadence), self.site, (hop, *self.chain), self.tail)


@dataclass
class Summary:
    first: dict[CollectiveSite, tuple[Hop, ...]]
    pairs: dict[tuple[Key, CollectiveSite], Pair]
    tail: dict[Key, BlockingCall]


@dataclass(frozen=True)
class State:
    """Never mutated: every transition builds a new one, so saved states stay valid."""

    clean: bool  # no collective yet on this path (within the function being walked)
    pending: Mapping[Key, BlockingCall]
    env: Mapping[str, str] = field(default_factory=dict)


def _merge(into: dict[Key, BlockingCall], more: Mapping[Key, BlockingCall]) -> None:
    """Keep the first chain found; an uncadenced path outranks a cadenced one."""
    for key, call in more.items():
        have = into.get(key)
        if have is None or (have.cadenced and not call.cadenced):
            into[key] = call


def join(states: Iterable[State | None]) -> State | None:
    live = [s for s in states if s is not None]
    if not live:
        return None
    if len(live) == 1:
        return live[0]
    pending: dict[Key, BlockingCall] = {}
    for state in live:
        _merge(pending, state.pending)
    env = dict(live[0].env)
    for state in live[1:]:
        env = {k: v for k, v in env.items() if state.env.get(k) == v}
    return State(any(s.clean for s in live), pending, env)


def _same(a: State, b: State) -> bool:
    return a.clean == b.clean and a.pending.keys() == b.pending.keys() and a.env == b.env


def call_text(call: CallSite) -> str:
    parts = [*call.args, *(f"{k}={v}" if k != "**" else f"**{v}" for k, v in call.kwargs)]
    return f"{segs_text(call.target)}({', '.join(parts)})"


@dataclass
class Regions:
    """One round's result: every (blocking call, collective) pair, and the round's tail."""

    round: Round
    pairs: list[Pair]
    tail: list[BlockingCall]


class BlockingAnalysis:
    def __init__(
        self,
        program: Program,
        collectives: CollectiveCatalog,
        catalog: BlockingCatalog,
        cadence_helpers: Sequence[str] = (),
    ) -> None:
        self.program = program
        self.collectives = collectives
        self.catalog = catalog
        self.cadence_helpers = tuple(cadence_helpers)
        self._memo: dict[str, Summary] = {}
        self._stack: list[str] = []
        self._property_names: frozenset[str] | None = None
        self._property_memo: dict[tuple[str, Segs], tuple[str, ...]] = {}

    # -- model lookups -------------------------------------------------------------------------
    def function_cadence(self, name: str) -> str | None:
        """Why everything under `name` runs only now and then: a cache, or a configured helper."""
        import fnmatch

        record = self.program.functions.get(name)
        if record is None:
            return None
        for dec in record.info.decorators:
            if caching_catalog().decorator(dec):
                return f"{dec[-1]} on `{record.info.qualname}`"
        if any(fnmatch.fnmatchcase(name, pat) for pat in self.cadence_helpers):
            return f"cadence helper `{record.info.qualname}` (config `cadence-helpers`)"
        return None

    def _properties(self) -> frozenset[str]:
        if self._property_names is None:
            self._property_names = frozenset(
                record.info.name
                for record in self.program.functions.values()
                if record.info.cls
                and any(d and d[-1] in _PROPERTY_DECORATORS for d in record.info.decorators)
            )
        return self._property_names

    def property_targets(self, record: FunctionRecord, ref: Segs) -> tuple[str, ...]:
        """`self.budget` where `budget` is a property: reading it runs the getter."""
        if len(ref) < 2 or ref[-1] not in self._properties() or CALL in ref or SUBSCRIPT in ref:
            return ()
        key = (record.qualname, ref)
        if key in self._property_memo:
            return self._property_memo[key]
        resolver = self.program.resolver
        found: list[str] = []
        for owner in resolver.evaluate(record, ref[:-1]):  # type: ignore[attr-defined]
            if owner.kind != "instance":
                continue
            for cls in self.program.mro(owner.name):
                method = self.program.classes[cls].methods.get(ref[-1])
                if method is not None:
                    decorators = self.program.functions[method].info.decorators
                    if any(d and d[-1] in _PROPERTY_DECORATORS for d in decorators):
                        found.append(method)
                    break
        result = tuple(sorted(set(found)))
        self._property_memo[key] = result
        return result

    # -- the catalog, with precision -------------------------------------------------------------
    def blocking_call(
        self,
        record: FunctionRecord,
        call: CallSite,
        stmt_calls: Sequence[CallSite],
        targets: Sequence[Target],
        env: Mapping[str, str],
        guards: Guards,
        cadence: str | None,
    ) -> BlockingCall | None:
        entry: BlockingEntry | None = None
        target_name = ""
        confidence, note = "high", ""
        for target in targets:
            config_only = target.name in self.program.functions
            found = self.catalog.match(target.name, config_only=config_only)
            if found is not None:
                entry, target_name = found, target.name
                break
        if entry is None:
            method = call.target[-1] if call.target else ""
            untyped = all(t.name.startswith("typing.") for t in targets)
            if untyped and len(call.target) >= 2 and method not in (CALL, SUBSCRIPT):
                entry = self.catalog.by_method(method)
                confidence = "low"
                receiver = segs_text(call.target[:-1])
                note = f"receiver `{receiver}` not typed: matched by the name `.{method}()`"
        if entry is None:
            return None
        guard = entry.guard
        if guard == "tensor-device":
            fact = receiver_fact(call, stmt_calls, env)
            if fact == CPU:
                return None
            if fact == DEVICE:
                confidence, note = "high", "the tensor was created on a device (literal device=)"
            elif confidence != "low":
                confidence, note = "medium", "the tensor's device is not known here"
        elif guard == "zmq-flags":
            if flags_clear(call):
                return None
            if call.args or call.kwarg("flags") is not None:
                confidence, note = "medium", "flags passed that may include zmq.NOBLOCK"
        elif guard == "timeout":
            if timeout_clear(call, entry):
                return None
        elif guard == "thread-dead" and (thread_dead(call, guards) or timeout_clear(call, entry)):
            return None
        return BlockingCall(
            callee=entry.name,
            target=target_name,
            kind=entry.kind,
            reason=entry.reason,
            confidence=confidence,
            note=note,
            text=call_text(call),
            path=record.path,
            line=call.line,
            col=call.col,
            function=record.qualname,
            chain=(Hop(record.qualname, record.path, call.line),),
            cadenced=cadence,
        )

    # -- summaries -----------------------------------------------------------------------------
    def summary(self, name: str) -> tuple[Summary, set[str]]:
        """`name`'s summary and the functions still on the stack that it was cut short at."""
        memo = self._memo.get(name)
        if memo is not None:
            return memo, set()
        record = self.program.functions[name]
        self._stack.append(name)
        try:
            walk = _Walk(self, record)
            out = walk.block(record.info.body, State(True, {}), (), None)
            end = join([out, *walk.returns])
        finally:
            self._stack.pop()
        result = Summary(walk.first, walk.pairs, dict(end.pending) if end else {})
        cadence = self.function_cadence(name)
        if cadence:
            result = Summary(
                result.first,
                {
                    k: replace(p, blocking=_cadenced(p.blocking, cadence))
                    for k, p in result.pairs.items()
                },
                {k: _cadenced(c, cadence) for k, c in result.tail.items()},
            )
        cut = walk.cut - {name}
        if not cut:
            self._memo[name] = result
        return result, cut

    def on_stack(self, name: str) -> bool:
        return name in self._stack

    # -- rounds --------------------------------------------------------------------------------
    def regions(self, rnd: Round, include_tail: bool = False) -> Regions:
        """Every pair in one round; with `include_tail`, the tail pairs with the next round."""
        record = rnd.function
        loop = rnd.loop
        header = list(loop.calls) if not loop.targets else []
        self._stack.append(record.qualname)
        try:
            walk = _Walk(self, record)
            end = walk.round_body(loop, header, State(True, {}))
            pairs = dict(walk.pairs)
            tail = dict(end.pending) if end else {}
            if include_tail and tail:
                again = _Walk(self, record)
                again.round_body(loop, header, State(False, tail))
                for key, pair in again.pairs.items():
                    if key not in pairs and pair.blocking.key in tail:
                        pairs[key] = replace(pair, tail=True)
        finally:
            self._stack.pop()
        return Regions(rnd, list(pairs.values()), list(tail.values()))


def _cadenced(call: BlockingCall, reason: str) -> BlockingCall:
    return call if call.cadenced else replace(call, cadenced=reason)


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
        if kind == "if":
            inner = cadence or cadence_of(stmt.text, state.env)
            body = self.block(stmt.blocks[0], state, (*guards, (stmt.text, True)), inner)
            orelse = self.block(stmt.blocks[1], state, (*guards, (stmt.text, False)), cadence)
            return join([body, orelse])
        if kind == "loop":
            return self.loop(stmt, state, guards, cadence)
        if kind == "try":
            return self.try_(stmt, state, guards, cadence)
        if kind == "match":
            cases = [self.block(case, state, guards, cadence) for case in stmt.blocks]
            return join([state, *cases])
        return state

    def assign(self, stmt: Stmt, state: State) -> State:
        names = [t[0] for t in stmt.targets if len(t) == 1]
        if not names:
            return state
        env = dict(state.env)
        fact = assigned_fact(stmt, state.env) if len(stmt.targets) == 1 else None
        for name in names:
            if fact is None:
                env.pop(name, None)
            else:
                env[name] = fact
        return State(state.clean, state.pending, env)

    def _forget(self, state: State, targets: Sequence[Segs]) -> State:
        names = [t[0] for t in targets if len(t) == 1 and t[0] in state.env]
        if not names:
            return state
        return State(
            state.clean, state.pending, {k: v for k, v in state.env.items() if k not in names}
        )

    def loop(self, stmt: Stmt, state: State, guards: Guards, cadence: str | None) -> State | None:
        state = self._forget(self.calls(stmt.calls, state, guards, cadence), stmt.targets)
        entry = current = state
        breaks: list[State] = []
        for _ in range(_MAX_LOOP_PASSES):
            self.loops.append(([], []))
            out = self.block(stmt.blocks[0], current, guards, cadence)
            broke, continued = self.loops.pop()
            breaks.extend(broke)
            following = join([entry, out, *continued])
            assert following is not None
            if _same(following, current):
                break
            current = following
        normal = None if stmt.infinite else self.block(stmt.blocks[1], current, guards, cadence)
        return join([normal, *breaks])

    def with_(self, stmt: Stmt, state: State, guards: Guards, cadence: str | None) -> State | None:
        inner = cadence
        for call in stmt.calls:
            for target in followed(self.a.program, self.fn, call):
                helper = self.a.function_cadence(target.name)
                if helper and "cadence helper" in helper:
                    inner = inner or helper
        state = self.calls(stmt.calls, state, guards, cadence)
        state = self.lock_context(stmt, state, cadence)
        state = self._forget(state, stmt.targets)
        return self.block(stmt.blocks[0], state, guards, inner)

    def lock_context(self, stmt: Stmt, state: State, cadence: str | None) -> State:
        """`with self._lock:` acquires the lock (no call appears in the source)."""
        items = [part.strip() for part in stmt.text.split(",")]
        found: dict[Key, BlockingCall] = {}
        self.a.program.resolve_target(self.fn, ("<none>",))
        resolver = self.a.program.resolver
        for ref in stmt.reads:
            if ".".join(ref) not in items or CALL in ref:
                continue
            for value in resolver.evaluate(self.record, ref):  # type: ignore[attr-defined]
                entry = self.a.catalog.context(value.name) if value.kind == "external" else None
                if entry is None:
                    continue
                call = BlockingCall(
                    entry.name, value.name, entry.kind, entry.reason, "high",
                    "`with` acquires it", f"with {'.'.join(ref)}:", self.record.path,
                    stmt.line, 0, self.fn, (Hop(self.fn, self.record.path, stmt.line),), cadence,
                )  # fmt: skip
                found[call.key] = call
        if not found:
            return state
        pending = dict(state.pending)
        _merge(pending, found)
        return State(state.clean, pending, state.env)

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
        self, calls: Sequence[CallSite], state: State, guards: Guards, cadence: str | None
    ) -> State:
        for call in calls:
            if not call.deferred:
                state = self.call(call, calls, state, guards, cadence)
        return state

    def call(
        self,
        call: CallSite,
        stmt_calls: Sequence[CallSite],
        state: State,
        guards: Guards,
        cadence: str | None,
    ) -> State:
        hop = Hop(self.fn, self.record.path, call.line)
        targets = followed(self.a.program, self.fn, call)
        blocking = self.a.blocking_call(
            self.record, call, stmt_calls, targets, state.env, guards, cadence
        )
        if blocking is not None:
            pending = dict(state.pending)
            _merge(pending, {blocking.key: blocking})
            return State(state.clean, pending, state.env)
        outcomes: list[State | None] = []
        for target in targets:
            kind = self.a.collectives.kind(target.name)
            if kind is not None:
                site = CollectiveSite(target.name, kind, self.record.path, call.line, self.fn)
                outcomes.append(self.apply(Summary({site: ()}, {}, {}), state, hop, cadence))
            elif target.name in self.a.program.functions:
                outcomes.append(self.enter(target.name, state, hop, cadence))
        if not outcomes:
            return state
        return join(outcomes) or state

    def properties(self, stmt: Stmt, state: State, cadence: str | None) -> State:
        for ref in stmt.reads:
            for name in self.a.property_targets(self.record, ref):
                state = self.enter(name, state, Hop(self.fn, self.record.path, stmt.line), cadence)
        return state

    def enter(self, name: str, state: State, hop: Hop, cadence: str | None) -> State:
        if self.a.on_stack(name):
            self.cut.add(name)
            return state
        summary, cut = self.a.summary(name)
        self.cut |= cut
        return self.apply(summary, state, hop, cadence)

    def apply(self, summary: Summary, state: State, hop: Hop, cadence: str | None) -> State:
        for pair in summary.pairs.values():
            below = pair.below(hop, cadence)
            self.pairs.setdefault(below.key, below)
        tail = {key: call.below(hop, cadence) for key, call in summary.tail.items()}
        if not summary.first:
            pending = dict(state.pending)
            _merge(pending, tail)
            return State(state.clean, pending, state.env)
        first = {site: (hop, *chain) for site, chain in summary.first.items()}
        for call in state.pending.values():
            for site, chain in first.items():
                pair = Pair(call, site, chain)
                self.pairs.setdefault(pair.key, pair)
        if state.clean:
            for site, chain in first.items():
                self.first.setdefault(site, chain)
        return State(False, tail, state.env)
