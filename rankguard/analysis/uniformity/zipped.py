"""What each target of a loop over `zip(...)` or `enumerate(...)` holds.

Taken whole, `for req, tok in zip(reqs, toks)` gives `req` what `toks` holds too, so one
rank-local sequence zipped beside the requests reached every request's state. `zip` pairs items
by position and `enumerate` puts a count before each item, so where the targets take the pairs
apart one value each, each target holds what its own sequence holds, and an `enumerate` count
holds nothing that varies (it is the item's position). How often the loop runs is the loop's
condition, read whole as before (`zip` stops at the shortest sequence).

The targets are flattened by the summary (`for i, (a, b) in ...` has targets `i, a, b`), so the
mapping is taken only where it cannot be wrong: one target per zipped sequence, inside at most
one `enumerate`. A target that unpacks an item further makes the counts differ, and the loop is
read whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rankguard.analysis.uniformity.lattice import Env, Labels
from rankguard.analysis.uniformity.trees import Tree, builtin_call, tree_labels
from rankguard.summary.ir import Stmt

if TYPE_CHECKING:
    from rankguard.analysis.uniformity.transfer import Walker

_COUNT: Tree = ("const", 0)  # an `enumerate` count: a position, the same on every rank


def zipped_items(walker: Walker, stmt: Stmt, env: Env) -> list[Labels] | None:
    """One value per target of the loop `stmt` when it iterates builtin `zip`/`enumerate`
    and the targets take its items apart one value each; None otherwise."""
    parts = _parts(walker, stmt, stmt.tree)
    if parts is None or len(parts) != len(stmt.targets):
        return None
    out: list[Labels] = []
    for part in parts:
        labels = tree_labels(walker, stmt, env, part)
        if labels is None:
            return None
        out.append(labels)
    return out


def _parts(walker: Walker, stmt: Stmt, tree: Tree) -> list[Tree] | None:
    """The values one item of `tree` is made of, in order: `enumerate(zip(a, b))` gives the
    count, `a`, `b`."""
    if builtin_call(walker, stmt, tree, "zip"):
        return list(tree[2])
    if builtin_call(walker, stmt, tree, "enumerate") and len(tree[2]) == 1:
        inner = tree[2][0]
        zipped = builtin_call(walker, stmt, inner, "zip")
        return [_COUNT, *(inner[2] if zipped else (inner,))]
    return None
