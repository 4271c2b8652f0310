"""Which collectives a call enters, over which group, as tokens the guard comparison can match.

Built on `CollectiveReach`, the one collective index (recursion handled there, once). Two
refinements are local to this analysis and documented here:

- **Call-site constants.** A call that binds a literal to a parameter (or leaves a literal
  default in place: `available(device, distributed=False)`) does not enter the callee's
  collectives that sit under `if <param>:` / `if not <param>:` / `if <param> is None:` and
  are excluded by that literal. One level deep (the callee's own tests), by design.
- **At-most-once functions.** A function that starts with `if self.F: return` and sets
  `self.F = True` runs its collectives at most once per reset; its collectives become one token
  `once:<function>`, and a second occurrence on a path adds nothing. So "negotiate under a
  local condition, then `finalize()` (which negotiates if nobody did)" reaches the collective
  once on every path.

The group of a collective call is the dimension its receiver or group argument names
(`get_tp_group().all_gather(...)`, `group=self.tp_cpu_group`), else the primitive's: the
default group (`world`) when it passes none, `None` or the catalog's default handle
(`dist.group.WORLD`); a parameter or a parameter's field (`group=self.device_group` in a group
coordinator's method) is what the callers along the chain bound it to (the receiver of
`get_tp_group().all_reduce(x)`); unknown (None) when none of them names it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import cached_property
from typing import cast

from rankguard.analysis.collectives import CollectiveReach, CollectiveSite, Event
from rankguard.analysis.reach import edge_of, followed
from rankguard.catalogs.rank_sources import RankSourceCatalog
from rankguard.core.chains import Hop
from rankguard.model.binding import bind, receiver_bound
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord
from rankguard.summary.conditions import Cond
from rankguard.summary.ir import (
    CALL,
    CallSite,
    Segs,
    Stmt,
    segs_text,
    walk_calls,
    walk_statements,
)

Reached = list[tuple[CollectiveSite, list[Hop]]]
Groups = tuple[str, ...]  # the dimensions of a call's groups, sorted; () when one is unknown
_FALSE = frozenset({"False", "None", "0", "0.0", "''", '""'})
_LITERALS = _FALSE | {"True"}
# Chain edges whose call binds the callee's parameters as written (a plain call, a method
# found on a subclass or as the only one so named, an awaited coroutine).
_BINDING_EDGES = frozenset({None, "override", "subclass", "fallback", "suspended"})


class CollectiveCalls:
    """Per call: the collectives entered (pruned by call-site constants), their tokens, group."""

    def __init__(self, program: Program, reach: CollectiveReach, catalog: RankSourceCatalog):
        self.program = program
        self.reach = reach
        self.catalog = catalog
        self._entered: dict[int, Reached] = {}
        self._pruned: dict[tuple[str, frozenset[tuple[str, str]]], Reached] = {}
        self._once: dict[str, bool] = {}
        self._groups: dict[int, Groups] = {}
        self._tested_params: dict[str, frozenset[str]] = {}
        self._bindings: dict[str, dict[str, list[Segs]]] = {}
        self._tokens: dict[int, tuple[str, ...]] = {}

    # -- what a call enters -------------------------------------------------------------
    def entered(self, record: FunctionRecord, call: CallSite) -> Reached:
        """Primitive collectives (not point-to-point) the call enters, with chains, in order."""
        key = id(call)
        if key not in self._entered:
            self._entered[key] = [] if call.deferred else self._compute(record, call)
        return self._entered[key]

    def _compute(self, record: FunctionRecord, call: CallSite) -> Reached:
        out: Reached = []
        pruned: set[str] = set()
        for target in followed(self.program, record.qualname, call):
            callee = self.program.functions.get(target.name)
            constants = self.constants(callee, call) if callee is not None else {}
            if callee is None or not constants:
                continue
            pruned.add(callee.qualname)
            key = (callee.qualname, frozenset(constants.items()))
            if key not in self._pruned:
                calls = list(_feasible_calls(callee.info.body, constants))
                self._pruned[key] = _pairs(self.reach.events_of_calls(callee, calls))
            hop = Hop(record.qualname, record.path, call.line, edge_of(target))
            out.extend((site, [hop, *chain]) for site, chain in self._pruned[key])
        found = _pairs(self.reach.events_of_calls(record, [call]))
        out.extend(
            (site, chain)
            for site, chain in found
            if len(chain) < 2 or chain[1].function not in pruned
        )
        return [(site, chain) for site, chain in out if site.kind == "collective"]

    def constants(self, callee: FunctionRecord, call: CallSite) -> dict[str, str]:
        """Literal values the call gives the callee's parameters its own `if`s test."""
        tested = self._tested(callee)
        if not tested:
            return {}
        binding = bind(callee, call)
        out: dict[str, str] = {}
        for param in callee.info.params:
            if param.name not in tested:
                continue
            if param.name in binding.passed:
                value = binding.passed[param.name].const
            else:
                value = param.default if binding.complete else None
            if value in _LITERALS:
                out[param.name] = value
        return out

    def _tested(self, callee: FunctionRecord) -> frozenset[str]:
        name = callee.qualname
        if name not in self._tested_params:
            self._tested_params[name] = _tested_params(callee.info.body)
        return self._tested_params[name]

    # -- tokens ---------------------------------------------------------------------------
    def tokens(self, record: FunctionRecord, call: CallSite) -> tuple[str, ...]:
        """What a call contributes to a path's collective sequence."""
        key = id(call)
        if key not in self._tokens:
            out: list[str] = []
            for site, chain in self.entered(record, call):
                once = next((h.function for h in chain[1:] if self.at_most_once(h.function)), None)
                out.append(f"once:{once}" if once else site.callee)
            self._tokens[key] = tuple(dict.fromkeys(out))
        return self._tokens[key]

    def at_most_once(self, name: str) -> bool:
        if name not in self._once:
            record = self.program.functions.get(name)
            self._once[name] = record is not None and (
                _returns_once(record.info.body) or self._latched(record)
            )
        return self._once[name]

    def _latched(self, record: FunctionRecord) -> bool:
        """Its collectives all sit under `if not self.A:` (or `self.A is None`) whose block
        stores the state `A` reads: `A` itself, or what a property `A` of the class reads."""
        latches = [
            stmt
            for stmt in record.info.body
            if stmt.kind == "if"
            and (test := flag_test(stmt.cond)) is not None
            and len(test[0]) == 2
            and test[0][0] == "self"
            and not test[1]
        ]
        if not latches:
            return False
        outside = [s for s in record.info.body if s not in latches]
        if any(self.entered(record, c) for c in walk_calls(tuple(outside))):
            return False
        for latch in latches:
            attr = latch.reads[0][1]
            read = {attr}
            prop = self.program.functions.get(
                f"{record.info.cls and record.qualname.rsplit('.', 1)[0]}.{attr}"
            )
            if prop is not None and any(d and d[-1] == "property" for d in prop.info.decorators):
                read |= {
                    r[1] for s in prop.info.body for r in s.reads if len(r) == 2 and r[0] == "self"
                }
            stored = {
                t[1] for s in latch.blocks[0] for t in s.targets if len(t) == 2 and t[0] == "self"
            }
            if not read & stored:
                return False
        return True

    def broadcast(self, record: FunctionRecord, call: CallSite, targets: list[str]) -> bool:
        """A broadcast primitive, or a call whose collectives are all broadcasts: every rank
        gets the root's value."""
        if any(t.rsplit(".", 1)[-1].startswith("broadcast") for t in targets):
            return True
        entered = self.entered(record, call)
        return bool(entered) and all(
            site.callee.rsplit(".", 1)[-1].startswith("broadcast") for site, _chain in entered
        )

    # -- groups ---------------------------------------------------------------------------
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
        name, or the chain runs through a call that binds no parameter plainly."""
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
                or _assigned(callee, ref[0])
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
        """`self.g` (or a field of it, `self.g.device_group`) that every store in the holder's
        class binds to one named group: through the field a constructor keyword binds
        (`Params(tp_cache_group=get_dp_tp_group()...)`, then `self.tp_group =
        params.tp_cache_group`), else by what the store reads or calls (`self.stage =
        get_pp_group()`)."""
        if len(ref) not in (2, 3) or ref[0] != "self" or holder.info.cls is None:
            return None
        if len(ref) == 3 and self.catalog.dimension_of_group(ref[2]) is not None:
            return None  # a field named for its own group says which
        stores = self._class_stores(f"{holder.module}.{holder.info.cls}").get(ref[1])
        dims = {
            self._keyword_group(value) or (self._group_of([value]) if value else None)
            for value in stores or ()
        }
        return dims.pop() if len(dims) == 1 else None

    def _keyword_group(self, value: Segs | None) -> str | None:
        if value is None or len(value) < 2 or value[-1] not in self.keyword_groups:
            return None
        return self.keyword_groups[value[-1]]

    def _class_stores(self, cls: str) -> dict[str, list[Segs | None]]:
        """`self.x = <reference>` stores in the class's own methods, a call's result as its
        target and `()` (None: another value)."""
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


def _assigned(record: FunctionRecord, name: str) -> bool:
    """Whether the function binds `name` itself (a parameter reassigned is no longer what the
    caller passed)."""
    return any((name,) in stmt.targets for stmt in walk_statements(record.info.body))


def _pairs(events: Iterable[Event]) -> Reached:
    return [(event.site, list(event.chain)) for event in events]


def flag_test(cond: Cond) -> tuple[Segs, bool, bool] | None:
    """(reference, whether the branch runs when it holds something, whether the test compares
    with None) for `r`, `not r`, `r is None`, `r is not None`; None for any other test."""
    negated = cond[:1] == ("not",)
    inner = cond[1] if negated else cond
    if inner[:1] == ("ref",):
        return inner[1], not negated, False
    if (
        negated
        or inner[:1] != ("cmp",)
        or len(inner[1]) != 1
        or inner[1][0] not in ("is", "is not")
    ):
        return None
    left, right = inner[2]
    if left[:1] == ("ref",) and right == ("const", None):
        return left[1], inner[1][0] == "is not", True
    return None


def _test_of(stmt: Stmt) -> tuple[str, bool, bool] | None:
    """`flag_test` of an `if` on a bare local name (a parameter)."""
    test = flag_test(stmt.cond) if stmt.kind == "if" else None
    if test is None or len(test[0]) != 1:
        return None
    return test[0][0], test[1], test[2]


def _tested_params(body: tuple[Stmt, ...]) -> frozenset[str]:
    names: set[str] = set()
    stack = list(body)
    while stack:
        stmt = stack.pop()
        test = _test_of(stmt)
        if test is not None:
            names.add(test[0])
        for block in stmt.blocks:
            stack.extend(block)
    return frozenset(names)


def _feasible_calls(body: tuple[Stmt, ...], constants: dict[str, str]) -> Iterator[CallSite]:
    """The body's calls, skipping the branches the constants exclude."""
    for stmt in body:
        yield from stmt.calls
        test = _test_of(stmt)
        blocks = stmt.blocks
        if test is not None and test[0] in constants:
            truthy = constants[test[0]] not in _FALSE
            if test[2]:  # compared with None
                truthy = constants[test[0]] != "None"
            blocks = (blocks[0],) if truthy == test[1] else blocks[1:]
        for block in blocks:
            yield from _feasible_calls(block, constants)
        yield from stmt.exits  # a `with` left: its `__exit__` calls


def _returns_once(body: tuple[Stmt, ...]) -> bool:
    """`if self.F: return` first (a docstring aside), and `self.F = True` somewhere in the body."""
    stmts = [s for s in body if not (s.kind == "expr" and not s.calls and not s.reads)]
    if not stmts or stmts[0].kind != "if":
        return False
    first = stmts[0]
    test = flag_test(first.cond)
    if test is None or len(test[0]) != 2 or not test[1] or test[2] or not first.blocks[0]:
        return False
    flag = test[0]
    if first.blocks[0][0].kind != "return":
        return False
    return any(
        s.kind == "assign" and s.targets == (flag,) and s.value == ("const", "True")
        for s in stmts[1:]
    )
