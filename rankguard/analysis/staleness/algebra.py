"""The sign algebra: which terms a value carries, and with which sign.

A value (`Val`) maps each *source* it carries to a sign, +1, -1 or 0 (unknown), with the chain of
functions the source travelled through. A source is a driver-term call site, a cached composite
(a kept value that combines several terms: its staleness is the composite's, whatever the inner
signs), or a parameter of the function being summarised (replaced by the arguments at each call).
Values may keep positions (`parts`), so `mem_get_info()[0]` is the free term and `[1]` is not.

Nothing here guesses: an operation the algebra cannot decide turns the sign to 0 (unknown) and
keeps the source, so an unknown stays visible in the report instead of disappearing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from rankguard.core.chains import Hop

POS, NEG, UNK = 1, -1, 0


class Src(NamedTuple):
    """kind: `term` (a driver call site), `cached` (a kept composite) or `param`."""

    kind: str
    name: str
    path: str = ""
    line: int = 0
    errs: str = "large"  # which way a stale reading errs (catalog `errs`): large|small|either


class CacheInfo(NamedTuple):
    """Where and how a value is kept across rounds."""

    kind: str  # lru_cache | cache | cached_property | time-cadence | memo | cadence-helper
    where: str  # the caching function, `Class.attr`, `module.NAME` or the helper
    path: str
    line: int
    detail: str = ""


Key = tuple[Src, CacheInfo | None]


class Flow(NamedTuple):
    sign: int
    chain: tuple[Hop, ...]


def join_sign(a: int, b: int) -> int:
    return a if a == b else UNK


def _better(a: tuple[Hop, ...], b: tuple[Hop, ...]) -> tuple[Hop, ...]:
    """The chain a row shows when several lead to it: the shortest, then the smallest."""
    return min(a, b, key=lambda c: (len(c), c))


@dataclass(frozen=True)
class Val:
    flows: Mapping[Key, Flow] = field(default_factory=dict)
    parts: Mapping[int | str, Val] | None = None

    @property
    def empty(self) -> bool:
        return not self.flows and not self.parts

    def flat(self) -> Val:
        """The value as one quantity: its own flows and those of every part."""
        if self.parts is None:
            return self
        out = Val(self.flows)
        for part in self.parts.values():
            out = join(out, part.flat())
        return out

    def part(self, key: int | str | None) -> Val:
        """Element `key` (an index or field); an unknown key gives every element."""
        if self.parts is None or key is None:
            return self.flat()
        if key in self.parts:
            return self.parts[key]
        if isinstance(key, int) and key < 0:
            keys = sorted(k for k in self.parts if isinstance(k, int) and k >= 0)
            if keys and -key <= len(keys):
                return self.parts[keys[key]]
        return EMPTY  # a known position or field that holds no term (`total`)

    def map_flows(self, fn: Callable[[Key, Flow], Iterable[tuple[Key, Flow]]]) -> Val:
        flows: dict[Key, Flow] = {}
        for key, flow in self.flows.items():
            for new_key, new_flow in fn(key, flow):
                _merge(flows, new_key, new_flow)
        parts = None
        if self.parts is not None:
            parts = {k: v.map_flows(fn) for k, v in self.parts.items()}
        return Val(flows, parts)

    def scale(self, sign: int) -> Val:
        if sign == POS:
            return self
        return self.map_flows(lambda k, f: [(k, Flow(f.sign * sign, f.chain))])

    def unknown(self) -> Val:
        return self.flat().scale(UNK)

    def hop(self, hop: Hop) -> Val:
        """Every flow travelled one more hop (into `hop.function` at `hop.line`)."""
        return self.map_flows(lambda k, f: [(k, Flow(f.sign, (*f.chain, hop)))])

    def sources(self) -> set[Src]:
        return {key[0] for key in self.flat().flows}


def _merge(flows: dict[Key, Flow], key: Key, flow: Flow) -> None:
    old = flows.get(key)
    if old is None:
        flows[key] = flow
    else:
        flows[key] = Flow(join_sign(old.sign, flow.sign), _better(old.chain, flow.chain))


EMPTY = Val()


def join(*vals: Val) -> Val:
    """One of several values: signs agree or become unknown; positions kept when all have them."""
    real = [v for v in vals if not v.empty]
    if not real:
        return EMPTY
    if len(real) == 1:
        return real[0]
    if all(v.parts is not None for v in real):
        keys = sorted({k for v in real for k in v.parts}, key=lambda k: (str(type(k)), k))
        parts = {k: join(*(v.parts[k] for v in real if k in v.parts)) for k in keys}
        flows: dict[Key, Flow] = {}
        for v in real:
            for key, flow in v.flows.items():
                _merge(flows, key, flow)
        return Val(flows, parts)
    flows = {}
    for v in real:
        for key, flow in v.flat().flows.items():
            _merge(flows, key, flow)
    return Val(flows)


def add(a: Val, b: Val) -> Val:
    return join(a.flat(), b.flat())


def sub(a: Val, b: Val) -> Val:
    """`a - b`. A source on both sides with one sign is one reading minus a part of it (two fields
    of one snapshot record, `x - x % align`): the difference keeps the minuend's sign."""
    left, right = a.flat(), b.flat()
    same = {
        key
        for key, flow in right.flows.items()
        if flow.sign != UNK and left.flows.get(key, Flow(UNK, ())).sign == flow.sign
    }
    if same:
        right = right.map_flows(lambda k, f: [] if k in same else [(k, f)])
    return join(left, right.scale(NEG))


