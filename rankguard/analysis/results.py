"""When a function certainly returns something (not None), said as conditions on its
parameters, so that a caller's `reason = check(s); if reason is not None: return` is known to
return where the round's facts make one of them hold.

A handler that refuses work in a mode usually asks a helper for the reason to refuse; the
work past the refusal (a teardown, a rebuild that reassigns the mode) runs only where the
helper found none. Two shapes are read, at the top level of the helper's body:

- `if c: return <display>` (a tuple or list display, a comprehension, a non-None constant), or
  `if c: raise ...`: where `c` holds on entry, the helper does not return None;
- `return next((<display> for a, b, m in table if a), None)` over a local table of tuple
  rows: each row whose test holds makes the result a display.

Scanning stops at the first statement that may return something else. Locals assigned
once from a reference are read through (`sa = s.server_args`); a condition that reads any
other local, a call or a global is not kept. A statement before the test could change what it
reads; that is not followed (as assignments through callees are not, elsewhere).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from rankguard.analysis.call_sites import (
    bound_at,
    passed_arguments,
    receiver_parameter,
)
from rankguard.model.facts import Cond, Symbol, member, refs, rename
from rankguard.model.records import FunctionRecord
from rankguard.summary.ir import CallSite, Segs, Stmt, dotted, walk_statements

_OTHER: Cond = ("other",)
PLAIN_DECORATORS = frozenset(("staticmethod", "classmethod"))
_MARK = "<parameter:{}>"  # a root no Python name can be, while parameters become arguments


class ResultConditions:
    """Per program, memoised per function: when its result is certainly not None."""

    def __init__(self, functions: Mapping[str, FunctionRecord]) -> None:
        self.functions = functions
        self._found: dict[str, tuple[Cond, ...]] = {}

    def of(self, name: str) -> tuple[Cond, ...]:
        if name not in self._found:
            record = self.functions.get(name)
            self._found[name] = _conditions(record) if record is not None else ()
        return self._found[name]


def none_tests(name: str) -> dict[Cond, bool]:
    """`name is None` false and `name is not None` true: what a certain result gives."""
    ref: Cond = ("ref", (name,))
    none: Cond = ("const", None)
    return {("cmp", ("is",), (ref, none)): False, ("cmp", ("is not",), (ref, none)): True}


def at_call(callee: FunctionRecord, call: CallSite, conds: Iterable[Cond]) -> list[Cond]:
    """The conditions restated in the caller's terms: each parameter becomes the reference
    the call passes for it, `self` the receiver; a literal argument, or the literal default of
    a parameter the call leaves out, its value (`bound_at`). A parameter the call passes
    anything else for (`f(bool(x))`, `f(*args)`) is unknown where the condition reads it,
    which leaves the rest of the condition to decide (`x == A or (p and x == B)`)."""
    passed = passed_arguments(callee, call)
    fixed = {ref[1][0]: value for ref, value in bound_at(callee, call, passed)[0].items()}
    arguments = {
        p: segs
        for p, (_, t) in passed.items()
        if p not in fixed and (segs := dotted(t)) is not None
    }
    receiver = dotted(".".join(call.target[:-1])) if len(call.target) >= 2 else None
    self_name = receiver_parameter(callee, call)
    if self_name is not None and receiver is not None:
        arguments.setdefault(self_name, receiver)
    marks = {_MARK.format(p): _valued(v) for p, v in fixed.items()}
    out: list[Cond] = []
    for cond in conds:
        for param, segs in arguments.items():
            cond = rename(cond, (_MARK.format(param),), segs)
        out.append(_bound(cond, marks))
    return out


def _valued(value: Any) -> Cond:
    """A parameter's value as a condition: a member (`Mode.DECODE`) is read as its reference."""
    return ("ref", tuple(value.name.split("."))) if isinstance(value, Symbol) else ("const", value)


def _bound(cond: Cond, marks: Mapping[str, Cond]) -> Cond:
    """`cond` with each marked parameter read as its value in `marks`, and unknown where it
    has none here (or where the condition reads past it: `p.x` of a literal `p`)."""
    tag = cond[0] if cond else "other"
    if tag == "ref":
        root = cond[1][0]
        if not root.startswith("<parameter:"):
            return cond
        return marks.get(root, _OTHER) if len(cond[1]) == 1 else _OTHER
    if tag == "call":
        if cond[1][0].startswith("<parameter:") or len(cond) > 4:
            return _OTHER
        return _rebuilt(cond, cond[1], lambda part: _bound(part, marks))
    return _rebuilt(cond, (), lambda part: _bound(part, marks), cond)


