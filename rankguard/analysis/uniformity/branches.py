"""What reaches the statement after an `if`: its sides' environments, each refined by what the
test says on that side.

- A side that returns or raises does not reach it.
- Past `if x is None: return`, `x` is not `None`: what decided that a helper answered `None`
  says nothing more about it (`answers.narrowed`).
- The side of `if g.world_size > 1:` that skips runs only where the group has one rank: every
  rank is its root, and every value is agreed over it (`RootViews.alone`).
- A side only a group's root takes leaves that root's view of the locals (`RootViews.branch`).
- Two `if`s on the same unchanged local take the same side: each side of the second starts from
  where that side of the first left the locals nothing changed since (`Sides.starts`).
"""

from __future__ import annotations

from collections.abc import Callable

from rankguard.analysis.uniformity.answers import falls_through, narrowed
from rankguard.analysis.uniformity.collectives import flag_test
from rankguard.analysis.uniformity.lattice import Env, Labels, join
from rankguard.analysis.uniformity.roots import RootViews
from rankguard.summary.ir import Stmt


class Sides:
    """Walks an `if`'s or a `match`'s sides and joins what reaches past it; remembers, per
    local an `if` tests (`if use:`), how each side left the locals, so that a later `if` on
    the same unchanged local starts each side from that side's locals."""

    def __init__(self, roots: RootViews, none_only: Callable[[str], bool]) -> None:
        self.roots = roots
        self.none_only = none_only
        # local tested -> (its labels past the `if`, the body's locals, the other side's, the join)
        self.tested: dict[str, tuple[Labels, Env, Env, Env]] = {}

    def walk(self, stmt: Stmt, env: Env, block: Callable[[tuple[Stmt, ...], Env], Env]) -> Env:
        if stmt.kind != "if":
            return join([*(block(b, dict(env)) for b in stmt.blocks), env])
        starts = self.starts(stmt, env)
        branches = [block(b, dict(s)) for b, s in zip(stmt.blocks, starts, strict=False)]
        if len(stmt.blocks) < 2:
            branches.append(starts[1])
        raw = list(branches)
        joined = after_if(stmt, branches, self.roots, self.none_only)
        test = _tested(stmt)
        if test is not None and test[0] in joined:
            body, other = raw if test[1] else raw[::-1]
            self.tested[test[0]] = (joined[test[0]], body, other, joined)
        return joined

    def starts(self, stmt: Stmt, env: Env) -> tuple[Env, Env]:
        """Where each side starts: from `env`, or where the same test's sides left the locals
        nothing changed since."""
        test = _tested(stmt)
        seen = self.tested.get(test[0]) if test is not None else None
        if test is None or seen is None or env.get(test[0]) is not seen[0]:
            return env, env
        _then, body, other, joined = seen
        sides = []
        for left in (body, other) if test[1] else (other, body):
            start = dict(env)
            for name, labels in env.items():
                if joined.get(name) is labels and name in left:
                    start[name] = left[name]
            sides.append(start)
        return sides[0], sides[1]


def _tested(stmt: Stmt) -> tuple[str, bool] | None:
    """(local, whether the body runs when it is true) for `if use:` / `if not use:`."""
    cond = stmt.cond
    negated = cond[:1] == ("not",)
    inner = cond[1] if negated else cond
    if inner[:1] == ("ref",) and len(inner[1]) == 1:
        return inner[1][0], not negated
    return None


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
