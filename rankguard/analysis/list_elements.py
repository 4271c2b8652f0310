"""Where the elements of a list a function builds itself live, as the blocking walk reads it.

A list's placement is its elements' (`model.placement` reads `xs[i]` as `xs`): a display or a
comprehension gives the placement all its elements agree on (`[torch.arange(n) for n in ns]`,
a factory with no `device=`, is host data; an empty `[]` holds nothing a sync could read: host
data too), and `xs.append(v)` / `xs.insert(i, v)` / `xs.extend(vs)` / `xs[i] = v` add theirs
(`agree`: host and host stays host, anything else becomes unknown). That is only sound while
every addition is in sight, so it is kept for locals the function alone can reach
(`list_locals`: no parameter, `global`, closure or lambda touches them) and, on the walk,
forgotten the moment the list is handed on: passed to a call that may keep or fill it (any
but a builtin or tensor function that only reads it), or bound to another name or attribute
(an alias whose additions would not be seen). Unknown stays unknown: a finding, at the
confidence an unknown placement gets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rankguard.analysis.blocking_types import State
from rankguard.analysis.precision import made_by, rebound
from rankguard.model.facts import Facts
from rankguard.model.placement import (
    SCALAR,
    Attrs,
    Env,
    agree,
    bound,
    of_segs,
    of_tree,
    unpacked,
)
from rankguard.model.program import Program
from rankguard.summary.ir import SUBSCRIPT, CallSite, Operand, Segs, Stmt, walk_statements

ADDERS = frozenset(("append", "insert", "extend"))
# Calls that read a list handed to them and keep nothing of it that could add to it later.
_READERS = frozenset(
    (
        "len", "sum", "min", "max", "sorted", "any", "all", "enumerate", "zip", "list",
        "tuple", "set", "isinstance", "iter", "reversed", "print", "str", "repr", "bool",
    )
)  # fmt: skip
_READ_METHODS = frozenset(("extend", "index", "count"))  # `ys.extend(xs)` copies xs's items
_TENSOR_HEADS = frozenset(("torch", "F", "np", "numpy"))  # `torch.cat(xs)`, `np.array(xs)`
_DISPLAYS = frozenset(("tuple", "comp"))


def displayed(tree: Any, env: Env, known: Facts, attrs: Attrs) -> str | None:
    """Where the elements of a list or tuple display or a comprehension live, if they agree;
    an empty display: host data (it holds no element)."""
    if not tree or tree[0] not in _DISPLAYS:
        return None
    if tree[0] == "tuple":
        places = [_element(elt, env, known, attrs) for elt in tree[1]]
        return _agreed(places) if places else SCALAR
    _, element, names, iterable, _tests = tree
    inner = {k: v for k, v in env.items() if k not in names}
    if len(names) == 1:
        place = _element(iterable, env, known, attrs)
        if place is not None:
            inner[names[0]] = place
    else:
        paired = unpacked(iterable, len(names), env, known, attrs)
        for name, place in zip(names, paired or (), strict=False):
            if place is not None:
                inner[name] = place
    return _element(element, inner, known, attrs)


def _element(tree: Any, env: Env, known: Facts, attrs: Attrs) -> str | None:
    if tree and tree[0] == "const":
        return SCALAR  # a Python literal: host data
    if tree and tree[0] in _DISPLAYS:
        return displayed(tree, env, known, attrs)
    return of_tree(tree, env, known, attrs)


def _agreed(places: Iterable[str | None]) -> str | None:
    found: list[str | None] = list(places)
    out = found[0]
    for place in found[1:]:
        out = agree(out, place)
    return out


class ListLocals:
    """Per function, the locals bound to a display or a comprehension that only its own
    statements can reach: no parameter, no `global`, nothing a nested function or a lambda
    reads or binds (it may add to the list out of the walk's sight)."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self._of: dict[str, frozenset[str]] = {}
        self._nested: dict[str, frozenset[str]] | None = None

    def of(self, fn: str) -> frozenset[str]:
        found = self._of.get(fn)
        if found is None:
            found = self._of[fn] = self._find(fn)
        return found

    def _find(self, fn: str) -> frozenset[str]:
        info = self.program.functions[fn].info
        shown: set[str] = set()
        for stmt in walk_statements(info.body):
            one = stmt.kind == "assign" and len(stmt.targets) == 1 and len(stmt.targets[0]) == 1
            if one and stmt.tree and stmt.tree[0] in _DISPLAYS:
                shown.add(stmt.targets[0][0])
        if not shown:
            return frozenset()
        blocked = {p.name.lstrip("*") for p in info.params} | set(info.global_names)
        for stmt in walk_statements(info.body):
            for call in stmt.calls:
                if call.deferred:  # a lambda: runs later, may add to what it names
                    blocked.update(_heads(call))
        blocked |= self._nested_names().get(fn, frozenset())
        return frozenset(shown - blocked)

    def _nested_names(self) -> dict[str, frozenset[str]]:
        """Per function, every name the functions nested in it read, bind or call with."""
        if self._nested is None:
            nested: dict[str, set[str]] = {}
            for inner, record in self.program.functions.items():
                parts = inner.split(".<locals>.")
                if len(parts) < 2:
                    continue
                names: set[str] = set()
                for stmt in walk_statements(record.info.body):
                    names.update(seg[0] for seg in stmt.reads if seg)
                    names.update(t[0] for t in stmt.targets if t)
                    for call in stmt.calls:
                        names |= _heads(call)
                for depth in range(1, len(parts)):
                    nested.setdefault(".<locals>.".join(parts[:depth]), set()).update(names)
            self._nested = {scope: frozenset(names) for scope, names in nested.items()}
        return self._nested


def _heads(call: CallSite) -> set[str]:
    out = {call.target[0]} if call.target else set()
    for operand in call.operands:
        out.update(seg[0] for seg in operand.reads if seg)
    return out


def added(call: CallSite, argument: Any) -> tuple[str, str | None] | None:
    """`xs.append(v)`, `xs[i].extend(vs)`: the local `xs` whose elements the call adds to,
    with where what it adds lives (`argument` places an operand); None for other calls."""
    target = call.target
    if len(target) < 2 or target[-1] not in ADDERS or not all(s == SUBSCRIPT for s in target[1:-1]):
        return None
    positional = [o for o in call.operands if o.keyword is None]
    index = 1 if target[-1] == "insert" else 0
    if len(positional) <= index or len(positional) != len(call.operands):
        return (target[0], None)
    return (target[0], argument(positional[index]))


def handed_on(call: CallSite, names: frozenset[str]) -> set[str]:
    """Which of the list locals `names` the call hands to code that may keep or fill them: any
    argument that reads one, unless the callee only reads (a builtin, a tensor function,
    `ys.extend(xs)`)."""
    if not names or _reads_only(call.target):
        return set()
    return {seg[0] for o in call.operands for seg in o.reads if seg and seg[0] in names}


def _reads_only(target: Segs) -> bool:
    if len(target) == 1:
        return target[0] in _READERS
    return target[0] in _TENSOR_HEADS or target[-1] in _READ_METHODS


def aliased(stmt: Stmt, names: frozenset[str]) -> set[str]:
    """List locals a statement binds elsewhere whole (`ys = xs`, `self.buf = xs`, `d = {"k":
    xs}`, `add = xs.append`, `for ys in (xs, zs)`), or a `yield` hands out: whoever holds it
    may add to the list unseen. Read whole, not through an element or a call that reads it
    (`len(xs)`, `xs.copy()`; a call it is handed to is `handed_on`'s), nor iterated."""
    if not names:
        return set()
    if stmt.yields:
        return {seg[0] for seg in stmt.reads if seg and seg[0] in names}
    tree = stmt.tree
    if stmt.kind not in ("assign", "loop") or not tree:
        return set()
    if stmt.kind == "loop" and tree[0] == "ref" and len(tree[1]) == 1:
        return set()  # `for x in xs`: its elements, one by one
    whole = {
        seg[0]
        for seg in stmt.reads
        if seg and seg[0] in names and (len(seg) == 1 or seg[1] != SUBSCRIPT)
    }
    explained: set[str] = set(_iterated(tree))
    for call in stmt.calls:
        if len(call.target) >= 2:
            explained.add(call.target[0])  # `xs.copy()`: a method of it, called
        explained |= {seg[0] for o in call.operands for seg in o.reads if seg}
    return (whole - explained) | {name for name in _bare_refs(tree) if name in names}


def _iterated(tree: Any) -> Iterable[str]:
    """Names a value tree's comprehensions iterate whole (`[t.item() for t in xs]`)."""
    if not isinstance(tree, tuple) or not tree:
        return
    if tree[0] == "comp" and tree[3][:1] == ("ref",) and len(tree[3][1]) == 1:
        yield tree[3][1][0]
    for part in _parts(tree):
        yield from _iterated(part)


def _bare_refs(tree: Any) -> Iterable[str]:
    """Names a value tree holds whole: not under a reading call, not subscripted, not the
    receiver of a method (a call's own arguments are `handed_on`'s)."""
    if not isinstance(tree, tuple) or not tree:
        return
    tag = tree[0]
    if tag == "ref":
        segs = tree[1]
        if len(segs) == 1:
            yield segs[0]
        return
    if tag == "call":
        return
    if tag == "comp":
        yield from _bare_refs(tree[1])
        return
    if tag == "if":  # its test reads, its sides are the value
        yield from _bare_refs(tree[2])
        yield from _bare_refs(tree[3])
        return
    for part in _parts(tree):
        yield from _bare_refs(part)


def _parts(tree: tuple[Any, ...]) -> Iterable[Any]:
    """A value tree's subtrees: each tuple field that is a tree, and each tree in a field
    that lists them (a call's arguments, a display's items)."""
    for part in tree[1:]:
        if isinstance(part, tuple):
            yield from ((part,) if part and isinstance(part[0], str) else part)


def operand_place(
    operand: Operand, call: CallSite, stmt_calls: Sequence[CallSite], env: Env, attrs: Attrs
) -> str | None:
    """Where one argument lives: a literal is host data, a reference says its own, a call's
    result what that call makes (`analysis.precision.made_by`)."""
    if operand.const is not None:
        return SCALAR
    if operand.ref is not None:
        return of_segs(operand.ref, env, attrs)
    return made_by(operand, call, stmt_calls, env, attrs)


def joined(env: Mapping[str, str], name: str, place: str | None) -> dict[str, str]:
    """`env` with `place` added to what the list `name` holds: agreed, or forgotten."""
    out = dict(env)
    have = out.pop(name, None)
    both = agree(have, place) if have is not None and place is not None else None
    if both is not None:
        out[name] = both
    return out


def _forgotten(state: State, names: Iterable[str]) -> State:
    env = dict(state.env)
    for name in names:
        rebound(env, name)
    return state if len(env) == len(state.env) else state.evolve(env=env)


class ListWalk:
    """The blocking walk's hooks for the list locals of one function (`lists`)."""

    def __init__(self, lists: frozenset[str], attrs: Attrs) -> None:
        self.lists = lists
        self.attrs = attrs

    def bound(self, stmt: Stmt, place: str | None, state: State) -> tuple[str | None, State]:
        """Before an assignment's targets are bound: where a display it binds to a list local
        puts its elements; an element it stores (`xs[i] = v`) added; a list it aliases
        (`ys = xs`) forgotten, and its new name left unplaced."""
        if not self.lists:
            return place, state
        held = aliased(stmt, self.lists)
        if held:
            return None, _forgotten(state, held)
        env, known, attrs = state.env, state.known, self.attrs
        targets = stmt.targets
        if place is None and len(targets) == 1 and targets[0][0] in self.lists:
            place = displayed(stmt.tree, env, known, attrs) if len(targets[0]) == 1 else place
        for target in targets:  # `xs[i] = v`: one more element (a tensor's stays put)
            if target[0] in self.lists and len(target) > 1 and set(target[1:]) == {SUBSCRIPT}:
                element = displayed(("tuple", (stmt.tree,)), env, known, attrs)
                env = joined(env, target[0], element if len(targets) == 1 else None)
        return place, state if env is state.env else state.evolve(env=env)

    def called(self, call: CallSite, stmt_calls: Sequence[CallSite], state: State) -> State:
        """What a call adds to a list (`xs.append(v)`), and the list locals it hands on,
        whose elements are no longer known past it."""
        attrs = self.attrs
        env = bound(call, state.env, state.known, attrs)
        calls = list(stmt_calls)
        adding = added(call, lambda o: operand_place(o, call, calls, env, attrs))
        if adding is not None:
            state = state.evolve(env=joined(state.env, *adding))
        return _forgotten(state, handed_on(call, self.lists))

    def yielded(self, stmt: Stmt, state: State) -> State:
        """Past a `yield` of a list local: whoever advanced the generator may have added to it."""
        return _forgotten(state, aliased(stmt, self.lists)) if self.lists else state
