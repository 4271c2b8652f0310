"""`x is None` tests existence, not contents: in a test, and in a call's argument.

`f(a if x is None else b)` hands `f` either `a` or `b`, as `x` exists or not, so the argument
holds what decided whether `x` exists (`existence`), not what `x` holds. An argument reads a
reference only so when every read of it there is such a test: counted in the argument's tree
(`Stmt.tree`, `Stmt.cond`) when its call's is known there, else in the whole statement. A
reference also read as data (`x[0] if x is not None else None`) is read whole. A local bound to
a conditional (`x = a if rank == 0 else None`) exists as its test decides (`deciding`), and a
helper that returns another's answer (`return pool.alloc(n)`) hands on what decided it
(`handed`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from rankguard.analysis.reach import followed
from rankguard.analysis.uniformity.lattice import Env, Labels, merge, union
from rankguard.model.program import Program
from rankguard.summary.ir import CallSite, Segs, Stmt

Reader = Callable[[Segs], Labels]  # the labels a reference holds where it is read


def existence(held: Labels, ref: Segs = (), env: Env | None = None) -> Labels:
    """What `x is None` reads of `x`: what decided whether a helper's `return` answered `None`
    (`answers.py`), not what `x` holds; for a local bound to a conditional (`x = a if c else
    None`), also what decided which side it holds (`deciding`, kept under `x?`)."""
    out = {k: s for k, s in held.items() if isinstance(k, tuple) and k[0] == "decided"}
    if env is not None and len(ref) == 1:
        merge(out, env.get(f"{ref[0]}?", {}))
    return out


def deciding(stmt: Stmt, env: Env, read: Reader, results: dict[int, Labels], whole: Labels) -> None:
    """After `x = a if c else b`: what decides whether `x` exists, kept under `x?` (`c`, and what
    decides whether the side it took exists); `whole`: all the value reads."""
    if stmt.tree[:1] != ("if",) or len(stmt.targets) != 1 or len(stmt.targets[0]) != 1:
        return
    decides = _Decides(stmt, env, read, results, whole)
    env[f"{stmt.targets[0][0]}?"] = decides.exists(stmt.tree)


def handed(
    stmt: Stmt, labels: Labels, results: dict[int, Labels], program: Program, fn: str
) -> Labels:
    """What a `return` hands on of a helper's answer, so its caller's `x is None` reads it:
    `return g(...)` hands on what decided `g`'s answer, `return x` what `x is None` reads here
    (`results`: what each of its calls gave, in `fn`). Anything else (`return sum(g())`,
    `return x + 1`) is a value the program builds, `None` by no helper's decision."""
    tree = stmt.tree
    if tree[:1] == ("ref",):
        return existence(labels)
    call = next((c for c in stmt.calls if tree[:1] == ("call",) and c.target == tree[1]), None)
    if call is None:
        return {}
    targets = {("decided", t.name) for t in followed(program, fn, call)}
    return {k: s for k, s in results.get(id(call), {}).items() if k in targets}


def tested(stmt: Stmt) -> dict[int, frozenset[Segs]]:
    """Per argument (by `id`) of the statement's calls, the references it only compares with
    `None`."""
    trees = Counter(tree[1] for tree in _calls(stmt.tree, stmt.cond))
    whole = _only_tested(Counter(stmt.existence), stmt.reads)
    out: dict[int, frozenset[Segs]] = {}
    targets = Counter(call.target for call in stmt.calls)
    for call in stmt.calls:
        args = _arguments(call, stmt) if trees[call.target] == targets[call.target] == 1 else None
        for index, operand in enumerate(call.operands):
            if args is None:
                out[id(operand)] = whole
            else:
                found = Counter(ref for ref in _tests(args[index]))
                out[id(operand)] = _only_tested(found, operand.reads)
    return out


class _Decides:
    """What a conditional's test reads, and what decides whether each side exists."""

    def __init__(
        self, stmt: Stmt, env: Env, read: Reader, results: dict[int, Labels], whole: Labels
    ) -> None:
        self.stmt, self.env, self.read, self.results, self.whole = stmt, env, read, results, whole

    def exists(self, tree: Any) -> Labels:
        tag = tree[0] if tree else ""
        if tag == "if":
            return union((self.reads(tree[1]), self.exists(tree[2]), self.exists(tree[3])))
        if tag in ("const", "tuple", "literal"):
            return {}  # a literal is `None` or not as written
        if tag == "ref":
            return existence(self.read(tree[1]), tree[1], self.env)
        return existence(self.call(tree) if tag == "call" else self.whole)

    def reads(self, tree: Any) -> Labels:
        tag = tree[0] if tree else ""
        if tag == "const":
            return {}
        if tag == "ref":
            return self.read(tree[1])
        if tag == "call":
            return self.call(tree)
        if tag in ("and", "or", "not", "cmp"):
            return union(self.reads(child) for child in _children(tree))
        return self.whole

    def call(self, tree: Any) -> Labels:
        calls = [c for c in self.stmt.calls if c.target == tree[1]]
        return self.results.get(id(calls[0]), self.whole) if len(calls) == 1 else self.whole


def _only_tested(tests: Counter[Segs], reads: tuple[Segs, ...]) -> frozenset[Segs]:
    counted = Counter(reads)
    return frozenset(ref for ref, count in tests.items() if counted[ref] <= count)


def _arguments(call: CallSite, stmt: Stmt) -> list[Any] | None:
    """The trees of the call's arguments, in its operands' order, when they match them."""
    tree = next(t for t in _calls(stmt.tree, stmt.cond) if t[1] == call.target)
    args = [*tree[2], *(value for _name, value in tree[3])]
    keywords = [None] * len(tree[2]) + [name for name, _value in tree[3]]
    if keywords != [operand.keyword for operand in call.operands]:
        return None  # unpacked (`*a`, `**kw`) or otherwise not one for one
    return args


def _calls(*trees: Any) -> Iterator[Any]:
    """Every call in the trees, nested ones too."""
    for tree in trees:
        if tree[:1] == ("call",):
            yield tree
        yield from _calls(*_children(tree))


def _tests(tree: Any) -> Iterator[Segs]:
    """References an argument's tree compares with `None`, outside the calls it makes (their
    arguments are their own)."""
    if tree[:1] == ("call",):
        return
    if tree[:1] == ("cmp",) and tuple(tree[1]) in (("is",), ("is not",)):
        refs = [o[1] for o in tree[2] if o[0] == "ref"]
        if ("const", None) in tree[2] and len(refs) == 1:
            yield refs[0]
    for child in _children(tree):
        yield from _tests(child)


def _children(tree: Any) -> tuple[Any, ...]:
    """The trees right under one (`summary.conditions`; a reference's names are not trees)."""
    tag = tree[0] if tree else ""
    if tag == "call":
        return (*tree[2], *(value for _name, value in tree[3]), *tree[4:])
    if tag in ("and", "or", "tuple", "arith"):
        return tree[1]
    if tag == "cmp":
        return tree[2]
    if tag == "comp":
        return (tree[1], tree[3], *tree[4])
    if tag in ("not", "if"):
        return tree[1:]
    return ()  # ref, const, literal, other
