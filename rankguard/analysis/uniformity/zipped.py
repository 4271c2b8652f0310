"""What each target of a loop over `zip(...)` or `enumerate(...)` holds.

Taken whole, `for req, tok in zip(reqs, toks)` gives `req` what `toks` holds too, so one
rank-local sequence zipped beside the requests reached every request's state. `zip` pairs items
by position and `enumerate` puts a count before each item, so where the targets take the pairs
apart one value each, each target holds what its own sequence holds, and the count what decides
how many items there are (its value inside the loop is the item's position; after the loop, the
length). How often the loop runs is the loop's condition, read whole as before.

The summary flattens the targets (`for i, (a, b) in ...` has targets `i, a, b`), so the mapping
is taken only where the numbers agree: one target per zipped sequence, inside at most one
`enumerate`. A target that unpacks an item further makes the numbers differ, and the loop is
read whole. Known limit: a starred target beside a nested one can make them agree again
(`for (a, b), *rest in zip(xs, ys, zs)`: `rest` is mapped to `zs`, but holds `ys`' item too);
the flattened targets do not say which target is starred.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rankguard.analysis.uniformity.lattice import Env, Labels, merge
from rankguard.analysis.uniformity.trees import Tree, builtin_call, tree_labels, union_of
from rankguard.summary.ir import Stmt

if TYPE_CHECKING:
    from rankguard.analysis.uniformity.transfer import Walker


def loop_items(walker: Walker, stmt: Stmt, env: Env, header: Labels) -> list[Labels]:
    """What each target of the loop `stmt` holds: its own sequence's items where the targets
    take a zip apart, else every target what the loop iterates (a plain reference's items, or
    whatever the `header` read)."""
    apart = zipped_items(walker, stmt, env)
    if apart is not None:
        return apart
    items = walker.ref(stmt.truths[0], env, stmt.line) if stmt.truths else header
    return [items] * len(stmt.targets)


def zipped_items(walker: Walker, stmt: Stmt, env: Env) -> list[Labels] | None:
    """One value per target of the loop `stmt` when it iterates builtin `zip`/`enumerate`
    and the targets take its items apart one value each; None otherwise."""
    tree = stmt.tree
    if builtin_call(walker, stmt, tree, "zip"):
        items = _each(walker, stmt, env, tree[2])
    elif builtin_call(walker, stmt, tree, "enumerate") and len(tree[2]) == 1:
        inner = tree[2][0]
        seqs = inner[2] if builtin_call(walker, stmt, inner, "zip") else (inner,)
        count = _count(walker, stmt, env, seqs, tuple(value for _k, value in tree[3]))
        each = _each(walker, stmt, env, seqs)
        items = None if count is None or each is None else [count, *each]
    else:
        return None
    return items if items is not None and len(items) == len(stmt.targets) else None


def _each(walker: Walker, stmt: Stmt, env: Env, trees: tuple[Tree, ...]) -> list[Labels] | None:
    out = [tree_labels(walker, stmt, env, tree) for tree in trees]
    return None if None in out else [labels for labels in out if labels is not None]


def _count(
    walker: Walker, stmt: Stmt, env: Env, seqs: tuple[Tree, ...], start: tuple[Tree, ...]
) -> Labels | None:
    """An `enumerate` count: what decides how many items the sequences hold (a plain
    reference is measured, not read), and where the count starts (`start=`)."""
    sizes = union_of(walker, stmt, env, seqs, size=True)
    starts = union_of(walker, stmt, env, start)
    if sizes is None or starts is None:
        return None
    merge(sizes, starts)
    return sizes