def term(src: Src, hop: Hop) -> Val:
    return Val({(src, None): Flow(POS, (hop,))})


def param(name: str, index: int) -> Val:
    return Val({(Src("param", name, "", index), None): Flow(POS, ())})


def substitute(val: Val, args: Mapping[str, Val]) -> Val:
    """Replace parameter sources by the values bound to them (absent: carries nothing)."""

    def swap(key: Key, flow: Flow) -> list[tuple[Key, Flow]]:
        src = key[0]
        if src.kind != "param":
            return [(key, flow)]
        bound = args.get(src.name)
        if bound is None:
            return []
        return list(bound.flat().scale(flow.sign).flows.items())

    if not any(k[0].kind == "param" for k in val.flat().flows):
        return val
    return val.map_flows(swap)


def without_params(val: Val) -> Val:
    return val.map_flows(lambda k, f: [] if k[0].kind == "param" else [(k, f)])


def signed(val: Val) -> Val:
    """Only the flows whose sign is known: an unknown is reported where it arises (at the
    consumers of the function that lost the sign) and is not composed further, so one opaque
    call does not turn every downstream budget of a large program into an `unknown` row."""
    return val.map_flows(lambda k, f: [] if f.sign == UNK else [(k, f)])


def only_params(val: Val) -> Val:
    return val.flat().map_flows(lambda k, f: [(k, f)] if k[0].kind == "param" else [])


class Composite(NamedTuple):
    """A kept value that combines several sources: it goes stale as one."""

    src: Src
    cache: CacheInfo
    expression: str
    members: tuple[tuple[str, int], ...]  # (term name, sign inside the kept expression)


def keep(
    val: Val, cache: CacheInfo, src: Src, expression: str, hop: Hop
) -> tuple[Val, Composite | None]:
    """The value as read back from a cache.

    A kept value with one source is that source, stale (marked with `cache` unless an inner
    cache already marks it). A kept value with several sources is composed as a whole: a new
    source standing for the kept expression, with sign +1 (caching `cache - trapped` and adding
    it is an added, stale value even though `trapped` alone is subtracted).
    """
    # The kept value read back into its own refresh (`self.v = self.v or f()`) is itself.
    val = val.map_flows(lambda k, f: [] if k[0] == src or k[0].name == src.name else [(k, f)])
    flat = val.flat()
    sources = {key[0] for key in flat.flows}
    if not sources:
        return val, None
    if len(sources) == 1:
        marked = val.map_flows(lambda k, f: [((k[0], k[1] or cache), f)])
        return marked, None
    members = tuple(sorted({(k[0].name, f.sign) for k, f in flat.flows.items()}))
    src = src._replace(errs=composed_errs((k[0].errs, f.sign) for k, f in flat.flows.items()))
    return Val({(src, cache): Flow(POS, (hop,))}), Composite(src, cache, expression, members)


def composed_errs(members: Iterable[tuple[str, int]]) -> str:
    """How a kept sum errs from how each member errs and its sign inside it: a member that errs
    large and is subtracted makes the sum err small; members that disagree make it `either`."""
    flip = {"large": "small", "small": "large"}
    found = {
        errs if sign == POS else flip.get(errs, "either") if sign == NEG else "either"
        for errs, sign in members
    }
    return found.pop() if len(found) == 1 else "either"
