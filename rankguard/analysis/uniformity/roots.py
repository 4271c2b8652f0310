"""A broadcast hands every rank of its group the root's value: what the root holds, by branch.

A value shared in steps (first along one group by the roots of a second group only, then along
each group of the second from its root, as serving frameworks share a data-parallel shard's
requests across its context- and tensor-parallel ranks) is the same over both groups: the second
step's root took the first step. Path-insensitively, the join after `if <root test>:` mixes the
root's value with what the other ranks hold, and the second step would look agreed over its own
group only. So a branch taken only by the root of a group (`g.rank_in_group == 0`,
`get_tp_rank() == 0`, alone or in a conjunction) leaves a view: each local as the branch left
it. A later broadcast over that group, from its first rank (no `src`, `src=0`, `src=g.ranks[0]`,
`src=g.first_rank`), sends a local that the join has not touched since as the root holds it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rankguard.analysis.uniformity.collectives import CollectiveCalls
from rankguard.analysis.uniformity.lattice import Env, Labels
from rankguard.catalogs.rank_sources import RankSourceCatalog
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord
from rankguard.summary.conditions import Cond
from rankguard.summary.ir import CALL, SUBSCRIPT, CallSite, Operand, Stmt, walk_statements

_FIRST = frozenset({"ranks", "first_rank"})  # the group's first member names its root


class RootViews:
    """Per group dimension: locals as the root's branch left them, and the join beside them."""

    def __init__(
        self,
        catalog: RankSourceCatalog,
        calls: CollectiveCalls,
        record: FunctionRecord,
        over: Callable[[tuple[str, ...], int, str, str, Labels], Labels],
        flags: Mapping[str, tuple[str, ...]],
    ) -> None:
        self.flags = flags  # attributes set only to "some group has ranks" (`size_flags`)
        self.catalog = catalog
        self.calls = calls
        self.record = record
        self.over = over  # `Walker.over`: a value agreed over groups
        self.views: dict[str, dict[str, tuple[Labels, Labels]]] = {}

    def alone(self, stmt: Stmt, taken: Env, skipped: Env) -> Env:
        """The locals on the side of `if <g>.world_size > 1:` that skips it: there the group
        has one rank, every rank is its root (it holds the root's view) and every value is
        agreed over it (a tuple's and a container's items too); so for each group of a disjunction
        of such tests, or of a flag the program sets to one (`shared_groups`). Any other `if`:
        the locals unchanged."""
        groups = shared_groups(stmt.cond, self.catalog, self.calls, self.record, self.flags)
        if not groups:
            return skipped
        view = self.views.get(groups[0], {}) if len(groups) == 1 else {}
        out = dict(skipped)
        for name, labels in skipped.items():
            if "." in name or name.endswith("#") or taken.get(name) is labels:
                continue
            held = view.get(name)
            if held is not None and held[1] is labels:
                labels = held[0]
            out[name] = self.over(groups, stmt.line, name, f"alone:{name}", labels)
        return out

    def branch(self, cond: Cond, taken: Env, joined: Env) -> None:
        """After `if cond:`: when only a group's root takes it, keep what it left."""
        group = self.root_of(cond)
        if group is None:
            return
        view = self.views.setdefault(group, {})
        for name, labels in taken.items():
            if "." not in name and not name.endswith("[]") and name in joined:
                view[name] = (labels, joined[name])

    def root_of(self, cond: Cond) -> str | None:
        """The group whose root alone passes the test (`g.rank_in_group == 0`), if any."""
        if cond[:1] == ("and",):
            return next((g for part in cond[1] if (g := self.root_of(part)) is not None), None)
        if cond[:1] != ("cmp",) or tuple(cond[1]) != ("==",):
            return None
        left, right = cond[2]
        if left == ("const", 0):
            left, right = right, left
        if right != ("const", 0) or left[:1] not in (("ref",), ("call",)):
            return None
        segs = tuple(s for s in left[1] if s != CALL)
        if not segs:
            return None
        last = segs[-1]
        if not (self.catalog.is_rank_name(last) or self.catalog.is_rank_call(last)):
            return None
        owners = self.calls.names.ref_groups(self.record, left[1][:-1]) if len(segs) > 1 else set()
        if len(owners) == 1:
            return next(iter(owners))
        return self.catalog.dimension_of_rank(segs)

    def sent(
        self, call: CallSite, operands: list[tuple[Operand, Labels]], env: Env, targets: list[str]
    ) -> list[tuple[Operand, Labels]]:
        """The operands as a broadcast's root sends them: a local the root's branch left and
        nothing touched since is what the root holds."""
        if (
            not self.views
            or not self._from_first(call)
            or not self.calls.broadcast(self.record, call, targets)
        ):
            return operands
        groups = self.calls.names.named_groups(self.record, call)
        view = self.views.get(next(iter(groups))) if len(groups) == 1 else None
        if not view:
            return operands
        out = []
        for operand, labels in operands:
            name = operand.ref[0] if operand.ref and len(operand.ref) == 1 else None
            held = view.get(name) if name is not None else None
            out.append((operand, held[0] if held and env.get(name) is held[1] else labels))
        return out

    @staticmethod
    def _from_first(call: CallSite) -> bool:
        src = next((o for o in call.operands if o.keyword == "src"), None)
        return src is None or src.const == "0" or any(_first(ref) for ref in src.reads)


