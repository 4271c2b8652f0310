"""Callable slots: `self.runnable = runnable` in a method, later `self.runnable(*args)`.

Where the parameter's annotation names no project class (`Callable`, `nn.Module`, none at
all), the attribute holds what the program passes for that parameter at the sites that call
the method: `Wrapper(Model())`, `Wrapper(runnable=m)`, `super().__init__(fn)` handing on its
own parameter (followed up its callers in turn). A call of the attribute that resolves to no
project function then runs what those values run: a function, an instance's `__call__`, an
`nn.Module`'s `forward` (`Resolver._invoked`). The union over every site is context-insensitive,
so the edges are `fallback` refined `via: slot`; a slot no site binds stays unresolved.

A whole-program pass (the values come from call sites in other modules), run after each
module's own resolution and before the flow through parameters, which then sees the new edges.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rankguard.model.arguments import callers, operand_for, parameter_owner
from rankguard.model.records import Resolved, Target
from rankguard.model.values import Value
from rankguard.summary.ir import CALL, SUBSCRIPT, CallSite, Operand, Segs, Stmt

if TYPE_CHECKING:
    from rankguard.model.arguments import Callers
    from rankguard.model.program import Program
    from rankguard.model.records import FunctionRecord
    from rankguard.model.resolve import Resolver

_PARTIAL = "functools.partial"
_MAX_TARGETS = 8  # more than this from one slot is no longer a binding but a guess at large


def through_slots(program: Program, resolver: Resolver) -> None:
    flow: _SlotFlow | None = None
    for qual, resolved in program.calls.items():
        record = program.functions[qual]
        me = _receiver_name(record)
        if me is None:
            continue
        for index, (call, targets) in enumerate(resolved):
            segs = call.target
            if len(segs) != 2 or segs[0] != me or segs[1] in (CALL, SUBSCRIPT):
                continue
            if call.deferred or any(t.name in program.functions for t in targets):
                continue
            if flow is None:
                flow = _SlotFlow(program, resolver, callers(program))
            found = flow.slot(f"{record.module}.{record.info.cls}", segs[1])
            found.discard(qual)  # a wrapper never wraps itself
            if not found or len(found) > _MAX_TARGETS:
                continue
            added = tuple(Target(name, "fallback", "slot") for name in sorted(found))
            merged = sorted({*targets, *added}, key=lambda t: (t.name, t.kind, t.via or ""))
            resolved[index] = Resolved(call, tuple(merged))


def _receiver_name(record: FunctionRecord) -> str | None:
    """`self` of a method defined directly in its class (not a static method)."""
    info = record.info
    if not info.cls or not info.params or info.qualname != f"{info.cls}.{info.name}":
        return None
    if info.decorated("staticmethod") or info.decorated("classmethod"):
        return None
    return info.params[0].name


class _SlotFlow:
    def __init__(self, program: Program, resolver: Resolver, callers: Callers) -> None:
        self.p = program
        self.r = resolver
        self.callers = callers
        self.memo_slots: dict[tuple[str, str], frozenset[str]] = {}
        self.memo_params: dict[tuple[str, str], tuple[Value, ...]] = {}

    def slot(self, cls: str, attr: str) -> set[str]:
        """The project functions a call of `attr` on an instance of `cls` (or of a class
        derived from it) runs, from the parameters its methods store into it."""
        key = (cls, attr)
        cached = self.memo_slots.get(key)
        if cached is None:
            self.memo_slots[key] = frozenset()  # a cycle adds nothing
            found: set[str] = set()
            if cls in self.p.classes:
                for owner in dict.fromkeys(
                    [*self.p.mro(cls), *sorted(self.p.subclasses.get(cls, ()))]
                ):
                    for fn, stmt in self.r._stores_of(owner).get(attr, ()):
                        param = _stored_parameter(fn, stmt)
                        if param is not None:
                            found |= self._runs(self.parameter(fn.qualname, param))
            cached = self.memo_slots[key] = frozenset(found)
        return set(cached)

    def parameter(self, owner: str, name: str) -> tuple[Value, ...]:
        """What the callers of `owner` pass for its parameter `name`, followed up the callers
        where a caller hands on one of its own parameters."""
        key = (owner, name)
        cached = self.memo_params.get(key)
        if cached is not None:
            return cached
        self.memo_params[key] = ()
        info = self.p.functions[owner].info
        found: list[Value] = []
        for caller, site in self.callers.get(owner, ()):
            operand = operand_for(site, info, name)
            if operand is not None:
                found.extend(self._passed(caller, operand, site))
        result = tuple(dict.fromkeys(found))
        self.memo_params[key] = result
        return result

    def _passed(self, caller: str, operand: Operand, site: CallSite) -> list[Value]:
        record = self.p.functions[caller]
        if operand.keyword in ("*", "**"):
            return []
        if operand.ref is not None:
            segs = operand.ref
            values = list(self.r.evaluate(record, segs))
            if len(segs) == 1:
                owner = parameter_owner(self.p, caller, segs[0])
                if owner is not None and (owner == caller or not values):
                    values.extend(self.parameter(owner, segs[0]))
            return values
        if len(operand.calls) == 1 and not operand.reads:
            # `Wrapper(Model())`: the argument is what the call makes; `Wrapper(partial(f, x))`
            # holds what calling it runs, `f`.
            made = operand.calls[0]
            bound = self._partial_function(caller, made, site)
            if bound is not None:
                return self._passed(caller, bound, site)
            return list(self.r.call_results(record, made))
        return []

    def _partial_function(self, caller: str, made: Segs, site: CallSite) -> Operand | None:
        """The function `functools.partial(f, ...)` binds, for the nested call `made` of the
        argument of `site` (the nearest such call at or after the site's line)."""
        nested = [
            (call, targets)
            for call, targets in self.p.calls[caller]
            if call.target == made and call is not site and call.line >= site.line
        ]
        if not nested:
            return None
        call, targets = min(nested, key=lambda pair: pair[0].line)
        if not any(t.name == _PARTIAL for t in targets):
            return None
        first = call.operands[0] if call.operands else None
        return first if first is not None and first.keyword is None else None

    def _runs(self, values: tuple[Value, ...]) -> set[str]:
        found: set[str] = set()
        for value in values:
            if value.kind == "function":
                found.add(value.name)
            elif value.kind == "instance" and value.name in self.p.classes:
                found.update(
                    v.name
                    for v in self.r._invoked(value)
                    if v.kind == "function" and v.name in self.p.functions
                )
        return found


def _stored_parameter(fn: FunctionRecord, stmt: Stmt) -> str | None:
    """The parameter `self.x = param` stores (a call of the attribute that resolves to a
    project function already, as through an annotation naming a project class, is left as
    it is by `through_slots`)."""
    value = stmt.value
    if value[:1] != ("ref",) or len(value[1]) != 1:
        return None
    name = value[1][0]
    return name if any(p.name == name for p in fn.info.params[1:]) else None