def _conditions(record: FunctionRecord) -> tuple[Cond, ...]:
    info = record.info
    if info.is_generator or info.is_async:
        return ()  # calling it makes a generator or a coroutine: never None, never its result
    if any(d and d[-1] not in PLAIN_DECORATORS for d in info.decorators):
        return ()  # a decorator may catch the raise or stand in for the result
    # A name assigned anywhere in the body (a branch, a loop, twice) is not what it was on
    # entry, or not one value: only a parameter never assigned, and a local assigned once at
    # the top, are read through.
    writes = Counter(t[0] for s in walk_statements(info.body) for t in s.targets if len(t) == 1)
    params = {p.name.lstrip("*") for p in info.params} - set(writes)
    local: dict[str, Cond] = {}
    found: list[Cond] = []
    for stmt in info.body:
        if stmt.kind == "return":
            found += [_in_parameters(c, local, params) for c in _table_rows(stmt.tree, local)]
            break
        if stmt.kind == "if" and _certain(stmt.blocks[0]) and not _returns(stmt.blocks[1]):
            found.append(_in_parameters(stmt.cond, local, params))
        elif _returns([stmt]):
            break
        if stmt.kind == "assign" and len(stmt.targets) == 1 and len(stmt.targets[0]) == 1:
            name = stmt.targets[0][0]
            local[name] = stmt.tree if writes[name] == 1 else _OTHER
    return tuple(c for c in found if c != _OTHER)


def _returns(block: Sequence[Stmt]) -> bool:
    return any(s.kind == "return" for s in walk_statements(block))


def _certain(block: Sequence[Stmt]) -> bool:
    """The block ends in `return <display>` or `raise`, and returns nowhere else."""
    if not block or block[-1].kind not in ("return", "raise"):
        return False
    last = block[-1]
    return not _returns(block[:-1]) and (last.kind == "raise" or _display(last.tree))


def _display(tree: Cond) -> bool:
    if not tree:
        return False
    return tree[0] in ("tuple", "comp") or (tree[0] == "const" and tree[1] is not None)


def _table_rows(tree: Cond, local: Mapping[str, Cond]) -> list[Cond]:
    """`next((<display> for a, b in table if a), None)`: each row's test, its names bound."""
    if not tree or tree[0] != "call" or tree[1] != ("next",) or not tree[2]:
        return []
    comp = tree[2][0]
    if comp[0] != "comp" or not _display(comp[1]) or comp[3][0] != "ref":
        return []
    _, _, names, iterable, tests = comp
    table = local.get(iterable[1][0]) if len(iterable[1]) == 1 else None
    if not table or table[0] != "tuple":
        return []
    rows: list[Cond] = []
    for row in table[1]:
        if row[0] != "tuple" or len(row[1]) != len(names):
            continue
        bound = dict(zip(names, row[1], strict=True))
        parts = tuple(_substituted(t, bound) for t in tests)
        rows.append(parts[0] if len(parts) == 1 else ("and", parts))
    return rows


def _in_parameters(cond: Cond, local: Mapping[str, Cond], params: set[str]) -> Cond:
    """`cond` with locals read through, its parameters marked; `_OTHER` where it reads
    anything but parameters and enum-like constants."""
    marked = in_callee_terms(cond, local, params)
    if any(not s[0].startswith("<parameter:") and not member(s) for s in refs(marked)):
        return _OTHER
    return marked


def in_callee_terms(cond: Cond, local: Mapping[str, Cond], params: Iterable[str]) -> Cond:
    """`cond` as a callee reads it, ready for `at_call`: locals read through (`local` holds
    what each was bound to once, or `("other",)`), parameters marked."""
    params = set(params)
    cond = _substituted(cond, {k: v for k, v in local.items() if k not in params})
    for param in params:
        cond = rename(cond, (param,), (_MARK.format(param),))
    return cond


def _substituted(cond: Cond, bound: Mapping[str, Cond]) -> Cond:
    """`cond` with each bound name replaced by its tree (`a.b` through a bound reference)."""
    tag = cond[0] if cond else "other"
    if tag == "ref":
        return _through(cond[1], bound)
    if tag == "call":
        target = _through(cond[1], bound)
        if target[0] != "ref" or len(cond) > 4:  # a method of a computed value: not followed
            return _OTHER
        return _rebuilt(cond, target[1], lambda part: _substituted(part, bound))
    return _rebuilt(cond, (), lambda part: _substituted(part, bound), _constant(cond))


def _constant(cond: Cond) -> Cond:
    """What `_substituted` makes of a tree it does not rebuild: a constant stays."""
    return cond if cond and cond[0] == "const" else _OTHER


def _rebuilt(cond: Cond, target: Segs, each: Callable[[Cond], Cond], rest: Cond = ()) -> Cond:
    """`cond` with `each` applied to its parts: a call's arguments (`target`: what it calls),
    the operand of `not`, those of `and`/`or`, a comparison's; `rest` for any other tree."""
    tag = cond[0] if cond else "other"
    if tag == "call":
        kwargs = tuple((k, each(v)) for k, v in cond[3])
        return ("call", target, tuple(each(a) for a in cond[2]), kwargs)
    if tag == "not":
        return ("not", each(cond[1]))
    if tag in ("and", "or"):
        return (tag, tuple(each(p) for p in cond[1]))
    if tag == "cmp":
        return ("cmp", cond[1], tuple(each(p) for p in cond[2]))
    return rest


def _through(segs: Segs, bound: Mapping[str, Cond]) -> Cond:
    value = bound.get(segs[0])
    if value is None:
        return ("ref", segs)
    if len(segs) == 1:
        return value
    return ("ref", value[1] + segs[1:]) if value[0] == "ref" else _OTHER
