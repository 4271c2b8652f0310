"""Locals bound to a reference: `mode = batch.forward_mode` makes a test on `mode` a test on
`batch.forward_mode`, while neither the local nor the reference (or what it hangs from) is
assigned again on the path. A dispatcher tests its copy (`if mode.is_idle(): return
self._execute_idle(batch)`), and the callee tests the batch.

The walk carries, per path, each such local with its reference, in one entry of its facts
(`ALIASES`). Where paths join, a local some path bound to a constant instead (`if
mode.is_mixed(): batch.forward_mode = EXTEND; mode = EXTEND`) keeps its reference with that
constant set aside: a later test that gives the local another constant (`mode.is_idle()`) can only
pass on a path where the local is still the reference, so what it says of the local it says of
the reference; a test the constant may pass says nothing of it. A local bound otherwise on some
path, or to different references, is no copy there.

As with the facts a test leaves on an attribute, a call between the binding and the test is
taken not to reassign the reference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rankguard.model.facts import UNKNOWN, Cond, Symbol, evaluate, member, pure, refs, rename
from rankguard.summary.ir import CALL, SUBSCRIPT, Segs, Stmt, walk_statements

ALIASES: Cond = ("aliases",)
# local -> (the reference it is, or None: none on any path; the constants it holds elsewhere)
Entries = dict[str, tuple[Segs | None, frozenset[Any]]]
_CONSTANTS = (Symbol, str, int, float, bytes, type(None))


def tested(body: Sequence[Stmt]) -> frozenset[str]:
    """The names a test or an assert in `body` reads (`mode` in `if mode.is_idle():`): only
    a test adds facts on a local, so only these are worth following as copies."""
    return frozenset(segs[0] for s in walk_statements(body) if s.cond for segs in refs(s.cond))


def bound(stmt: Stmt, known: Mapping[Cond, Any], followed: frozenset[str]) -> Mapping[Cond, Any]:
    """`known` past `name = <reference>` (the local is the reference) or `name = <constant>`
    (it is that constant, which a later join sets aside), once `broken` has run; only for
    the `followed` names (`tested`)."""
    if stmt.kind != "assign" or len(stmt.targets) != 1 or len(stmt.targets[0]) != 1:
        return known
    (name,) = stmt.targets[0]
    if name not in followed:
        return known
    tree = stmt.tree
    if tree[:1] == ("ref",) and _reference(tree[1]) and tree[1][0] != name:
        entry: tuple[Segs | None, frozenset[Any]] = (tree[1], frozenset())
    else:
        value = evaluate(tree, {}) if tree else UNKNOWN
        if not isinstance(value, _CONSTANTS):
            return known
        entry = (None, frozenset((value,)))
    entries = _entries(known)
    entries[name] = entry
    return {**known, ALIASES: _packed(entries)}


def broken(known: Mapping[Cond, Any], targets: Sequence[Segs]) -> Mapping[Cond, Any]:
    """`known` with the copies an assignment to `targets` ends: the local rebound, or its
    reference or anything it hangs from (`batch = ...` ends `mode = batch.mode`)."""
    entries = _entries(known)
    if not entries:
        return known
    kept = {
        name: entry
        for name, entry in entries.items()
        if not any(t == (name,) or (entry[0] or ())[: len(t)] == t for t in targets)
    }
    if len(kept) == len(entries):
        return known
    out = {k: v for k, v in known.items() if k != ALIASES}
    if kept:
        out[ALIASES] = _packed(kept)
    return out


def restated(known: Mapping[Cond, Any], new: Mapping[Cond, Any]) -> dict[Cond, Any]:
    """What `known` (holding the facts a test just added, `new`) says of each copied local,
    said of its reference, where the local is the reference on every path that passed."""
    out: dict[Cond, Any] = {}
    for name, (source, others) in _entries(known).items():
        if source is None or not any(_reads(c, name) for c in new):
            continue
        if others and not _other_than(known.get(("ref", (name,)), UNKNOWN), others):
            continue
        for cond, value in known.items():
            if _reads(cond, name) and all(s[0] == name or member(s) for s in refs(cond)):
                said = rename(cond, (name,), source)
                if said not in known and pure(said):
                    out[said] = value
    return out


def joined(knowns: Sequence[Mapping[Cond, Any]]) -> tuple[Any, ...] | None:
    """The copies that hold where paths join: a local every path copies from one reference,
    or binds to a constant on some (set aside)."""
    per = [_entries(k) for k in knowns]
    merged: Entries = {}
    for name in per[0]:
        if not all(name in entries for entries in per):
            continue
        sources = {entries[name][0] for entries in per} - {None}
        if len(sources) <= 1:
            others = frozenset().union(*(entries[name][1] for entries in per))
            merged[name] = (next(iter(sources), None), others)
    return _packed(merged) if merged else None


def _other_than(value: Any, others: frozenset[Any]) -> bool:
    """`value` is a constant known to differ from each of `others`."""
    here: Cond = ("const", value)
    return all(evaluate(("cmp", ("!=",), (here, ("const", o))), {}) is True for o in others)


def _reference(segs: Segs) -> bool:
    return not member(segs) and CALL not in segs and SUBSCRIPT not in segs


def _reads(cond: Cond, name: str) -> bool:
    return any(segs[0] == name for segs in refs(cond))


def _entries(known: Mapping[Cond, Any]) -> Entries:
    found = known.get(ALIASES)
    return {name: (source, others) for name, source, others in found} if found else {}


def _packed(entries: Entries) -> tuple[Any, ...]:
    return tuple((name, *entries[name]) for name in sorted(entries))
