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
- `passes`: some path returns without running a collective;
- `sure`: the collective calls every path that returns runs (`Regions.every` is the round's:
  the collectives every iteration runs, which surely follow any call in it).

A call into a function whose `first` is non-empty is a collective site for its caller (DESIGN
§2.1): pending calls pair with every collective in `first`, and only its `tail` is pending
after, unless it `passes`: then, as on its collective-free path, the caller's pending calls
still wait for the next collective too. (A path taken only by a group of one rank, `if
world_size == 1: return`, is not walked: `analysis.single_rank`.) Otherwise the function is
transparent and its `tail` joins the caller's pending calls. Recursion
is cut (the recursive call is transparent); a summary computed under a cut to a function still
being summarised is not memoised, so it never stands for the function's whole answer. It is
kept beside what walking it again would depend on (`_Cut`), and reused only where that is the
same: a cycle entered through many call sites is walked once per way in, not once per path
(sglang's hybrid attention backends delegate to each other: 2,058 summaries of one function
per run before), and every answer is the one walking it again would give. Each entry into a
cycle from outside it (a round on a cycle is one) walks the cycle afresh: what is memoised of
the cycle's functions inside serves that entry only (`_Cycle`), so the entry's answer does not
depend on what ran before, and it is memoised and kept across runs like any other. The
recursion cut is by function, whatever the facts: a cycle re-entered under other facts
(`a(quiet=True)` -> ... -> `a()`) does not see what the second `a` runs.

The walk is reusable: `BlockingAnalysis.regions(round)` gives every pair with both chains, and the
calls pending at the end of the round (its tail).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from rankguard.adapters import store
from rankguard.adapters.keyed import KeyedStore
from rankguard.analysis.blocking_calls import CallClassifier
from rankguard.analysis.blocking_keep import KeptSummaries
from rankguard.analysis.blocking_types import (
    BlockingCall,
    Pair,
    Regions,
    State,
    Summary,
    cadenced,
    join,
)
from rankguard.analysis.blocking_walk import Walk
from rankguard.analysis.clobbers import Clobbers
from rankguard.analysis.context import RoundContext
from rankguard.analysis.critical_sections import CriticalSections
from rankguard.analysis.hardware import platform_facts
from rankguard.analysis.instances import Instances
from rankguard.analysis.launches import Launches
from rankguard.analysis.memo import MemoShape
from rankguard.analysis.narrowing import Narrowing
from rankguard.analysis.overrides import configured
from rankguard.analysis.passed import PassedCallables
from rankguard.analysis.precision import loop_entry
from rankguard.analysis.reach import FOLLOWED, followed
from rankguard.analysis.receivers import Receivers
from rankguard.analysis.results import ResultConditions
from rankguard.analysis.rounds import Round
from rankguard.analysis.single_rank import peer_facts
from rankguard.analysis.warm import StartUp
from rankguard.catalogs.catalog import BlockingCatalog, CollectiveCatalog
from rankguard.catalogs.platforms import Platforms, platform_catalog
from rankguard.catalogs.rank_sources import rank_source_catalog
from rankguard.model.facts import Cond, contradicts
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord
from rankguard.summary.ir import CallSite, Segs, Stmt

_CONTEXT_MANAGERS = frozenset(("contextmanager", "asynccontextmanager"))

