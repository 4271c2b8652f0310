"""What a callee inherits from the guard its caller passed, on an attribute some code reassigns.

A dispatcher tests its argument and calls the handler for what it found:
`if batch.mode.is_idle(): return self._execute_idle(batch)`. On entry to `_execute_idle`,
`batch.mode` is IDLE, and a backend it hands the batch to takes no extend branch. The facts a
call site's arguments carry (`context.RoundContext.entry_facts`) pass only on attributes nothing
reassigns after construction; `mode` is relabelled elsewhere in the program (a batch mixed of
extend and decode becomes EXTEND), so the guard was lost at the call.

Here the caller's exact facts on a plain argument's attributes (`batch.mode` is `Mode.IDLE`, `x.n`
is 0: a member or a literal, what a guard's `==` / `is` leaves) hold for the parameter on entry
even so, each marked as *entered*: it was true when the call was made, and stays true until
something may make it false. The walk (`analysis.blocking_walk`) forgets an entered fact

- where the function assigns the parameter, or any attribute of that name on whatever object
  (`other = batch; other.mode = ...`: the name says it may be the same one), and
- past every call (a property read too, and a call in a lambda, which may run right there)
  that may run, at any depth, a function that assigns such an attribute after construction
  (`Stability.followed_writers`; code only another platform runs is not run here), and
- at a `yield`: whatever the generator's caller does meanwhile may assign it.

A generator is entered with none: its body runs a step at a time, between its caller's work.

A callee entered with the fact hands it on with the argument (`self.inner.init(batch)`) under
the same terms, and a path into the callee under no such guard brings none. Not followed (as
elsewhere): another thread or a callback the call registers writing the attribute meanwhile,
and a function reading a property whose getter writes it (the getter is entered, and forgets,
only where the walk reads the property itself).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any

from rankguard.analysis.aliases import ALIAS, ENTERED, MARKED, bound, watched
from rankguard.analysis.blocking_types import State
from rankguard.analysis.call_sites import literal_truth
from rankguard.analysis.context import RoundContext
from rankguard.analysis.stability import ANY_NAME, COMPUTED_NAME, statement_writes
from rankguard.model.facts import Cond, Symbol, member, refs
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord
from rankguard.summary.ir import CALL, SUBSCRIPT, CallSite, Segs, Stmt

_ANY_ATTRIBUTE = frozenset((ANY_NAME, COMPUTED_NAME))


class EnteredFacts:
    """Per program: the facts a call hands on unsettled attributes, and which functions may
    make them false (memoised per attribute name)."""

    def __init__(self, program: Program, context: RoundContext, foreign: Callable[[str], bool]):
        self.program = program
        self.context = context
        self.foreign = foreign  # a module only another platform runs (`catalogs.platforms`)
        self._reach: dict[str, frozenset[str]] = {}
        self._callers: dict[str, set[str]] | None = None
        self._kept: dict[Segs, bool] = {}

    def facts(
        self, record: FunctionRecord, call: CallSite, known: Mapping[Cond, Any]
    ) -> dict[Cond, Any]:
        """The caller's exact facts on the attributes of the plain references the call passes,
        said of the parameters they fill, each with its mark; those on settled attributes
        pass as plain facts already (`entry_facts`)."""
        if call.bound:
            return {}  # a comprehension's own variable: not what the caller's facts name
        if record.info.is_generator:
            return {}  # its body runs a step at a time, between what its caller does
        plain = self.context.call_site(record, call)[1][1]
        if not plain:
            return {}
        out: dict[Cond, Any] = {}
        for cond, value in known.items():
            if cond[0] != "ref" or not _exact(value):
                continue
            ref = cond[1]
            for name, segs in plain:
                size = len(segs)
                if len(ref) <= size or ref[:size] != segs:
                    continue
                attrs = ref[size:]
                if not self._kept_attributes(attrs):
                    continue
                out[("ref", (name, *attrs))] = value
        return watched(out)

    def _kept_attributes(self, attrs: Segs) -> bool:
        """Attributes an entered fact may read: plain names, no property among them (its value
        follows other state), and one at least some function reassigns (else `entry_facts`
        hands the fact on already)."""
        found = self._kept.get(attrs)
        if found is None:
            stability = self.context.stability
            plain = CALL not in attrs and SUBSCRIPT not in attrs
            found = (
                plain
                and not any(stability.computed(None, a) for a in attrs)
                and not all(stability.settled(None, a) for a in attrs)
            )
            self._kept[attrs] = found
        return found

    # -- forgetting ---------------------------------------------------------------------------
    def past_writes(self, state: State, stmt: Stmt) -> State:
        known = self.after_writes(state.known, stmt)
        return state if known is state.known else state.evolve(known=known)

    def past_call(self, state: State, name: str) -> State:
        known = self.after_call(state.known, name)
        return state if known is state.known else state.evolve(known=known)

    def past_site(self, state: State, function: str, call: CallSite) -> State:
        """Past a call in a lambda (`sorted(xs, key=lambda b: relabel(b))`): the walk does not
        enter it, but it may run right here, and make a watched fact false."""
        if not call.deferred or MARKED not in state.known:
            return state
        for target in self.program.targets_of(function, call):
            state = self.past_call(state, target.name)
        return state

    def bound(self, state: State, stmt: Stmt) -> State:
        """`aliases.bound` on the walk's state."""
        known = bound(state.known, stmt, self._computed)
        return state if known is state.known else state.evolve(known=known)

    def _computed(self, attr: str) -> bool:
        return self.context.stability.computed(None, attr)

    def after_call(self, known: Mapping[Cond, Any], name: str) -> Mapping[Cond, Any]:
        """`known` past a call into `name`: without the entered facts it may make false."""
        if MARKED not in known:
            return known
        return self._without(known, lambda segs: any(name in self.reach(a) for a in segs[1:]))

    def after_writes(self, known: Mapping[Cond, Any], stmt: Stmt) -> Mapping[Cond, Any]:
        """`known` past what `stmt` assigns (a rebound root, or an attribute of that name), or
        past a `yield` in it."""
        if MARKED not in known:
            return known
        if stmt.yields:  # suspended there: whatever its caller does meanwhile may change them
            return self._without(known, lambda segs: True)
        written = list(statement_writes(stmt))
        if not written:
            return known

        def stale(segs: Segs) -> bool:
            for target in written:
                if segs[: len(target)] == target:
                    return True
                if len(target) >= 2 and (target[-1] in segs[1:] or target[-1] in _ANY_ATTRIBUTE):
                    return True
            return False

        return self._without(known, stale)

    def _without(
        self, known: Mapping[Cond, Any], stale: Callable[[Segs], bool]
    ) -> Mapping[Cond, Any]:
        """`known` without the watched facts and bindings (`analysis.aliases`) that read a
        reference `stale` says may have changed."""
        drop: list[Cond] = []
        for key, value in known.items():
            if key[0] == ENTERED and len(key) == 2:
                if any(stale(segs) for segs in refs(key[1]) if not member(segs)):
                    drop.extend((key, key[1]))
            elif key[0] == ALIAS and stale(value):
                drop.append(key)
        if not drop:
            return known
        return {k: v for k, v in known.items() if k not in drop}

    def reach(self, attr: str) -> frozenset[str]:
        """The functions that may assign `attr` (on any object) after construction, or call,
        at any depth and by any edge, one that does; code only another platform runs is not
        run here (the walk does not enter it), nor is reflection the model does not follow
        (`Stability.followed_writers`)."""
        found = self._reach.get(attr)
        if found is None:
            callers = self._callers_of()
            functions = self.program.functions
            seen = {
                name
                for name in self.context.stability.followed_writers(attr)
                if not self.foreign(functions[name].module)
            }
            work = sorted(seen)
            while work:
                for caller in callers.get(work.pop(), ()):
                    if caller not in seen:
                        seen.add(caller)
                        work.append(caller)
            found = self._reach[attr] = frozenset(seen)
        return found

    def _callers_of(self) -> dict[str, set[str]]:
        if self._callers is None:
            callers: dict[str, set[str]] = defaultdict(set)
            functions = self.program.functions
            for caller, resolved in self.program.calls.items():
                if caller in functions and self.foreign(functions[caller].module):
                    continue
                for call in resolved:
                    for target in call.targets:
                        callers[target.name].add(caller)
            self._callers = dict(callers)
        return self._callers


def _exact(value: Any) -> bool:
    """A member (`Mode.IDLE`) or a literal: what `==` / `is` with a constant leaves."""
    return isinstance(value, Symbol) or literal_truth(value)
