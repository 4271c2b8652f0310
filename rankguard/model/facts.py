"""Which branches can run, decided on condition trees (`summary.conditions`) under known facts.

A *fact* maps a condition tree to what is known of its value: an exact constant, a `Symbol`
(an enum-like member such as `Mode.NULL`), or only its truth (`TRUTHY` / `FALSY`). Facts come
from the guards a path has passed, from constant arguments at a call site, from `assert`s and
from the branch of a caller that selects the round. Evaluation is three-valued: what the facts
do not decide is unknown, and an unknown branch stays feasible.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from rankguard.summary.ir import CALL, SUBSCRIPT, Segs

Cond = tuple[Any, ...]
Facts = Mapping[Cond, Any]


class Symbol(NamedTuple):
    """A dotted member such as `DisaggregationMode.NULL`: equal to itself, and different from
    another member of the same owner."""

    name: str


class _Truth(NamedTuple):
    truthy: bool


TRUTHY, FALSY = _Truth(True), _Truth(False)
UNKNOWN = object()


def truth(value: Any) -> bool | None:
    if value is UNKNOWN or isinstance(value, Symbol):
        return None
    if isinstance(value, _Truth):
        return value.truthy
    return bool(value)


def _symbol(segs: Segs) -> Symbol | None:
    """`Owner.MEMBER`: a capitalised owner and an upper-case member name."""
    if len(segs) < 2 or CALL in segs or SUBSCRIPT in segs:
        return None
    owner, member = segs[-2], segs[-1]
    if owner[:1].isupper() and member.isupper() and not owner.isupper():
        return Symbol(".".join(segs))
    return None


def member(segs: Segs) -> bool:
    """`Mode.NULL`: an enum-like constant, which no assignment changes."""
    return _symbol(segs) is not None


def evaluate(cond: Cond, facts: Facts) -> Any:
    """The value of `cond` under `facts`, or UNKNOWN."""
    if not cond:
        return UNKNOWN
    known = facts.get(cond, UNKNOWN)
    if known is not UNKNOWN:
        return known
    tag = cond[0]
    if tag == "const":
        return cond[1]
    if tag == "ref":
        return _symbol(cond[1]) or UNKNOWN
    if tag == "not":
        inner = truth(evaluate(cond[1], facts))
        return UNKNOWN if inner is None else not inner
    if tag in ("and", "or"):
        stop = tag == "or"  # `or` stops at a truthy operand, `and` at a falsy one
        unknown = False
        for part in cond[1]:
            value = truth(evaluate(part, facts))
            if value is None:
                unknown = True
            elif value is stop:
                return stop
        return UNKNOWN if unknown else not stop
    if tag == "cmp" and len(cond[1]) == 1:
        return _compare(cond[1][0], evaluate(cond[2][0], facts), evaluate(cond[2][1], facts))
    if tag == "if":
        return choose(cond, facts, evaluate)
    return UNKNOWN


def choose(cond: Cond, facts: Facts, value: Any) -> Any:
    """A conditional expression's value: the side its test picks, or the value both sides
    agree on (`value(side, facts)` reads a side; UNKNOWN when they differ)."""
    test = truth(evaluate(cond[1], facts))
    if test is not None:
        return value(cond[2] if test else cond[3], facts)
    body, orelse = value(cond[2], facts), value(cond[3], facts)
    return body if body == orelse else UNKNOWN


def _compare(op: str, left: Any, right: Any) -> Any:
    if left is UNKNOWN or right is UNKNOWN or isinstance(left, _Truth) or isinstance(right, _Truth):
        if op in ("is", "is not", "==", "!=") and None in (left, right):
            other = right if left is None else left
            if isinstance(other, _Truth) and other.truthy:
                return op in ("is not", "!=")  # a truthy value is not None
        return UNKNOWN
    if isinstance(left, Symbol) or isinstance(right, Symbol):
        if not (isinstance(left, Symbol) and isinstance(right, Symbol)):
            return UNKNOWN
        same_owner = left.name.rsplit(".", 1)[0] == right.name.rsplit(".", 1)[0]
        if left != right and not same_owner:
            return UNKNOWN
        equal = left == right
        return {"==": equal, "is": equal, "!=": not equal, "is not": not equal}.get(op, UNKNOWN)
    try:
        if op in ("==", "is"):
            return left == right if op == "==" else left is right
        if op in ("!=", "is not"):
            return left != right if op == "!=" else left is not right
        if op == "<":
            return left < right
        if op == "<=":
            return left <= right
        if op == ">":
            return left > right
        if op == ">=":
            return left >= right
    except TypeError:
        return UNKNOWN
    return UNKNOWN


def contradicts(cond: Cond, positive: bool, facts: Facts) -> bool:
    """Taking this side of `cond` is impossible under `facts`."""
    value = truth(evaluate(cond, facts))
    return value is not None and value is not positive


def assume(cond: Cond, positive: bool) -> dict[Cond, Any]:
    """The facts that hold on the `positive` side of `cond`."""
    if not cond or cond[0] == "other":
        return {}
    tag = cond[0]
    if tag == "not":
        return assume(cond[1], not positive)
    out: dict[Cond, Any] = {cond: TRUTHY if positive else FALSY}
    if (tag == "and" and positive) or (tag == "or" and not positive):
        for part in cond[1]:
            out.update(assume(part, positive))
    elif tag == "cmp" and len(cond[1]) == 1:
        op, (left, right) = cond[1][0], cond[2]
        equal = (op in ("==", "is") and positive) or (op in ("!=", "is not") and not positive)
        if equal:
            for name, other in ((left, right), (right, left)):
                if name[0] == "ref" and _symbol(name[1]) is None:
                    value = evaluate(other, {})
                    if value is not UNKNOWN:
                        out[name] = value
    return out


_NEGATED = {"<": ">=", ">=": "<", ">": "<=", "<=": ">", "==": "!=", "!=": "=="}


def complemented(facts: Mapping[Cond, Any]) -> dict[Cond, Any]:
    """With each known comparison, its negation (`x > 1` falsy: `x <= 1` truthy)."""
    out = dict(facts)
    for cond, value in facts.items():
        if cond[0] == "cmp" and len(cond[1]) == 1 and cond[1][0] in _NEGATED:
            truthy = truth(value)
            if truthy is not None:
                out.setdefault(
                    ("cmp", (_NEGATED[cond[1][0]],), cond[2]), FALSY if truthy else TRUTHY
                )
    return out


def leaf_facts(cond: Cond, decide: Callable[[Cond], Any]) -> dict[Cond, Any]:
    """What `decide` knows of each operand `cond` combines with `not`, `and`, `or` (None: not
    known): facts from outside the path (the hardware, groups with peers) for `evaluate`."""
    out: dict[Cond, Any] = {}
    stack = [cond]
    while stack:
        part = stack.pop()
        tag = part[0] if part else None
        if tag == "not":
            stack.append(part[1])
        elif tag in ("and", "or"):
            stack.extend(part[1])
        elif part and (value := decide(part)) is not None:
            out[part] = value
    return out


def refs(cond: Cond) -> Iterable[Segs]:
    """Every reference a condition reads (the targets of its calls included)."""
    tag = cond[0] if cond else "other"
    if tag == "ref":
        yield cond[1]
    elif tag == "call":
        yield cond[1]
        for arg in cond[2]:
            yield from refs(arg)
        for _, arg in cond[3]:
            yield from refs(arg)
    elif tag == "not":
        yield from refs(cond[1])
    elif tag in ("and", "or"):
        for part in cond[1]:
            yield from refs(part)
    elif tag == "cmp":
        for part in cond[2]:
            yield from refs(part)


def rename(cond: Cond, old: Segs, new: Segs) -> Cond:
    """`cond` with references rooted at `old` rooted at `new` (a caller's receiver -> `self`)."""
    tag = cond[0] if cond else "other"
    if tag == "ref":
        segs = cond[1]
        return ("ref", new + segs[len(old) :]) if segs[: len(old)] == old else cond
    if tag == "call":
        segs = cond[1]
        target = new + segs[len(old) :] if segs[: len(old)] == old else segs
        args = tuple(rename(a, old, new) for a in cond[2])
        return ("call", target, args, tuple((k, rename(v, old, new)) for k, v in cond[3]))
    if tag == "not":
        return ("not", rename(cond[1], old, new))
    if tag in ("and", "or"):
        return (tag, tuple(rename(p, old, new) for p in cond[1]))
    if tag == "cmp":
        return ("cmp", cond[1], tuple(rename(p, old, new) for p in cond[2]))
    return cond


def rooted(cond: Cond, root: str) -> bool:
    """Every reference `cond` reads starts at `root` (or is an enum-like member)."""
    seen = False
    for segs in refs(cond):
        if segs[0] != root and _symbol(segs) is None:
            return False
        seen = True
    return seen


def forget(facts: Facts, target: Segs) -> Facts:
    """Facts that no longer hold once `target` is assigned."""
    size = len(target)
    stale = [c for c in facts if any(s[:size] == target for s in refs(c))]
    if not stale:
        return facts
    return {c: v for c, v in facts.items() if c not in stale}


def pure(cond: Cond) -> bool:
    """No call inside: its value cannot change between two reads with no assignment between.
    A settings getter's field (`get_exec().x`: a module-level call first, as
    `analysis.settings` reads settings) counts as a read; any other call in a reference
    (`self.inbox.recv().kind`) makes a new value each time."""
    tag = cond[0] if cond else "other"
    if tag == "call" or tag == "other":
        return False
    if tag == "ref":
        return CALL not in cond[1][2:]
    if tag == "not":
        return pure(cond[1])
    if tag in ("and", "or"):
        return all(pure(p) for p in cond[1])
    if tag == "cmp":
        return all(pure(p) or p[0] == "const" for p in cond[2])
    return True