__all__ = ["BlockingAnalysis", "BlockingCall", "Pair", "Regions"]
MemoKey = tuple[str, frozenset[tuple[Cond, Any]], frozenset[tuple[str, str]]]
_T = TypeVar("_T")


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
        rounds: Sequence[Round] = (),
    ) -> None:
        """With a `store`, summaries are kept across runs (`analysis.blocking_keep`); `salt`
        must then name everything else they depend on: the configuration and this code.
        `rounds` are those `regions` will be asked for: what may break their shaky facts is
        watched from the start, so that every summary says whether it runs it."""
        self.program = program
        self.platforms = platforms or platform_catalog()
        self._memo_cadence: dict[tuple[int, Any], str | None] = {}
        self.launches = Launches(program)
        self.collectives = collectives
        self.catalog = catalog
        self.classify = CallClassifier(program, catalog, cadence_helpers)
        self.context = RoundContext(program, self.platforms)
        self.instances = Instances(program, self.context.stability)
        self.receivers = Receivers(program, self.instances.built_plainly)
        self.narrowing = Narrowing(program, self.context.stability)
        self.clobbers = Clobbers(program, self.context.stability)
        self.ranks = rank_source_catalog()
        self.passed = PassedCallables(program)
        self.results = ResultConditions(program.functions)
        self.predicates = self.context.predicates
        self.writers = {r.function.qualname: self.context.round_writers(r.function) for r in rounds}
        self._callers = _callers(program, frozenset().union(*filter(None, self.writers.values())))
        # What summaries say they run (`Summary.writers`): the writers and what calls them.
        self.watched = frozenset(self._callers).union(
            *({caller for caller, _ in edges} for edges in self._callers.values())
        )
        self._memo: dict[MemoKey, tuple[Summary, bool]] = {}
        # One object per distinct set in memo keys and summaries (most are empty or repeat;
        # a frozenset costs 216 bytes; the rule left 278 k of them on sglang).
        self._sets: dict[frozenset[Any], frozenset[Any]] = {}
        self._stack: list[str] = []
        self._on_stack: set[str] = set()
        self._cycles: dict[str, _Cycle] = {}  # cycles entered from outside, still being walked
        # Summaries cut short, and what the summaries being computed have depended on so far.
        self._cuts: dict[MemoKey, list[_Cut]] = {}
        self._traces: list[_Trace] = []
        self.start_up = StartUp(program, self.context.stability, self.memo)
        self.sections = CriticalSections(program)
        self._store = store or KeyedStore(None)  # None: keeps nothing across runs
        self._salt = salt
        self.kept: KeptSummaries | None = None  # made on first use (`_kept`)

    # -- summaries -----------------------------------------------------------------------------
    def summary(
        self, name: str, known: Mapping[Cond, Any], env: Mapping[str, str]
    ) -> tuple[Summary, set[str], bool]:
        """`name`'s summary under `known` and `env` (facts on entry), the functions still on
        the stack that it was cut short at, and whether it was cut at a function the call
        graph does not put on a cycle (then its answer may depend on what ran before, and it
        is never kept across runs: `analysis.blocking_keep`).

        A cycle of calls is walked afresh each time it is entered from outside: what the walk
        memoises of the cycle's functions inside serves that entry only (`_Cycle`). So the
        answer at the entry does not depend on what ran before, and it is memoised and kept
        like any other (on sglang a settings getter on a cycle of default resolvers made
        every summary that read a setting one that was never kept)."""
        key = (name, self._shared(known.items()), self._shared(env.items()))
        kept = self._kept()
        cycle_id = kept.cycle(name)
        inside = self._cycles.get(cycle_id) if cycle_id is not None else None
        memo = inside.memo if inside is not None else self._memo
        found = memo.get(key)
        if found is not None:
            return found[0], set(), found[1]
        if inside is None:
            loaded = kept.load(name, known, env)
            if loaded is not None:
                self._memo[key] = (loaded, False)
                return loaded, set(), False
        again = self._cut_again(key, inside)
        if again is not None:
            return again.summary, set(again.cut), again.tainted
        store.COUNTS[f"blocking summary computed: {name}"] += 1
        record = self.program.functions[name]
        trace = _Trace()
        self._traces.append(trace)
        opened = self._enter(name)
        try:
            walk = Walk(self, record)
            out = walk.block(record.info.body, State(True, {}, env, known), (), None)
            end = join([out, *walk.returns, *walk.suspended])
        finally:
            self._leave(opened)
            self._traces.pop()
        passes = end is not None and end.clean
        pending = dict(end.pending) if end else {}
        writers = self._shared(walk.writers)
        sure = self._shared(end.ran) if end else frozenset()
        result = Summary(walk.first, walk.pairs, pending, passes, writers, sure)
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
                writers,
                sure,
            )
        cut = walk.cut - {name}
        tainted = walk.tainted
        if not cut:
            memo[key] = (result, tainted)
            if not tainted and inside is None:
                kept.save(name, known, env, result)
        else:
            made = _Cut(
                result, frozenset(cut), tainted, frozenset(trace.asked), frozenset(trace.unkept)
            )
            (inside.cuts if inside is not None else self._cuts).setdefault(key, []).append(made)
            self._depend(key, made)
        return result, cut, tainted

    def _kept(self) -> KeptSummaries:
        if self.kept is None:
            self.kept = KeptSummaries(
                self.program,
                self.classify,
                self.context,
                self.receivers,
                self.passed,
                self._store,
                f"{self._salt} watched {sorted(self.watched)}",
            )
        return self.kept

    def _enter(self, name: str) -> str | None:
        """`name` onto the stack; entering its cycle of calls from outside opens the cycle's
        scope (`_Cycle`), whose id is returned for `_leave` to close."""
        self._stack.append(name)
        self._on_stack.add(name)
        cycle_id = self._kept().cycle(name)
        if cycle_id is None or cycle_id in self._cycles:
            return None
        self._cycles[cycle_id] = _Cycle()
        return cycle_id

    def _leave(self, opened: str | None) -> None:
        self._on_stack.discard(self._stack.pop())
        if opened is not None:
            del self._cycles[opened]

    def _cut_again(self, key: MemoKey, inside: _Cycle | None) -> _Cut | None:
        """A summary cut short earlier that walking `key` again now would give: the functions
        its walk asked about are on the stack exactly where it was cut (the rest of the stack
        was never asked about), and none of the summaries it computed under a cut is memoised
        since (then it would find that one, not walk it again). Memoised ones it found are
        found again, and kept ones were memoised when kept."""
        cuts, memo = (inside.cuts, inside.memo) if inside is not None else (self._cuts, self._memo)
        for made in cuts.get(key, ()):
            on_stack = made.asked & self._on_stack
            if on_stack == made.cut and not any(k in memo for k in made.unkept):
                store.COUNTS["blocking summaries cut alike reused"] += 1
                self._depend(key, made)
                return made
        return None

    def _depend(self, key: MemoKey, made: _Cut) -> None:
        """The summary being computed depends on what `made` depended on, and on `key` not
        being memoised."""
        if self._traces:
            trace = self._traces[-1]
            trace.asked |= made.asked
            trace.unkept |= made.unkept
            trace.unkept.add(key)

    def _shared(self, items: Iterable[_T]) -> frozenset[_T]:
        made = frozenset(items)
        return self._sets.setdefault(made, made)

    def forget_summaries(self) -> None:
        """Drops the memoised summaries, once every round that needs them is walked: the
        other analyses ask only for facts (`entry_facts`, `infeasible`), and on sglang the
        summaries held 429 MiB through the divergence analysis after them, the run's peak.
        What only the walk asks goes too: the keys of kept summaries, and what each call may
        write (`Clobbers` starts afresh, should a walk come again): 130 MiB more on sglang
        (session 18), held to the end of the run before."""
        self._memo.clear()
        self._cuts.clear()
        self._sets.clear()
        self._memo_cadence.clear()
        self.kept = None  # made again should a walk come again
        self.clobbers = Clobbers(self.program, self.context.stability)

    def entry_facts(
        self, name: str, call: CallSite | None, known: Mapping[Cond, Any]
    ) -> dict[Cond, Any]:
        return self.context.entry_facts(self.program.functions[name], call, known)

    def past_call(self, function: str, call: CallSite, state: State) -> State:
        """`state` without the facts the call may have made untrue (`analysis.clobbers`)."""
        targets = followed(self.program, function, call)
        known = self.clobbers.forget_past(function, call, targets, state.known)
        if state.taken:  # `while not self.work.is_completed():` says nothing once it rebinds it
            tests = dict.fromkeys((cond for cond, _ in state.taken), True)
            kept = self.clobbers.forget_past(function, call, targets, tests)
            if len(kept) < len(tests):
                state = state.evolve(taken=tuple(t for t in state.taken if t[0] in kept))
        return state if known is state.known else state.evolve(known=known)

    def past_test(
        self, function: str, calls: Sequence[CallSite], before: State, state: State
    ) -> State:
        """`if batch.mode.is_idle() and relabel(batch):` gives `batch.mode` IDLE before the
        call runs, and the call may end it. The test's `calls` ran past `before`'s facts
        already; of the facts the test gave (`state` past `before`), those a call behind an
        operand (`a and f()`, `a or f()`, `f() if a else y`) may write end. Those of an
        operand after it go too (more is forgotten, never less); a call that runs first
        (`f() and a`) keeps what follows."""
        later = [c for c in calls if c.under and not c.deferred]
        given = {c: v for c, v in state.known.items() if c not in before.known} if later else {}
        kept = given
        for call in later if given else ():
            kept = self.past_call(function, call, state.evolve(known=kept)).known
        if len(kept) == len(given):
            return state
        gone = given.keys() - kept.keys()
        return state.evolve(known={c: v for c, v in state.known.items() if c not in gone})

    def forget_stored(self, known: Mapping[Cond, Any], target: Segs) -> Mapping[Cond, Any]:
        return self.clobbers.forget_stored(known, target)

    def suspended(self, name: str) -> bool:
        """Calling `name` runs none of its body: a generator (not a context manager's)."""
        info = self.program.functions[name].info
        return info.is_generator and not any(
            d and d[-1] in _CONTEXT_MANAGERS for d in info.decorators
        )

    def context_manager(self, name: str) -> bool:
        """`name` is a generator made a context manager (`@contextmanager`): a `with` runs it
        up to its `yield` on entry, and the rest where the body is left."""
        info = self.program.functions[name].info
        return info.is_generator and any(d and d[-1] in _CONTEXT_MANAGERS for d in info.decorators)

    def infeasible(self, cond: Cond, positive: bool, known: Mapping[Cond, Any]) -> bool:
        """Taking this side of `cond` contradicts the facts, or needs a group of one rank
        (`analysis.single_rank`: nobody can wait for a straggler there), or runs only on a
        platform the run does not analyse (`analysis.hardware`)."""
        ambient = {**platform_facts(cond, self.platforms), **peer_facts(cond, self.ranks)}
        # What is known wins: the normal loop's pp_size <= 1.
        return contradicts(cond, positive, {**ambient, **known} if ambient else known)

    def memo(self, record: FunctionRecord, stmt: Stmt, shape: MemoShape) -> str | None:
        """`shape`'s memo cadence for `stmt` (`analysis.memo`), found once per statement."""
        if stmt.kind != "if":
            return None  # both shapes are `if` statements: no entry for every other one
        key = (id(stmt), shape)
        if key not in self._memo_cadence:
            self._memo_cadence[key] = shape(record, stmt, self.context.stability)
        return self._memo_cadence[key]

    def on_stack(self, name: str) -> bool:
        """Whether a call of `name` is cut here; the summary being computed depends on it."""
        if self._traces:
            self._traces[-1].asked.add(name)
        return name in self._on_stack

    def cut_unforeseen(self, name: str) -> bool:
        """A cut at `name` that the call graph's cycles do not foresee (a call the graph does
        not know): what ran before decides the answer."""
        return self._kept().cycle(name) is None

    # -- rounds --------------------------------------------------------------------------------
    def regions(self, rnd: Round, include_tail: bool = False) -> Regions:
        """Every pair in one round; with `include_tail`, the tail pairs with the next round."""
        record = rnd.function
        loop = rnd.loop
        header = list(loop.calls) if not loop.targets else []
        opened = self._enter(record.qualname)  # a round on a cycle is that cycle's entry
        known = self.context.round_facts(record)
        # What the locals made before the loop hold at its head, on every pass.
        entry = loop_entry(self.program, record.qualname, loop, self.classify.placement.attribute)
        try:
            walk = Walk(self, record)
            end = walk.round_body(loop, header, State(True, {}, entry, known))
            if rnd.whole:  # the body is the round: a `return` ends it, the caller runs the next
                end = join([end, *walk.returns])
            pairs = dict(walk.pairs)
            tail = dict(end.pending) if end else {}
            every = end.ran if end else frozenset()
            writers = set(walk.writers)
            if include_tail and tail:
                again = Walk(self, record)
                again.round_body(loop, header, State(False, tail, entry, known))
                writers |= again.writers
                for key, pair in again.pairs.items():
                    if key not in pairs and pair.blocking.key in tail:
                        pairs[key] = replace(pair, tail=True)
        finally:
            self._leave(opened)
        if self.inductive(record.qualname, writers):
            pairs = {k: p for k, p in pairs.items() if not p.blocking.doubt}
            tail = {k: c for k, c in tail.items() if not c.doubt}

        def judged(call: BlockingCall) -> BlockingCall:
            return configured(self.start_up.set_up(rnd, self.start_up.filled(rnd, call)))

        short = self.sections.short  # a lock no holder keeps across a wait
        return Regions(
            rnd,
            [
                _with_blocking(p, judged(p.blocking))
                for p in pairs.values()
                if not short(p.blocking)
            ],
            [judged(c) for c in tail.values() if not short(c)],
            every,
        )

    def inductive(self, round_name: str, entered: set[tuple[str, bool]]) -> bool:
        """The round's shaky facts hold all round: every function that may reassign what they
        read runs only where the round runs it, and there only on paths that need a fact
        broken already (in doubt), so none runs. Each way in to a writer must be accounted
        for: a call the walk follows (`reach.FOLLOWED`) from code the round runs, or from the
        object's construction (done before the round is chosen). A callback or thread target,
        a caller the round never runs, a call from the round function itself (maybe before its
        loop, which the walk does not see) keep the doubt. Known only for the rounds the
        analysis was made for."""
        writers = self.writers.get(round_name)
        if not writers or round_name in writers:
            return False
        construction = self.context.stability.construction()
        for writer in writers:
            if (writer, False) in entered or (writer, True) not in entered:
                return False
            for caller, kind in self._callers[writer]:
                if kind not in FOLLOWED or caller == round_name:
                    return False
                ran = (caller, False) in entered or (caller, True) in entered
                if not ran and caller not in construction:
                    return False
        return True


