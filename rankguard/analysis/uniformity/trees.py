"""What part of a statement's value is computed from, read off its tree (`Stmt.tree`).

A statement's labels are everything it reads. Two rules need less: each target of a zipped
loop takes one sequence's items (`zipped.py`), and a conditional whose sides are the same value
does not depend on its test: `tqdm(sizes) if rank == 0 else sizes` iterates the same sizes on
every rank, shown on one (`same_sides`). Both ask what one subtree is computed from, and answer
None wherever the tree does not say all of it (an index, a comprehension, a lambda).

Known limit of `same_sides`: a progress display and its iterable differ in type, so the truth
of the value itself (not of its items) can differ for an empty sequence; the rule accepts that.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from rankguard.analysis.reach import followed
from rankguard.analysis.uniformity.lattice import Env, Labels, merge
from rankguard.summary.ir import CALL, SUBSCRIPT, CallSite, Segs, Stmt, segs_text

if TYPE_CHECKING:
    from rankguard.analysis.uniformity.transfer import Walker

Tree = tuple[Any, ...]
OTHER: Tree = ("other",)


def calls_named(stmt: Stmt, segs: Segs) -> list[CallSite]:
    """The statement's calls written as `segs`."""
    return [c for c in stmt.calls if c.target == segs]


def callee_names(walker: Walker, call: CallSite) -> list[str]:
    """What the call resolves to, or its written name (as `Walker.call` names it)."""
    targets = [t.name for t in followed(walker.f.program, walker.fn, call)]
    return targets or [segs_text(call.target)]


def builtin_call(walker: Walker, stmt: Stmt, tree: Tree, name: str) -> bool:
    """Whether `tree` calls the builtin `name` (not a local or program function so named)
    with no starred argument (`zip(*rows)`: how many sequences is not written)."""
    if not tree or tree[0] != "call" or tree[1] != (name,) or len(tree) != 4:
        return False
    if OTHER in tree[2] or any(keyword == "**" for keyword, _value in tree[3]):
        return False
    calls = calls_named(stmt, tree[1])
    return bool(calls) and all(callee_names(walker, c) == [f"<builtin>.{name}"] for c in calls)


def displayed(walker: Walker, call: CallSite, names: list[str] | None = None) -> bool:
    """Whether `call` wraps a progress display around its first argument, given plainly
    (`tqdm(xs, disable=...)`; not `tqdm(iterable=xs)`, `tqdm(*args)` or `tqdm(total=n)`).
    `names`: what `Walker.call` already resolved an outside call to."""
    operands = call.operands
    if not operands or operands[0].keyword is not None:
        return False
    if any(o.keyword in ("*", "**") for o in operands):
        return False
    if names is None:
        program = walker.f.program
        targets = [t.name for t in followed(program, walker.fn, call)]
        if any(name in program.functions for name in targets):
            return False  # the program's own function of that name
        names = targets or [segs_text(call.target)]
    return walker.catalog.is_display(names)


def same_sides(walker: Walker, stmt: Stmt, env: Env) -> Labels | None:
    """What `a if c else b` is computed from when its sides yield the same items once progress
    displays are taken off (`tqdm(xs) if rank == 0 else xs`): its sides, not its test; None
    otherwise. A test that binds a name (`n if (n := f()) else n`, kept as `other`) is not
    taken off: the sides may read what it bound."""
    tree = stmt.tree
    if tree[:1] != ("if",) or _has_other(tree[1]):
        return None
    if _undisplayed(walker, stmt, tree[2]) != _undisplayed(walker, stmt, tree[3]):
        return None
    return union_of(walker, stmt, env, tree[2:])


def _has_other(tree: Any) -> bool:
    return tree == OTHER or (
        isinstance(tree, tuple) and any(isinstance(t, tuple) and _has_other(t) for t in tree)
    )


def _undisplayed(walker: Walker, stmt: Stmt, tree: Tree) -> Tree:
    while tree and tree[0] == "call" and len(tree) == 4 and tree[2]:
        calls = calls_named(stmt, tree[1])
        if not calls or not all(displayed(walker, c) for c in calls):
            break
        tree = tree[2][0]
    return tree


def tree_labels(
    walker: Walker, stmt: Stmt, env: Env, tree: Tree, size: bool = False
) -> Labels | None:
    """What `tree` is computed from: what each reference it reads holds and what each call it
    makes gave (every call of that name in the statement), or None where the tree does not
    say all of it. `size`: a plain reference is measured (`Walker.ref`), not read."""
    tag = tree[0] if tree else "other"
    if tag == "const":
        return {}
    out: Labels = {}
    if tag in ("ref", "call") and not _calls_before(walker, stmt, tree[1], out):
        return None
    if tag == "ref":
        merge(out, walker.ref(tree[1], env, stmt.line, size))
        return out
    children: tuple[Any, ...]
    if tag == "call":
        calls = calls_named(stmt, tree[1])
        if not calls or any(id(c) not in walker.results for c in calls):
            return None
        for call in calls:
            merge(out, walker.results[id(call)])
        children = tuple(tree[4:])  # a computed receiver (`f(x).tolist()`)
    elif tag in ("tuple", "arith", "and", "or"):
        children = tree[1]
    elif tag == "not":
        children = (tree[1],)
    elif tag == "cmp":
        children = tree[2]
    elif tag == "if":
        children = tree[1:]
    else:
        return None
    labels = union_of(walker, stmt, env, children)
    if labels is None:
        return None
    merge(out, labels)
    return out


def union_of(
    walker: Walker, stmt: Stmt, env: Env, trees: Iterable[Tree], size: bool = False
) -> Labels | None:
    """What several trees are computed from together (`tree_labels`), or None where one of
    them does not say."""
    out: Labels = {}
    for tree in trees:
        labels = tree_labels(walker, stmt, env, tree, size)
        if labels is None:
            return None
        merge(out, labels)
    return out


def _calls_before(walker: Walker, stmt: Stmt, segs: Segs, out: Labels) -> bool:
    """`get_state().rank`: what the call written before the `()` gave, into `out`. False where
    the reference says less than it reads: an index (`xs[rank]`, `pools[i].get()`: the tree
    keeps no subscript) or a second call (`f().g(rank).h`: the inner call is not written)."""
    if SUBSCRIPT in segs or segs.count(CALL) > 1:
        return False
    if CALL not in segs:
        return True
    calls = calls_named(stmt, segs[: segs.index(CALL)])
    if not calls or any(id(c) not in walker.results for c in calls):
        return False
    for call in calls:
        merge(out, walker.results[id(call)])
    return True
