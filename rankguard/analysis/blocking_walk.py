"""The walk of one function body for the blocking analysis (`analysis.blocking`): statements in
program order, path-sensitively, carrying the blocking calls pending since the last collective;
calls enter their callees' summaries. One walk per summary, or per round.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rankguard.analysis.blocking_types import (
    Guards,
    Key,
    Pair,
    State,
    Summary,
    forget_taken,
    join,
    keep_pair,
    left_while,
    merge,
    run_past,
    same,
)
from rankguard.analysis.blocking_with import PHASE, at_yield, waiting, with_statement
from rankguard.analysis.collectives import CollectiveSite
from rankguard.analysis.context import enclosed, placements
from rankguard.analysis.doubts import (
    DOUBT,
    SKIPPABLE,
    SKIPPED,
    doubted,
    forget_shaky,
    shaky_facts,
    shaky_of,
    skipped,
)
from rankguard.analysis.doubts import doubt as doubt_of
from rankguard.analysis.drained import (
    after,
    assigned,
    dominated,
    drained_into,
    launched,
    marked,
    marks,
    maybe_drained,
    maybe_ran,
    test_operates,
)
from rankguard.analysis.memo import building, past_return
from rankguard.analysis.narrowing import class_test
from rankguard.analysis.passed import binding_facts, held_in, narrowed
from rankguard.analysis.precision import (
    assigned_fact,
    bound_afresh,
    cadence_of,
    rebound,
    returned,
)
from rankguard.analysis.reach import edge_of, ends_process, followed
from rankguard.analysis.receivers import RECEIVER, Receiver
from rankguard.analysis.results import at_call, none_tests
from rankguard.core.chains import WEAK_EDGES, Hop
from rankguard.model.facts import Cond, assume, forget, pure
from rankguard.model.placement import asserted, of_tree, unpacked
from rankguard.model.records import FunctionRecord
from rankguard.summary.ir import CALL, SUBSCRIPT, CallSite, Segs, Stmt

if TYPE_CHECKING:
    from rankguard.analysis.blocking import BlockingAnalysis

_MAX_LOOP_PASSES = 8


class Walk:
    """One function body, walked once per summary (or per round)."""

    def __init__(self, analysis: BlockingAnalysis, record: FunctionRecord) -> None:
        self.a = analysis
        self.record = record
        self.fn = record.qualname
        self.first: dict[CollectiveSite, tuple[Hop, ...]] = {}
        self.pairs: dict[tuple[Key, CollectiveSite], Pair] = {}
        self.returns: list[State] = []
        self.suspended: list[State] = []  # at a context manager's `yield`, entering it
        self.loops: list[tuple[list[State], list[State]]] = []
        self.cut: set[str] = set()
        self.tainted = False  # cut where the call graph foresees no cycle (`summary`)
        self.writers: set[tuple[str, bool]] = set()  # `Summary.writers`

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
            cadence = cadence or self.a.memo(self.record, stmt, past_return)
        return state

    def stmt(self, stmt: Stmt, state: State, guards: Guards, cadence: str | None) -> State | None:
        kind = stmt.kind
        state = self.properties(stmt, state, cadence)
        if kind == "with":
            return with_statement(self, stmt, state, guards, cadence)
        state = self.calls(run_past(stmt), state, guards, cadence)
        if test_operates(stmt):  # `if node.value @ w is not None:` may queue a kernel
            state = launched(state)
        if stmt.yields:
            resumed = at_yield(self, state)
            if resumed is None:
                return None
            state = resumed
        if kind == "assign":
            return self.assign(stmt, state)
        if kind == "return":
            self.returns.append(state)
            return None
        if kind == "raise" or ends_process(self.a.program, self.fn, stmt):
            return None
        if kind in ("break", "continue"):
            if self.loops:
                self.loops[-1][0 if kind == "break" else 1].append(state)
            return None
        if kind in ("if", "loop") or (kind == "expr" and stmt.cond):  # an `assert` tests too
            state = self.truth_test(stmt, state, cadence)
        if kind == "if":
            inner = (
                cadence
                or cadence_of(stmt.text, state.env)
                or self.a.memo(self.record, stmt, building)
            )
            body = self.branch(stmt, 0, state, guards, inner)
            orelse = self.branch(stmt, 1, state, guards, cadence)
            return join([body, orelse])
        if kind == "expr" and stmt.cond:  # assert: a path where it fails raises
            test = self.a.predicates.expanded(self.record, stmt).cond
            if self.a.infeasible(test, True, state.known):
                return None
            return self.a.past_test(self.fn, run_past(stmt), state, self.assume(state, test, True))
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
        """One side of an `if`, unless the known facts contradict it (its test with helper
        tests written in, `analysis.predicates`)."""
        positive = side == 0
        tested = self.a.predicates.expanded(self.record, stmt)
        if self.a.infeasible(tested.cond, positive, state.known):
            return None
        inner = self.a.past_test(
            self.fn, stmt.calls, state, self.assume(state, tested.cond, positive)
        )
        inner = inner.evolve(taken=(*inner.taken, (stmt.cond, positive)))
        doubt = doubt_of(tested, positive, state.known, self.record)
        if doubt:
            inner = inner.evolve(known={**inner.known, DOUBT: doubt})
        elif SKIPPABLE in state.known:
            context, record = self.a.context, self.record
            restated = lambda: context.restated_skippable(record, state.known)  # noqa: E731
            skip = skipped(tested, positive, state.known, restated, record)
            if skip:
                inner = inner.evolve(known={**inner.known, SKIPPED: skip})
        return self.block(stmt.blocks[side], inner, (*guards, (stmt.cond, positive)), cadence)

    def truth_test(self, stmt: Stmt, state: State, cadence: str | None) -> State:
        """`if done:` / `while not flag:` on a device tensor reads its value on the host."""
        if waiting(state):
            return state
        found = self.a.classify.truth_test(self.record, stmt, state.env, cadence)
        if found is None:
            return state
        pending = dict(state.pending)
        merge(pending, doubted({found.key: found}, state.known))
        return state.evolve(pending=pending)

    def assume(self, state: State, cond: Cond, positive: bool) -> State:
        env = asserted(cond, positive, state.env, state.known, self.a.classify.placement.attribute)
        state = state if env is state.env else state.evolve(env=env)
        # What is known already stays as it is: `in_capture` known False and assumed falsy on
        # one side would read as a disagreement where the sides join.
        known = state.known
        facts = {
            c: v
            for c, v in assume(cond, positive).items()
            if (pure(c) or class_test(c)) and c not in known
        }
        if not facts:
            return state
        return state.evolve(known={**state.known, **facts})

    def assign(self, stmt: Stmt, state: State) -> State:
        # Where the value lives (read before the targets' facts are forgotten: the value is
        # computed first), for the local it binds and for `analysis.drained`.
        single = len(stmt.targets) == 1
        attrs = self.a.classify.placement.attribute
        needed = single or marked(state.known) or stmt.kind == "assign"
        place = of_tree(stmt.tree, state.env, state.known, attrs) if needed else None
        state = assigned(stmt.tree, place, stmt.targets, self._forget_facts(state, stmt.targets))
        names = [".".join(t) for t in stmt.targets if CALL not in t and SUBSCRIPT not in t]
        if not names:
            return state
        env = dict(state.env)
        fact = assigned_fact(stmt, place) if single else None
        facts = dict.fromkeys(names, fact)
        whole = len(names) == len(stmt.targets)
        if stmt.kind == "loop" and not single and whole:
            # `for i, x in enumerate(xs)`, `for a, b in zip(xs, ys)`: an element of each
            paired = unpacked(stmt.tree, len(names), state.env, state.known, attrs)
            facts = dict(zip(names, paired, strict=True)) if paired else facts
        elif stmt.kind == "assign" and whole and place is None:
            # `order, rows = permute(ids)`: what the callee returns on every path
            paired = returned(self.a.program, self.fn, self.a.classify.returns, stmt, len(names))
            facts = dict(zip(names, paired, strict=True)) if paired else facts
        elif stmt.kind == "assign" and not single and whole and place is not None:
            # `values, counts = torch.unique(x, return_counts=True)`: parts live with the whole
            facts = dict.fromkeys(names, place)
        for name, fact in facts.items():
            rebound(env, name)
            if fact is not None:
                env[name] = fact
        return self.certain_result(stmt, state.evolve(env=env))

    def certain_result(self, stmt: Stmt, state: State) -> State:
        """`reason = refuse(s)`: where the facts make the callee's result certain
        (`analysis.results`), `reason is not None` holds; where only shaky facts do, it holds
        shakily, so the path past `if reason is not None: return` is in doubt."""
        if len(stmt.targets) != 1 or len(stmt.targets[0]) != 1 or stmt.tree[:1] != ("call",):
            return state
        call = next((c for c in reversed(stmt.calls) if c.target == stmt.tree[1]), None)
        if call is None:
            return state
        functions = self.a.program.functions
        names = {t.name for t in followed(self.a.program, self.fn, call) if t.name in functions}
        name = min(names) if len(names) == 1 else None
        if name is None or not self.a.results.of(name):
            return state
        conds = at_call(functions[name], call, self.a.results.of(name))
        facts = none_tests(stmt.targets[0][0])
        if any(self.a.infeasible(c, False, state.known) for c in conds):
            return state.evolve(known={**state.known, **facts})
        shaky = {**state.known, **shaky_of(state.known)}
        if any(self.a.infeasible(c, False, shaky) for c in conds):
            return state.evolve(known={**state.known, **shaky_facts(facts)})
        return state

    def _forget_facts(self, state: State, targets: Sequence[Segs]) -> State:
        known = state.known
        for target in targets:
            known = self.a.forget_stored(forget_shaky(forget(known, target), target), target)
        state = forget_taken(state, targets)
        return state if known is state.known else state.evolve(known=known)

    def forget(self, state: State, targets: Sequence[Segs]) -> State:
        state = self._forget_facts(state, targets)
        env = dict(state.env)
        for target in targets:
            if len(target) == 1:
                rebound(env, target[0])
        return state if len(env) == len(state.env) else state.evolve(env=env)

    def loop(self, stmt: Stmt, state: State, guards: Guards, cadence: str | None) -> State | None:
        # A `for` header advances what it iterates (a generator's body runs here); every pass
        # binds its target afresh to an element, which lives where the iterable does (`for row
        # in rows: row = row.item()` reads a row each time, not the last number).
        state = self.assign(stmt, self.calls(stmt.calls, state, guards, cadence, advance=True))
        entry = current = state
        names = [t[0] for t in stmt.targets if len(t) == 1]
        element = {name: state.env.get(name) for name in names}
        breaks: list[State] = []
        for _ in range(_MAX_LOOP_PASSES):
            self.loops.append(([], []))
            out = self.block(stmt.blocks[0], current, guards, cadence)
            broke, continued = self.loops.pop()
            breaks.extend(broke)
            following = join([entry, out, *continued])
            assert following is not None
            if element:
                following = following.evolve(env=bound_afresh(following.env, element))
            if same(following, current):
                break
            current = following
        current = left_while(current, stmt.cond)
        normal = None if stmt.infinite else self.block(stmt.blocks[1], current, guards, cadence)
        return join([normal, *breaks])

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
        phase: str | None = None,
    ) -> State:
        if waiting(state):
            return state  # leaving a context manager: what runs before its `yield` ran on entry
        for call in calls:
            # A call on a side of `x if c else y` (or past `a and`) the facts exclude: not run.
            excluded = any(self.a.infeasible(c, side, state.known) for c, side in call.under)
            if not call.deferred and not excluded:
                before = state
                state = self.call(call, calls, state, guards, cadence, advance, phase)
                state = self.a.past_call(self.fn, call, state)  # what it may have written
                changed = state.ran is not before.ran or marks(state) != marks(before)
                if changed and self.may_skip(call, state):
                    # `a and f()`, `[f(x) for x in xs]`: what it ran, or drained, is not sure
                    state = maybe_ran(before, state.evolve(ran=before.ran))
        return state

    def may_skip(self, call: CallSite, state: State) -> bool:
        """The call may not run on this path: in a comprehension, or past a condition the
        facts do not settle (`a and f()`), so what it runs is not sure."""
        return call.bound or not all(
            self.a.infeasible(c, not side, state.known) for c, side in call.under
        )

    def call(
        self,
        call: CallSite,
        stmt_calls: Sequence[CallSite],
        state: State,
        guards: Guards,
        cadence: str | None,
        advance: bool = False,
        phase: str | None = None,
    ) -> State:
        targets = self.a.narrowing.narrow(
            self.fn, call, followed(self.a.program, self.fn, call), state.known
        )
        if len(call.target) == 1:  # a bare name: maybe a parameter bound on this path
            targets = narrowed(call, targets, held_in(state.known))
        receiver = self.a.receivers.of_call(self.record, call, state.known)
        if receiver:
            targets = self.a.receivers.narrow(targets, call.target[-1], receiver)
        blocking = self.a.classify.blocking_call(
            self.record, call, stmt_calls, targets, state.env, state.taken, cadence, state.known
        )
        if blocking is not None:
            if dominated(blocking, call, state.known):
                return state  # nothing queued since the last sync: it does not wait
            blocking = maybe_drained(blocking, state.known)
            pending = dict(state.pending)
            merge(pending, doubted({blocking.key: blocking}, state.known))
            return after(blocking, call, True, state.evolve(pending=pending))
        # The callee starts where the caller stands now; past the call, what it may launch
        # has undone the drain.
        drained = drained_into(call, state.known)  # what the callee starts with
        quiet = not marked(state.known) or self.a.launches.quiet_call(call, targets)
        state = after(None, call, quiet, state)
        outcomes: list[State | None] = []
        for target in targets:
            hop = Hop(self.fn, self.record.path, call.line, edge_of(target))
            kind = self.a.collectives.kind(target.name)
            if kind is not None:
                site = CollectiveSite(target.name, kind, self.record.path, call.line, self.fn)
                ran = Summary({site: ()}, {}, {}, sure=frozenset((site,)))
                outcomes.append(self.apply(ran, state, hop, cadence))
            elif target.name in self.a.program.functions:
                if not advance and target.via != "advanced" and self.a.suspended(target.name):
                    continue  # a generator: its body runs where it is advanced
                bound = self.a.receivers.bound(target.name, receiver)
                part = phase if phase and self.a.context_manager(target.name) else None
                closure = self.a.passed.closure(target)  # a decorator's wrapper: what it made
                args = (state, hop, cadence, self.a.context.as_called(call, targets, target))
                entered = self.enter(target.name, *args, stmt_calls, bound, part, drained, closure)
                if self.a.suspended(target.name):  # advanced: it may stop at any `yield`
                    entered = entered.evolve(ran=state.ran)
                outcomes.append(entered)
        if not outcomes:
            return state
        joined = join(outcomes) or state
        if any(edge_of(t) in WEAK_EDGES for t in targets):  # a guess: not sure
            return joined.evolve(ran=state.ran)
        return joined

    def properties(self, stmt: Stmt, state: State, cadence: str | None) -> State:
        if waiting(state):
            return state
        for ref in stmt.reads:
            for name in self.a.classify.property_targets(self.record, ref):
                if not self.a.launches.quiet_function(name):
                    state = launched(state)  # what it queues undoes a drain before it
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
        receiver: Receiver | None = None,
        phase: str | None = None,
        drained: Mapping[Cond, Any] | None = None,
        closure: Mapping[str, frozenset[str]] | None = None,
    ) -> State:
        if self.a.on_stack(name):
            self.cut.add(name)
            self.tainted = self.tainted or (name != self.fn and self.a.cut_unforeseen(name))
            return state
        record = self.a.program.functions[name]
        if self.a.platforms.foreign(record.module):
            return state  # another platform's code (`catalogs.platforms`): not run here
        env = enclosed(self.record, record, state.env)
        if call is not None:
            attrs = self.a.classify.placement.attribute
            passed = self.a.context.call_site(record, call)[0]
            env |= placements(passed, call, stmt_calls, state.env, attrs)
        known = self.a.entry_facts(name, call, state.known)
        if drained:
            known.update(drained)
        if call is not None:
            constructed = self.a.instances.entry_facts(
                self.record, record, call, stmt_calls, state.known
            )
            known.update(constructed)
        if call is not None and self.a.passed.parameters_called(name):
            held = held_in(state.known)
            known.update(binding_facts(self.a.passed.binding(self.record, call, name, held)))
        if closure:  # a decorator's wrapper entered as the function it decorates
            known.update(binding_facts(closure))
        if receiver:
            known[RECEIVER] = receiver  # `self` in there is exactly this (`analysis.receivers`)
        if phase:
            known[PHASE] = phase
        if name in self.a.watched:
            self.writers.add((name, DOUBT in known))
        summary, cut, tainted = self.a.summary(name, known, env)
        self.writers |= summary.writers
        self.cut |= cut
        self.tainted = self.tainted or tainted
        return self.apply(summary, state, hop, cadence)

    def apply(self, summary: Summary, state: State, hop: Hop, cadence: str | None) -> State:
        pairs, tail, first = summary.below(hop, cadence)
        for pair in pairs:
            keep_pair(self.pairs, pair)
        for call in state.pending.values():
            for site, chain in first.items():
                pair = Pair(call, site, chain)
                keep_pair(self.pairs, pair)
        if state.clean:
            for site, chain in first.items():
                self.first.setdefault(site, chain)
        ran = state.ran if summary.sure <= state.ran else state.ran | summary.sure
        if summary.passes or not first:  # a path with no collective: pending calls still wait
            pending = dict(state.pending)
            merge(pending, tail)
            return state.evolve(pending=pending, ran=ran)
        return state.evolve(clean=False, pending=tail, ran=ran)