def _first(ref: Any) -> bool:
    return bool(_FIRST & set(ref))


def shared_groups(
    cond: Cond,
    catalog: RankSourceCatalog,
    calls: CollectiveCalls,
    record: FunctionRecord,
    flags: Mapping[str, tuple[str, ...]],
) -> tuple[str, ...]:
    """The groups a test says have more than one rank: `g.world_size > 1` (`!= 1`,
    `get_tp_world_size() > 1`), a disjunction of such tests, or a flag (`flags`: attributes the
    program only ever sets to one, `self.needs_sync = pp_size > 1 or tp_size > 1`); () when it
    says anything else."""
    if cond[:1] == ("or",):
        parts = [shared_groups(part, catalog, calls, record, flags) for part in cond[1]]
        return tuple(sorted({g for part in parts for g in part})) if all(parts) else ()
    if cond[:1] == ("ref",) and cond[1]:
        return flags.get(cond[1][-1], ())
    if cond[:1] != ("cmp",) or tuple(cond[1]) not in ((">",), ("!=",)):
        return ()
    left, right = cond[2]
    if right != ("const", 1) or left[:1] not in (("ref",), ("call",)):
        return ()
    segs = tuple(s for s in left[1] if s != CALL)
    if not segs or not catalog.is_group_size(segs[-1]):
        return ()
    owners = calls.names.ref_groups(record, left[1][:-1]) if len(segs) > 1 else set()
    dimension = next(iter(owners)) if len(owners) == 1 else catalog.dimension_of_rank(segs)
    return (dimension,) if dimension else ()


def size_flags(
    program: Program, catalog: RankSourceCatalog, calls: CollectiveCalls
) -> dict[str, tuple[str, ...]]:
    """Attributes every store sets to a test that some groups have more than one rank, all to
    the same groups (`self.needs_sync = pp_size > 1 or tp_size > 1`): skipping `if x.flag:`,
    each of them has one rank."""
    found: dict[str, set[tuple[str, ...]]] = {}
    for record in program.functions.values():
        for stmt in walk_statements(record.info.body):
            if stmt.kind != "assign":
                continue
            for target in stmt.targets:
                if len(target) < 2 or CALL in target or SUBSCRIPT in target:
                    continue
                alone = len(stmt.targets) == 1 and bool(stmt.tree)
                groups = shared_groups(stmt.tree, catalog, calls, record, {}) if alone else ()
                found.setdefault(target[-1], set()).add(groups)
    return {name: next(iter(g)) for name, g in found.items() if len(g) == 1 and () not in g}
