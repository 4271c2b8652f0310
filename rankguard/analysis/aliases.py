"""A local bound to a reference stands for it in tests, on the path, while both still name the
same value; and an attribute assigned a member is that member, while nothing may assign it.

`mode = batch.mode` and then `if mode.is_idle(): self._execute_idle(batch)`: the test is on the
local, the call passes the batch, and what the callee may know is said of `batch.mode`. The walk
(`analysis.blocking_walk`) keeps, per path, which locals were bound to which plain reference
(no call, no subscript); a fact the path learns of exactly one of them is learnt of the other,
and what it knew of the reference when the local was bound holds for the local.

The local keeps the value it was bound to; the reference follows its object. So the binding
ends wherever the reference may change (`analysis.entered` watches it as it watches a fact a
callee entered with): where the local or any prefix of the reference is assigned, where any
object's attribute of a name the reference reads is assigned (`same = batch; same.mode = X`,
`setattr(batch, "mode", X)`), and past any call that may run such a write. A fact said of the
reference through the local, and one an assignment of a member gives an attribute (`batch.mode =
Mode.EXTEND`), is watched the same way: it is forgotten there too. A local assigned a member is
that member until it is assigned again.

Where paths join, a binding one path ended stays if that path left both names on one member
(`batch.mode = Mode.EXTEND; mode = Mode.EXTEND`): an enum member is one object.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rankguard.model.facts import Cond, Symbol, evaluate, member, refs, rename
from rankguard.summary.ir import CALL, SUBSCRIPT, Segs, Stmt

ALIAS = "alias"  # (ALIAS, local) -> the reference it stands for
ENTERED = "entered"  # (ENTERED, fact): forgotten where what it reads may change
MARKED: Cond = ("watched",)  # present wherever a binding or a watched fact is: one lookup


def watched(facts: Mapping[Cond, Any]) -> dict[Cond, Any]:
    """`facts` with each marked as watched (`analysis.entered` forgets it where it may stop
    holding)."""
    out = dict(facts)
    out.update({(ENTERED, cond): True for cond in facts})
    if facts:
        out[MARKED] = True
    return out


def bound(
    known: Mapping[Cond, Any], stmt: Stmt, computed: Callable[[str], bool]
) -> Mapping[Cond, Any]:
    """What `stmt` (an assignment, its targets' old facts forgotten) binds: a local bound to a
    plain reference stands for it, unless an attribute it reads may be a property
    (`computed`: its value follows other state, with no assignment); a name assigned a member
    is that member."""
    tree = stmt.tree
    if stmt.kind != "assign" or len(stmt.targets) != 1 or not tree or tree[0] != "ref":
        return known
    target, segs = stmt.targets[0], tree[1]
    value = evaluate(tree, {})
    if isinstance(value, Symbol) and CALL not in target and SUBSCRIPT not in target:
        fact = {("ref", target): value}
        return {**known, **(watched(fact) if len(target) > 1 else fact)}
    if len(target) != 1 or CALL in segs or SUBSCRIPT in segs or member(segs):
        return known
    if any(map(computed, segs[1:])):
        return known
    local = target
    if segs[0] == local[0]:
        return known  # `batch = batch.next`: the reference is read through the old binding
    out = dict(known)
    for cond, fact in known.items():
        if cond[0] in ("ref", "cmp", "not", "and", "or") and _only(cond, segs):
            out.setdefault(rename(cond, segs, local), fact)
    out[(ALIAS, local[0])] = segs
    out[MARKED] = True
    return out


def unbound(known: Mapping[Cond, Any], target: Segs) -> Mapping[Cond, Any]:
    """`known` once `target` is assigned: without the bindings of the local it rebinds, or of a
    reference it rebinds a prefix of (`batch = ...`); what it writes past a reference is the
    `analysis.entered` watch's."""
    if MARKED not in known:
        return known
    size = len(target)
    stale = [
        key
        for key, segs in known.items()
        if key[0] == ALIAS and (target == (key[1],) or segs[:size] == target)
    ]
    return {k: v for k, v in known.items() if k not in stale} if stale else known


def restated(known: Mapping[Cond, Any], facts: Mapping[Cond, Any]) -> dict[Cond, Any]:
    """`facts` the path learns, each said too of the other name of a binding where it reads
    exactly one of the two (watched where said of the reference)."""
    if MARKED not in known:
        return dict(facts)
    out = dict(facts)
    said: dict[Cond, Any] = {}
    for key, segs in known.items():
        if key[0] != ALIAS:
            continue
        local = (key[1],)
        for cond, value in facts.items():
            if _only(cond, local):
                said.setdefault(rename(cond, local, segs), value)
            elif _only(cond, segs):
                out.setdefault(rename(cond, segs, local), value)
    for cond, value in watched({c: v for c, v in said.items() if c not in out}).items():
        out.setdefault(cond, value)
    return out


def rejoined(maps: list[Mapping[Cond, Any]], known: dict[Cond, Any]) -> dict[Cond, Any]:
    """`known` (what every path agrees on where they join) with the bindings each path keeps,
    or keeps by value: both names left on one member."""
    bindings = {k: v for m in maps if MARKED in m for k, v in m.items() if k[0] == ALIAS}
    for key, segs in bindings.items():
        if key in known:
            continue
        local = ("ref", (key[1],))
        if all(m.get(key) == segs or _same_member(m, local, ("ref", segs)) for m in maps):
            known[key] = segs
            known[MARKED] = True
    return known


def _same_member(known: Mapping[Cond, Any], one: Cond, other: Cond) -> bool:
    value = known.get(one)
    return isinstance(value, Symbol) and known.get(other) == value


def _only(cond: Cond, segs: Segs) -> bool:
    """`cond` reads `segs` itself, and nothing past it (`mode`, not `mode.x`)."""
    size = len(segs)
    found = [ref for ref in refs(cond) if ref[:size] == segs]
    return bool(found) and all(len(ref) == size for ref in found)
