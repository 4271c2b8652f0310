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

from typing import TYPE_CHECKING, Any

from rankguard.analysis.reach import followed
from rankguard.analysis.uniformity.lattice import Env, Labels, merge
from rankguard.summary.ir import Stmt

if TYPE_CHECKING:
    from rankguard.analysis.uniformity.transfer import Walker

Tree = tuple[Any, ...]
_COUNT = ("const", 0)  # an `enumerate` count: a position, the same on every rank


def zipped_items(walker: Walker, stmt: Stmt, env: Env) -> list[Labels] | None:
    """One value per target of the loop `stmt` when it iterates builtin `zip`/`enumerate`
    and the targets take its items apart one value each; None otherwise."""
    parts = _parts(walker, stmt, env, stmt.tree)
    if parts is None or len(parts) != len(stmt.targets):
        return None
    out: list[Labels] = []
    for part in parts:
        labels = _labels(walker, stmt, env, part)
        if labels is None:
            return None
        out.append(labels)
    return out


def _parts(walker: Walker, stmt: Stmt, env: Env, tree: Tree) -> list[Tree] | None:
    """The values one item of `tree` is made of, in order: `enumerate(zip(a, b))` gives the
    count, `a`, `b`."""
    if _builtin(walker, stmt, env, tree, "zip"):
        return list(tree[2])
    if _builtin(walker, stmt, env, tree, "enumerate") and len(tree[2]) == 1:
        inner = tree[2][0]
        zipped = _builtin(walker, stmt, env, inner, "zip")
        return [_COUNT, *(inner[2] if zipped else (inner,))]
    return None


def _builtin(walker: Walker, stmt: Stmt, env: Env, tree: Tree, name: str) -> bool:
    """Whether `tree` calls the builtin `name` (not a local, a global or a program function
    of that name) with positional arguments only, besides keywords."""
    if not tree or tree[0] != "call" or tree[1] != (name,) or len(tree) != 4 or name in env:
        return False
    if any(isinstance(a, tuple) and a[:1] == ("other",) for a in tree[2]):
        return False  # `zip(*rows)`: how many sequences is not written
    program = walker.f.program
    if walker.f.is_global(walker.record.module, name):
        return False
    calls = [c for c in stmt.calls if c.target == (name,)]
    return bool(calls) and not any(
        t.name in program.functions for c in calls for t in followed(program, walker.fn, c)
    )


def _labels(walker: Walker, stmt: Stmt, env: Env, tree: Tree) -> Labels | None:
    """What `tree` is computed from: every reference it reads and every call it makes (what
    each call of that name in the statement gave), or None where the tree does not say."""
    tag = tree[0] if tree else "other"
    if tag == "const":
        return {}
    if tag == "ref":
        return walker.ref(tree[1], env, stmt.line)
    children: tuple[Any, ...]
    out: Labels = {}
    if tag == "call":
        calls = [c for c in stmt.calls if c.target == tree[1]]
        if not calls or any(id(c) not in walker.results for c in calls):
            return None
        for call in calls:
            merge(out, walker.results[id(call)])
        children = (*tree[2], *(value for _name, value in tree[3]), *tree[4:])
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
        labels = _labels(walker, stmt, env, child)
        if labels is None:
            return None
        merge(out, labels)
    return out
