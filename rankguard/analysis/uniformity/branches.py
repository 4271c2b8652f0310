"""What reaches the statement after an `if`: its sides' environments, each refined by what the
test says on that side.

- A side that returns or raises does not reach it.
- Past `if x is None: return`, `x` is not `None`: what decided that a helper answered `None`
  says nothing more about it (`answers.narrowed`).
- The side of `if g.world_size > 1:` that skips runs only where the group has one rank: every
  rank is its root, and every value is agreed over it (`RootViews.alone`).
- A side only a group's root takes leaves that root's view of the locals (`RootViews.branch`).
"""

from __future__ import annotations

from collections.abc import Callable

from rankguard.analysis.uniformity.answers import falls_through, narrowed
from rankguard.analysis.uniformity.collectives import flag_test
from rankguard.analysis.uniformity.lattice import Env, join
from rankguard.analysis.uniformity.roots import RootViews
from rankguard.summary.ir import Stmt


def after_if(
    stmt: Stmt, branches: list[Env], roots: RootViews, none_only: Callable[[str], bool]
) -> Env:
    """The join of an `if`'s sides (`branches`: the body's, then the other side's)."""
    taken = branches[0]
    if len(branches) == 2:
        branches[1] = roots.alone(stmt, branches[0], branches[1])
        test = flag_test(stmt.cond)
        if test is not None and test[2] and len(test[0]) == 1:
            side = branches[0 if test[1] else 1]
            if test[0][0] in side:
                side[test[0][0]] = narrowed(side[test[0][0]], none_only)
        blocks = (*stmt.blocks, ())[:2]
        branches = [
            e for e, b in zip(branches, blocks, strict=True) if falls_through(b)
        ] or branches
    joined = join(branches)
    if stmt.blocks:
        roots.branch(stmt.cond, taken, joined)
    return joined
