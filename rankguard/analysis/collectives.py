"""The one collective index: which collective *events* a call or a function enters.

A primitive is a catalog call (`torch.distributed.broadcast`, a configured communicator's
method). An *event* is a call site in project code that enters a function holding primitive
calls (a wrapper such as `broadcast_pyobj`), or a primitive call made right in the function
asked about: `f` calling `broadcast_pyobj` at three lines enters three events, though all end at
the same `torch.distributed.broadcast` lines. The primitives below an event are its evidence (an
`Event` here is one (event, primitive) pair with the first chain found to it: the other routes
to the same call site are the same event, so the index never grows with the number of paths).
A function that reaches a primitive is itself a collective site for its callers (wrappers are
inferred).

API (every analysis that asks "does this enter a collective?" reads this index):

- `events_of_calls(record, calls, stack)`: the events those calls of `record` enter, in
  execution order, each with its chain (first hop in `record`).
- `events_under(name)`: every event below function `name`.
- `primitives_of_call(record, call, kinds)` / `primitives_under(name, kinds)`: the distinct
  primitive sites, in order of first reach (`kinds` filters collective / p2p).
- `enters(record, call)`: whether the call enters any collective primitive.

Recursion is cut at back edges (a chain never enters a function already on it). A result that
was cut at a function still on the stack is memoised only *conditionally*, beside the set of
functions it was cut at, and reused only while all of them are on the stack again; so the
answer for a function never depends on which function of its cycle was asked about first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rankguard.analysis.passed import PassedCallables, narrowed
from rankguard.analysis.reach import FOLLOWED, edge_of
from rankguard.catalogs.catalog import CollectiveCatalog
from rankguard.core.chains import Hop
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord, Target
from rankguard.summary.ir import CallSite, walk_calls


@dataclass(frozen=True, slots=True)
class CollectiveSite:
    callee: str  # the primitive's qualified name
    kind: str  # collective | p2p
    path: str
    line: int
    function: str  # the function whose body holds the primitive call

    def to_json(self) -> dict[str, object]:
        return {"callee": self.callee, "path": self.path, "line": self.line}

    @property
    def operation(self) -> tuple[str, str]:
        """The primitive a function calls, wherever in it: `broadcast_pyobj`'s sender and
        receivers broadcast on different lines, and every path through it broadcasts."""
        return (self.function, self.callee)


@dataclass(frozen=True)
class Event:
    """One collective event: the chain of call sites (outermost first; the last hop is the
    primitive call) and the primitive it ends at."""

    site: CollectiveSite
    chain: tuple[Hop, ...]

    @property
    def named_by(self) -> Hop:
        """The call site that names the event: the call into the function holding the
        primitive call (`broadcast_pyobj(...)` at its caller's line), or the primitive call
        itself when the chain's first function makes it."""
        return self.chain[-2] if len(self.chain) > 1 else self.chain[-1]

    @property
    def entered(self) -> str:
        """What the naming call site calls: the wrapper function, or the primitive."""
        return self.chain[-1].function if len(self.chain) > 1 else self.site.callee

    @property
    def key(self) -> tuple[object, ...]:
        """Identity: the naming call site and the primitive (how the chain got to the naming
        call site does not make another event; the first chain found is kept)."""
        named = self.named_by
        return (named.path, named.line, self.entered, self.site)

    def below(self, hop: Hop) -> Event:
        return Event(self.site, (hop, *self.chain))


Found = tuple[tuple[Event, ...], frozenset[str]]  # events, functions the result was cut at
# What a function's called parameters hold on the path that entered it: (name, callables).
FrozenBinding = frozenset[tuple[str, frozenset[str]]]


class CollectiveReach:
    """Memoised over the resolved calls; see the module docstring for the API."""

    def __init__(self, program: Program, catalog: CollectiveCatalog) -> None:
        self.program = program
        self.catalog = catalog
        self._memo: dict[tuple[str, FrozenBinding], list[Found]] = {}
        self.passed = PassedCallables(program)

    def events_under(self, name: str) -> tuple[Event, ...]:
        return self._under(name, frozenset())[0]

    def events_of_calls(
        self,
        record: FunctionRecord,
        calls: Sequence[CallSite],
        stack: frozenset[str] = frozenset(),
        binding: FrozenBinding = frozenset(),
    ) -> tuple[Event, ...]:
        """Events the calls enter; `stack`: functions whose chains lead here (not re-entered);
        `binding`: what `record`'s called parameters hold on the path that entered it."""
        return self._of_calls(record, calls, stack | {record.qualname}, binding)[0]

    def entry_binding(
        self, caller: FunctionRecord, call: CallSite, target: Target
    ) -> FrozenBinding:
        """What the callee's called parameters hold where `call` enters `target`: what the
        call passes, and, for a decorator's wrapper, the function it was made of."""
        passed = self.passed.binding(caller, call, target.name, {})
        return frozenset({**passed, **self.passed.closure(target)}.items())

    def primitives_of_call(
        self, record: FunctionRecord, call: CallSite, kinds: Iterable[str] = ("collective", "p2p")
    ) -> tuple[CollectiveSite, ...]:
        return _distinct(self.events_of_calls(record, [call]), kinds)

    def primitives_under(
        self, name: str, kinds: Iterable[str] = ("collective", "p2p")
    ) -> tuple[CollectiveSite, ...]:
        return _distinct(self.events_under(name), kinds)

    def enters(self, record: FunctionRecord, call: CallSite) -> bool:
        return bool(self.primitives_of_call(record, call, ("collective",)))

    # -- the walk ---------------------------------------------------------------------------
    def _of_calls(
        self,
        record: FunctionRecord,
        calls: Sequence[CallSite],
        stack: frozenset[str],
        binding: FrozenBinding = frozenset(),
    ) -> Found:
        events: dict[tuple[object, ...], Event] = {}
        cut: set[str] = set()
        known = dict(binding)
        for call in calls:
            if call.deferred:
                continue
            for target in self.program.targets_of(record.qualname, call):
                if target.kind not in FOLLOWED or target.via == "suspended":
                    continue  # a generator made here runs where it is advanced
                if not narrowed(call, (target,), known):
                    continue  # the path that entered here passed another callable
                hop = Hop(record.qualname, record.path, call.line, edge_of(target))
                kind = self.catalog.kind(target.name)
                if kind is not None:
                    site = CollectiveSite(
                        target.name, kind, record.path, call.line, record.qualname
                    )
                    event = Event(site, (hop,))
                    events.setdefault(event.key, event)
                elif target.name in self.program.functions:
                    if target.name in stack:
                        cut.add(target.name)
                        continue
                    passed = self.passed.binding(record, call, target.name, known)
                    inner = frozenset({**passed, **self.passed.closure(target)}.items())
                    below, below_cut = self._under(target.name, stack, inner)
                    cut |= below_cut
                    for event in below:
                        event = event.below(hop)
                        events.setdefault(event.key, event)
        return tuple(events.values()), frozenset(cut)

    def _under(
        self, name: str, stack: frozenset[str], binding: FrozenBinding = frozenset()
    ) -> Found:
        for found in self._memo.get((name, binding), ()):
            if found[1] <= stack:  # computed under cuts that are all on the stack again
                return found
        record = self.program.functions[name]
        calls = list(walk_calls(record.info.body))
        events, cut = self._of_calls(record, calls, stack | {name}, binding)
        found = (events, cut - {name})
        self._memo.setdefault((name, binding), []).append(found)
        return found


def _distinct(events: Iterable[Event], kinds: Iterable[str]) -> tuple[CollectiveSite, ...]:
    wanted = frozenset(kinds)
    return tuple(dict.fromkeys(e.site for e in events if e.site.kind in wanted))
