"""What part of a statement's value is computed from, read off its tree (`Stmt.tree`).

A statement's labels are everything it reads. Two rules need less: each target of a zipped
loop takes one sequence's items (`zipped.py`), and a conditional whose sides are the same value
does not depend on its test: `tqdm(list(sizes)) if rank == 0 else sizes` iterates the same
sizes on every rank, shown on one (`same_items`). Both ask what one subtree is computed from.

Known limit of `same_items`: the two sides may differ in type (a progress bar, a list), so
`len()` or the truth of the value itself can differ where the items cannot; only an empty
sequence tells them apart, and the rule accepts that.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rankguard.analysis.reach import followed
from rankguard.analysis.uniformity.lattice import Env, Labels, merge
from rankguard.summary.ir import CALL, CallSite, Segs, Stmt, segs_text

if TYPE_CHECKING:
    from rankguard.analysis.uniformity.transfer import Walker

Tree = tuple[Any, ...]


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
    if any(arg[:1] == ("other",) for arg in tree[2]):
        return False
    calls = calls_named(stmt, tree[1])
    return bool(calls) and all(callee_names(walker, c) == [f"<builtin>.{name}"] for c in calls)


def same_items(walker: Walker, stmt: Stmt, one: Tree, other: Tree) -> bool:
    """Whether two trees yield the same items once the wrappers around them are taken off
    (`tqdm(list(xs))` and `xs`: `RankSourceCatalog.is_wrapper`)."""
    return _unwrapped(walker, stmt, one) == _unwrapped(walker, stmt, other) != ("other",)


def _unwrapped(walker: Walker, stmt: Stmt, tree: Tree) -> Tree:
    catalog = walker.catalog
    while tree and tree[0] == "call" and len(tree) == 4 and tree[2]:
        calls = calls_named(stmt, tree[1])
        if not calls or not all(catalog.is_wrapper(callee_names(walker, c)) for c in calls):
            break
        tree = tree[2][0]
    return tree


def tree_labels(walker: Walker, stmt: Stmt, env: Env, tree: Tree) -> Labels | None:
    """What `tree` is computed from: what each reference it reads holds and what each call it
    makes gave (every call of that name in the statement), or None where the tree does not
    say (a comprehension, a lambda, anything kept as `other`)."""
    tag = tree[0] if tree else "other"
    if tag == "const":
        return {}
    out: Labels = {}
    if tag in ("ref", "call") and not _calls_before(walker, stmt, tree[1], out):
        return None
    if tag == "ref":
        merge(out, walker.ref(tree[1], env, stmt.line))
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
    for child in children:
        labels = tree_labels(walker, stmt, env, child)
        if labels is None:
            return None
        merge(out, labels)
    return out


def _calls_before(walker: Walker, stmt: Stmt, segs: Segs, out: Labels) -> bool:
    """`get_state().rank`, `f().g()`: what the call written before the first `()` gave, into
    `out`; False when the statement has no such call walked."""
    if CALL not in segs:
        return True
    calls = calls_named(stmt, segs[: segs.index(CALL)])
    if not calls or any(id(c) not in walker.results for c in calls):
        return False
    for call in calls:
        merge(out, walker.results[id(call)])
    return True
