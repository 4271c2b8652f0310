"""What the blocking walk carries: catalog calls with their chains, (call, collective) pairs,
function summaries, and the path state (pending calls, local value facts, known conditions).

States are never mutated: every transition builds a new one, so a state saved at a branch or a
loop head stays valid. Joining keeps every pending call (the first chain found, an uncadenced
one before a cadenced one) and only the facts all joined paths agree on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from rankguard.analysis.collectives import CollectiveSite
from rankguard.analysis.rounds import Round
from rankguard.core.chains import Hop
from rankguard.model.facts import Cond, refs
from rankguard.summary.ir import CallSite, Segs, Stmt, segs_text

Key = tuple[str, int, int, str]
Guards = tuple[tuple[Cond, bool], ...]
_R = TypeVar("_R")


@dataclass(frozen=True, slots=True)
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
    # The path runs only if a fact the round is chosen under stops holding mid-round
    # (`analysis.context.doubt`): what must change, "" when nothing must.
    doubt: str = ""
    # The path runs only where the start-up validation is skipped (`analysis.doubts.skipped`):
    # which check, and the early return that skips it; "" when it runs anyway.
    skipped: str = ""
    # A sync of unknown placement right after another one on this path, nothing launched
    # between (`analysis.drained`): the earlier one's `place`. This one waits only where the
    # two tensors live apart: it is reported as the earlier one's follower.
    drained_by: str = ""

    @property
    def key(self) -> Key:
        return (self.path, self.line, self.col, self.callee)

    @property
    def place(self) -> str:
        """The call as notes and `drained_by` name it: "`x.tolist()` (path:line)"."""
        return f"`{self.text}` ({self.path}:{self.line})"

    def outranks(self, other: BlockingCall) -> bool:
        """An undoubted path outranks a doubted one, one the validation does not rule out one
        it does, then an uncadenced a cadenced one."""
        if self.rank != other.rank:
            return self.rank < other.rank
        return bool(other.cadenced) and not self.cadenced

    @property
    def rank(self) -> tuple[bool, bool, bool]:
        """Lower is the better path to show: first one where the call waits by itself (where
        an earlier sync drained the queue it is that one's follower, `drained_by`); then one
        that needs no round fact to change, less likely than one that needs only a skipped
        validation, which a launch may do."""
        return (bool(self.drained_by), bool(self.doubt), bool(self.skipped))

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


@dataclass(frozen=True, slots=True)
class Pair:
    """A blocking call and a collective it may delay; `chain` leads to the collective."""

    blocking: BlockingCall
    site: CollectiveSite
    chain: tuple[Hop, ...]
    tail: bool = False  # the previous round's tail: work after its last collective

    @property
    def key(self) -> tuple[Key, CollectiveSite]:
        return (self.blocking.key, self.site)


class Below:
    """A callee's summary as its caller sees it past one call (`hop`, under `cadence`):
    each call and chain it holds once, however many of its pairs and tail entries share it.

    A call pending before a callee's collectives pairs with each of them, and those pairs
    share the call and the chain: copied one pair at a time, every caller up the stack held
    one copy per pair (on sglang a cold check's blocking summaries and cut summaries held
    812 k calls and as many chain tuples, 200 MiB, session 18). Ids are safe keys: the
    summary holds what they name while it is applied."""

    __slots__ = ("_calls", "_chains", "cadence", "hop")

    def __init__(self, hop: Hop, cadence: str | None) -> None:
        self.hop = hop
        self.cadence = cadence
        self._calls: dict[int, BlockingCall] = {}
        self._chains: dict[int, tuple[Hop, ...]] = {}

    def chain(self, chain: tuple[Hop, ...]) -> tuple[Hop, ...]:
        made = self._chains.get(id(chain))
        if made is None:
            made = self._chains[id(chain)] = (self.hop, *chain)
        return made

    def call(self, call: BlockingCall) -> BlockingCall:
        made = self._calls.get(id(call))
        if made is None:
            chain = self.chain(call.chain)
            made = copied(call, chain=chain, cadenced=call.cadenced or self.cadence)
            self._calls[id(call)] = made
        return made

    def pair(self, pair: Pair) -> Pair:
        return Pair(self.call(pair.blocking), pair.site, self.chain(pair.chain), pair.tail)


@dataclass(slots=True)
class Summary:
    first: dict[CollectiveSite, tuple[Hop, ...]]
    pairs: dict[tuple[Key, CollectiveSite], Pair]
    tail: dict[Key, BlockingCall]
    # Some path returns without running a collective: a collective the function only *may*
    # reach leaves its caller's pending calls waiting for the next one on that path.
    passes: bool = False
    # Functions that may break a shaky round fact (`BlockingAnalysis.watched`) entered here or
    # below, each with whether the path was in doubt already (`analysis.doubts`).
    writers: frozenset[tuple[str, bool]] = frozenset()
    # The collective operations every path that returns runs (`State.ran` where they join).
    sure: frozenset[CollectiveSite] = frozenset()

    def below(
        self, hop: Hop, cadence: str | None
    ) -> tuple[list[Pair], dict[Key, BlockingCall], dict[CollectiveSite, tuple[Hop, ...]]]:
        """Its pairs, tail and first collectives as the caller sees them past `hop` (`Below`)."""
        moved = Below(hop, cadence)
        return (
            [moved.pair(p) for p in self.pairs.values()],
            {key: moved.call(call) for key, call in self.tail.items()},
            {site: moved.chain(chain) for site, chain in self.first.items()},
        )


@dataclass(frozen=True, slots=True)
class State:
    """Never mutated: every transition builds a new one, so saved states stay valid."""

    clean: bool  # no collective yet on this path (within the function being walked)
    pending: Mapping[Key, BlockingCall]
    env: Mapping[str, str] = field(default_factory=dict)  # local name -> value fact
    known: Mapping[Cond, Any] = field(default_factory=dict)  # conditions' known values
    # Branch conditions this path took in the function (enclosing ones, and those whose other
    # side left: `if not w.is_completed(): continue`), as (condition, side) pairs.
    taken: tuple[tuple[Cond, bool], ...] = ()
    # The collective operations (`CollectiveSite.operation`) this path has run in the
    # function: where paths join, those all ran. One that every way through a round's
    # iteration runs surely follows any call in it.
    ran: frozenset[CollectiveSite] = frozenset()

    def evolve(self, **changes: Any) -> State:
        return copied(self, **changes)


def copied(record: _R, **changes: Any) -> _R:
    """`dataclasses.replace` for the slotted frozen records here (no `__post_init__`) without
    running `__init__`: summaries are re-chained millions of times on a large tree (every
    summary applied at every call site that enters it)."""
    kind = type(record)
    copy = _COPIERS.get(kind) or _copier(kind)
    return copy(record, changes)


_COPIERS: dict[type, Callable[[Any, dict[str, Any]], Any]] = {}


def _copier(kind: type) -> Callable[[Any, dict[str, Any]], Any]:
    """A copy function made for one record type, as `dataclasses` makes `__init__`: one
    store per slot through its descriptor, unrolled (a loop over the fields cost twice as
    much), then the changed fields."""
    names = [f.name for f in fields(kind)]
    scope: dict[str, Any] = {f"set_{n}": kind.__dict__[n].__set__ for n in names}
    scope.update(kind=kind, new=object.__new__, put=object.__setattr__, names=frozenset(names))
    lines = [
        "def copy(record, changes):",
        "    if not changes.keys() <= names:",
        "        raise TypeError(f'{kind.__name__} has no field {sorted(changes.keys() - names)}')",
        "    made = new(kind)",
        *(f"    set_{n}(made, record.{n})" for n in names),
        "    for name, value in changes.items():",
        "        put(made, name, value)",
        "    return made",
    ]
    exec("\n".join(lines), scope)  # our own text, as `dataclasses` makes `__init__`
    copy = _COPIERS[kind] = scope["copy"]
    return copy


def merge(into: dict[Key, BlockingCall], more: Mapping[Key, BlockingCall]) -> None:
    """Keep the first chain found, unless a later one outranks it (`BlockingCall.outranks`)."""
    for key, call in more.items():
        have = into.get(key)
        if have is None or call.outranks(have):
            into[key] = call


def keep_pair(into: dict[tuple[Key, CollectiveSite], Pair], pair: Pair) -> None:
    """`merge` for pairs: the first found, unless a later one's blocking call outranks it."""
    have = into.get(pair.key)
    if have is None or pair.blocking.outranks(have.blocking):
        into[pair.key] = pair


def join(states: Iterable[State | None]) -> State | None:
    live = [s for s in states if s is not None]
    if not live:
        return None
    if len(live) == 1:
        return live[0]
    pending: dict[Key, BlockingCall] = {}
    for state in live:
        merge(pending, state.pending)
    env = _agreed([s.env for s in live])
    known = _agreed([s.known for s in live])
    taken = tuple(t for t in live[0].taken if all(t in s.taken for s in live[1:]))
    return State(any(s.clean for s in live), pending, env, known, taken, _ran(live))


def _ran(live: list[State]) -> frozenset[CollectiveSite]:
    """The sites every path ran, and those of an operation each path ran exactly once at
    different sites (`broadcast_pyobj`'s sender or receiver side): each such site is marked
    as the one of its side. The first set is handed on when every path holds it (most do:
    building a set at every join cost memory on a large tree)."""
    if all(s.ran is live[0].ran for s in live[1:]):
        return live[0].ran
    common = live[0].ran.intersection(*(s.ran for s in live[1:]))
    counts = [Counter(site.operation for site in s.ran) for s in live]
    either = {op for op in counts[0] if all(c.get(op) == 1 for c in counts)}
    if not either:
        return common
    return common | {site for s in live for site in s.ran if site.operation in either}


def _agreed(maps: list[Mapping[Any, Any]]) -> dict[Any, Any]:
    out = dict(maps[0])
    for other in maps[1:]:
        out = {k: v for k, v in out.items() if k in other and other[k] == v}
    return out


def same(a: State, b: State) -> bool:
    """Nothing new: the same calls pending, each ranked the same (a later pass may reach a
    call on a path not in doubt that the first reached only in doubt: `outranks`)."""
    return (
        a.clean == b.clean
        and _ranks(a.pending) == _ranks(b.pending)
        and a.env == b.env
        and a.known == b.known
        and a.taken == b.taken
        and a.ran == b.ran
    )


def call_text(call: CallSite) -> str:
    parts = [*call.args, *(f"{k}={v}" if k != "**" else f"**{v}" for k, v in call.kwargs)]
    return f"{segs_text(call.target)}({', '.join(parts)})"


@dataclass
class Regions:
    """One round's result: every (blocking call, collective) pair, the round's tail, and the
    collectives every iteration runs (each surely follows any call of the round)."""

    round: Round
    pairs: list[Pair]
    tail: list[BlockingCall]
    every: frozenset[CollectiveSite] = frozenset()


def lowered(call: BlockingCall, confidence: str, why: str, **changes: Any) -> BlockingCall:
    """`call` at `confidence`, `why` first in its note (what the note said before stays)."""
    note = f"{why}; {call.note}" if call.note else why
    return copied(call, confidence=confidence, note=note, **changes)


def cadenced(call: BlockingCall, reason: str) -> BlockingCall:
    return call if call.cadenced else copied(call, cadenced=reason)


def _ranks(pending: Mapping[Key, BlockingCall]) -> dict[Key, tuple[bool, ...]]:
    return {k: (*c.rank, bool(c.cadenced)) for k, c in pending.items()}


def run_past(stmt: Stmt) -> Sequence[CallSite]:
    """The statement's calls on the paths that go on past it. An assert's message is built
    only where the assert fails, and that path raises, as a `raise` statement's own calls do."""
    if stmt.kind != "expr" or not stmt.cond:
        return stmt.calls
    failing = (stmt.cond, False)
    return tuple(c for c in stmt.calls if failing not in c.under)


def forget_taken(state: State, targets: Sequence[Segs]) -> State:
    """`state` without the tests taken on what an assignment to `targets` rebinds (`if
    w.is_completed():` says nothing of the `w` bound after it)."""
    taken = tuple(
        t for t in state.taken if not any(r[: len(g)] == g for g in targets for r in refs(t[0]))
    )
    return state if len(taken) == len(state.taken) else state.evolve(taken=taken)


def left_while(state: State, cond: Cond) -> State:
    """Past a `while` left without `break`: its test was false (`while not w.is_completed():`
    then `w.wait()`), until an assignment (`forget_taken`) or a call that may write what it
    reads (`BlockingAnalysis.past_call`) rebinds it."""
    return state.evolve(taken=(*state.taken, (cond, False))) if cond else state
