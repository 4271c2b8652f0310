"""Which groups a collective call runs over, named by their dimensions.

A group is named by its dimension (`catalogs/rank_sources.toml`): what a call's receiver or
group argument says (`get_tp_group().all_gather(...)`, `group=self.tp_cpu_group`), through the
locals, fields and constructor keywords it was bound to; else the primitive's: the default group
(`world`) when it passes none, `None` or the catalog's default handle (`dist.group.WORLD`); a
parameter or a parameter's field (`group=self.device_group` in a group coordinator's method) is
what the callers along the chain bound it to (the receiver of `get_tp_group().all_reduce(x)`,
an argument, a field every store binds to `get_pp_group()`). Unknown (`()`) when none of them
names it: a group we cannot name is any group.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import cast

from rankguard.analysis.collectives import CollectiveSite
from rankguard.analysis.reach import followed
from rankguard.catalogs.rank_sources import RankSourceCatalog
from rankguard.core.chains import Hop
from rankguard.model.binding import bind, receiver_bound
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord
from rankguard.summary.ir import CALL, CallSite, Segs, segs_text, walk_calls, walk_statements

Groups = tuple[str, ...]  # the dimensions of a call's groups, sorted; () when one is unknown
Entered = Callable[[FunctionRecord, CallSite], list[tuple[CollectiveSite, list[Hop]]]]
# Chain edges whose call binds the callee's parameters as written (a plain call, a method
# found on a subclass or as the only one so named, an awaited coroutine).
_BINDING_EDGES = frozenset({None, "override", "subclass", "fallback", "suspended"})


class GroupNames:
    """The groups of each collective call (`entered`: the collectives a call enters, with
    chains), cached per call."""

    def __init__(self, program: Program, catalog: RankSourceCatalog, entered: Entered) -> None:
        self.program = program
        self.catalog = catalog
        self.entered = entered
        self._groups: dict[int, Groups] = {}
        self._bindings: dict[str, dict[str, list[Segs]]] = {}
        self._stores: dict[str, dict[str, list[Segs | None]]] = {}

    def groups(self, record: FunctionRecord, call: CallSite) -> Groups:
        """The dimensions of the groups the call's collectives run over, sorted; () when one
        of them cannot be named."""
        key = id(call)
        if key not in self._groups:
            named = self.named_groups(record, call)
            self._groups[key] = (
                tuple(sorted(named)) if named else self._entered_groups(record, call)
            )
        return self._groups[key]

    def _entered_groups(self, record: FunctionRecord, call: CallSite) -> Groups:
        found: set[str] = set()
        for site, chain in self.entered(record, call):
            holder = self.program.functions.get(site.function)
            primitive = next(
                (
                    c
                    for c in walk_calls(holder.info.body if holder else ())
                    if c.line == site.line
                    and any(t.name == site.callee for t in followed(self.program, site.function, c))
                ),
                None,
            )
            dims = self._primitive_groups(holder, primitive) if holder and primitive else set()
            if not dims and primitive is not None:
                dims = self._bound_by_callers(call, chain, primitive)
            if not dims:
                return ()
            found |= dims
        return tuple(sorted(found))

    def _primitive_groups(self, holder: FunctionRecord, primitive: CallSite) -> set[str]:
        """The groups a primitive names (`named_groups`), else the default group when it passes
        none. Empty: a group we cannot name."""
        named = self.named_groups(holder, primitive)
        if named:
            return named
        group = primitive.operand("group")
        return {"world"} if group is None or group.const == "None" else set()

    def _bound_by_callers(self, call: CallSite, chain: list[Hop], primitive: CallSite) -> set[str]:
        """The group a primitive passes as a parameter or a parameter's field
        (`group=self.device_group` in a coordinator's method), named by what the callers along
        the chain bound that parameter to: the receiver of `get_tp_group().all_reduce(x)`, the
        argument of `reduce_over(get_tp_group(), x)`, a field `self.stage` that every store
        binds to `get_pp_group()`. Empty (any group) when a caller binds it to what we cannot
        name, the callee or a closure in it may bind the parameter again (`Program.binds`: a
        walrus, a `nonlocal` rebinding too), or the chain runs through a call that binds no
        parameter plainly."""
        operand = primitive.operand("group")
        ref = operand.ref if operand is not None else None
        for index in range(len(chain) - 1, 0, -1):
            callee = self.program.functions.get(chain[index].function)
            hop = chain[index - 1]
            caller = self.program.functions.get(hop.function)
            if (
                not ref
                or callee is None
                or caller is None
                or hop.edge not in _BINDING_EDGES
                or self.program.binds(callee.qualname, ref[0])
            ):
                return set()
            calls = [call] if index == 1 else self._calls_into(caller, hop.line, callee)
            bound = {_argument(callee, c, ref[0]) for c in calls}
            if len(bound) != 1 or None in bound:
                return set()
            ref = (*cast(Segs, bound.pop()), *ref[1:])
            named = self.ref_groups(caller, ref)
            if named:
                return named
        return set()

    def _calls_into(
        self, caller: FunctionRecord, line: int, callee: FunctionRecord
    ) -> list[CallSite]:
        """The calls on `line` of `caller` that may run `callee`."""
        return [
            c
            for c in walk_calls(caller.info.body)
            if c.line == line
            and any(t.name == callee.qualname for t in followed(self.program, caller.qualname, c))
        ]

    def rank_dimension(self, holder: FunctionRecord, segments: Segs) -> str:
        """The dimension of a rank id: the one its name says, else its owner's group, by what a
        local or field is bound to before its name (`tp_group.rank_in_group` after `tp_group =
        get_attn_tp_group()`, `get_pp_group().rank_in_group`); "" (any) when none says."""
        dimension = self.catalog.dimension_of_rank(segments[-1:])
        owners = self.ref_groups(holder, segments[:-1]) if not dimension else set()
        if len(owners) == 1:
            dimension = next(iter(owners))
        return dimension or self.catalog.dimension_of_rank(segments) or ""

    def named_groups(self, holder: FunctionRecord, call: CallSite) -> set[str]:
        """The groups a call names by its receiver or an argument (`get_tp_group().all_gather`,
        `group=self.tp_cpu_group`), through the locals they are bound to in `holder`
        (`tp_group = get_attn_tp_group()`, `for group in (self.cp_group, self.tp_group)`)."""
        for ref in [call.target[:-1]] + [ref for o in call.operands for ref in o.reads]:
            found = self.ref_groups(holder, ref)
            if found:
                return found
        return set()

    def ref_groups(self, holder: FunctionRecord, ref: Segs) -> set[str]:
        values = self._locals(holder).get(ref[0]) if ref else None
        if values:  # the local's name says nothing: what it is bound to does
            found = {self._group_of([(*value, *ref[1:])]) for value in values}
            if None not in found:
                return cast(set[str], found)
        bound = self._bound(holder, ref)
        if bound is not None:  # the field's name says less than what it was bound to
            return {bound}
        named = self._group_of([ref])
        if named is not None:
            return {named}
        return {"world"} if self._default_group(holder, ref) else set()

    def _default_group(self, holder: FunctionRecord, ref: Segs) -> bool:
        """`dist.group.WORLD`: a handle of the default group (the catalog's, by resolved name)."""
        if not ref or ref[-1] not in self._world_last:
            return False
        return any(
            value.kind == "external" and value.name in self.catalog.world_groups
            for value in self.program.resolver.evaluate(holder, ref)
        )

    @cached_property
    def _world_last(self) -> frozenset[str]:
        return frozenset(name.rsplit(".", 1)[-1] for name in self.catalog.world_groups)

    def _bound(self, holder: FunctionRecord, ref: Segs) -> str | None:
        """`self.g` (or its handle, `self.g.device_group`) that every store in the holder's
        class binds to one named group: through the field a constructor keyword binds
        (`Params(tp_cache_group=get_dp_tp_group()...)`, then `self.tp_group =
        params.tp_cache_group`), else a group handle the store reads or a getter it calls
        (`self.stage = get_pp_group()`)."""
        if len(ref) not in (2, 3) or ref[0] != "self" or holder.info.cls is None:
            return None
        if len(ref) == 3 and (not self._handle(ref[2]) or self.catalog.dimension_of_group(ref[2])):
            return None  # not a handle of the object's group, or one named for its own group
        stores = self._class_stores(f"{holder.module}.{holder.info.cls}").get(ref[1])
        dims = {self._keyword_group(value) or self._stored_group(value) for value in stores or ()}
        return dims.pop() if len(dims) == 1 else None

    def _stored_group(self, value: Segs | None) -> str | None:
        """The group a stored handle (`x.tp_cpu_group`) or a getter's result (`get_pp_group()`)
        names; None for any other value."""
        if not value or not self._handle(value[-2] if value[-1] == CALL else value[-1]):
            return None
        return self._group_of([value])

    def _handle(self, name: str) -> bool:
        """Named like a group handle (`device_group`, `get_pp_group`, `tp_cpu_group`)."""
        return self.catalog.group_suffix.search(name.lstrip("_")) is not None

    def _keyword_group(self, value: Segs | None) -> str | None:
        if value is None or len(value) < 2 or value[-1] not in self.keyword_groups:
            return None
        return self.keyword_groups[value[-1]]

    def _class_stores(self, cls: str) -> dict[str, list[Segs | None]]:
        """`self.x = <reference>` stores in the class's own methods, a call's result as its
        target and `()` (None: another value); found once per class."""
        if cls not in self._stores:
            self._stores[cls] = self._find_stores(cls)
        return self._stores[cls]

    def _find_stores(self, cls: str) -> dict[str, list[Segs | None]]:
        found: dict[str, list[Segs | None]] = {}
        info = self.program.classes.get(cls)
        for method in info.methods.values() if info else ():
            record = self.program.functions.get(method)
            for stmt in walk_statements(record.info.body) if record else ():
                for target in stmt.targets:
                    if stmt.kind == "assign" and len(target) == 2 and target[0] == "self":
                        ref = stmt.value[1] if stmt.value[:1] == ("ref",) else None
                        if stmt.value[:1] == ("call",):
                            ref = (*stmt.value[1], CALL)
                        found.setdefault(target[1], []).append(ref)
        return found

    @cached_property
    def keyword_groups(self) -> dict[str, str]:
        """Keywords that every constructor call naming a group binds to the same one
        (`tp_cache_group=get_dp_tp_group().cpu_group`); a bare name passed on is the caller's
        parameter and says nothing."""
        found: dict[str, set[str]] = {}
        for resolved in self.program.calls.values():
            for item in resolved:
                classes = self.program.classes
                if not any(t.name.endswith(".__init__") or t.name in classes for t in item.targets):
                    continue
                for operand in item.call.operands:
                    refs = [
                        r
                        for r in (*operand.reads, *operand.calls)
                        if len(r) >= 2 or r != operand.ref
                    ]
                    dims = {self.catalog.dimension_of_group(seg) for r in refs for seg in r} - {
                        None
                    }
                    if operand.keyword and operand.keyword != "**" and len(dims) == 1:
                        found.setdefault(operand.keyword, set()).update(dims)
        return {k: next(iter(v)) for k, v in found.items() if len(v) == 1}

    def _locals(self, holder: FunctionRecord) -> dict[str, list[Segs]]:
        """Locals bound only to references or calls (assigned, or iterated over a display):
        each binding's referenced value."""
        name = holder.qualname
        if name not in self._bindings:
            found: dict[str, list[Segs]] = {}
            unknown: set[str] = set()
            for stmt in walk_statements(holder.info.body):
                for target in stmt.targets:
                    if len(target) != 1 or stmt.kind not in ("assign", "loop"):
                        continue
                    if stmt.kind == "loop" and len(stmt.targets) == 1:
                        found.setdefault(target[0], []).extend(stmt.reads)
                    elif stmt.kind == "assign" and stmt.value[:1] in (("ref",), ("call",)):
                        found.setdefault(target[0], []).append(stmt.value[1])
                    else:
                        unknown.add(target[0])
            self._bindings[name] = {k: v for k, v in found.items() if k not in unknown}
        return self._bindings[name]

    def passes_group(self, record: FunctionRecord, call: CallSite) -> bool:
        """Whether an argument is a process group we can name (`group=self.tp_group`)."""
        return any(self.ref_groups(record, ref) for o in call.operands for ref in o.reads)

    def _group_of(self, refs: list[Segs]) -> str | None:
        for ref in refs:
            for segment in ref:
                found = self.catalog.dimension_of_group(segment)
                if found is not None:
                    return found
        for ref in refs:  # `self.sync_group`, stored from `scheduler.tp_cpu_group` elsewhere
            if len(ref) >= 2 and ref[-1] in self.attribute_groups:
                return self.attribute_groups[ref[-1]]
        return None

    @cached_property
    def attribute_groups(self) -> dict[str, str]:
        """Attributes every store of which names one group dimension (`x.g = y.tp_group`)."""
        found: dict[str, set[str | None]] = {}
        for record in self.program.functions.values():
            for stmt in walk_statements(record.info.body):
                if stmt.kind != "assign" or not stmt.value or stmt.value[0] != "ref":
                    continue
                dims = {self.catalog.dimension_of_group(seg) for seg in stmt.value[1]} - {None}
                only = next(iter(dims)) if len(dims) == 1 else None
                for target in stmt.targets:
                    if len(target) >= 2:
                        found.setdefault(target[-1], set()).add(only)
        return {
            name: dim
            for name, dims in found.items()
            if len(dims) == 1 and (dim := next(iter(dims))) is not None
        }


def _argument(callee: FunctionRecord, call: CallSite, param: str) -> Segs | None:
    """The reference a call binds the callee's parameter to: the receiver for `self`
    (`get_tp_group()` in `get_tp_group().all_reduce(x)`; the caller's own `self` through
    `super()`), else the argument when it is a bare reference; None otherwise."""
    params = callee.info.params
    if callee.info.takes_self and params and params[0].name == param:
        if not receiver_bound(callee, call) or callee.info.name == "__init__":
            return None
        receiver = call.target[:-1]
        return ("self",) if receiver == ("super()",) else receiver
    operand = bind(callee, call).passed.get(param)
    if operand is None or operand.ref is not None:
        return operand.ref if operand is not None else None
    if operand.reads or len(operand.calls) != 1:
        return None
    # A bare call (`reduce_over(get_tp_group(), x)`): its result, written `get_tp_group()`.
    if operand.keyword is None:
        index = [o for o in call.operands if o.keyword is None].index(operand)
        text = call.args[index] if index < len(call.args) else None
    else:
        text = call.kwarg(operand.keyword)
    return (*operand.calls[0], CALL) if text == f"{segs_text(operand.calls[0])}()" else None