@dataclass(slots=True)
class _Trace:
    """What a summary being computed depends on beyond its key (`BlockingAnalysis._cut_again`):
    the functions its walk asked whether they are on the stack, and the summaries it computed
    under a cut (not memoised); those of the cut summaries it found are added in."""

    asked: set[str] = field(default_factory=set)
    unkept: set[MemoKey] = field(default_factory=set)


@dataclass(slots=True)
class _Cycle:
    """What one entry into a cycle of calls memoises of the cycle's own functions: it serves
    that entry only, so the entry's answer is the same whatever ran before (`summary`)."""

    memo: dict[MemoKey, tuple[Summary, bool]] = field(default_factory=dict)
    cuts: dict[MemoKey, list[_Cut]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Cut:
    """A summary computed under a cut, with what it depended on (`_Trace`)."""

    summary: Summary
    cut: frozenset[str]
    tainted: bool
    asked: frozenset[str]
    unkept: frozenset[MemoKey]


def _with_blocking(pair: Pair, blocking: BlockingCall) -> Pair:
    return pair if blocking is pair.blocking else replace(pair, blocking=blocking)


def _callers(program: Program, writers: frozenset[str]) -> dict[str, set[tuple[str, str]]]:
    """writer -> (caller, edge kind) of every resolved edge into it."""
    found: dict[str, set[tuple[str, str]]] = {w: set() for w in writers}
    for caller, resolved in program.calls.items():
        for call in resolved:
            for target in call.targets:
                if target.name in found:
                    found[target.name].add((caller, target.kind))
    return found
