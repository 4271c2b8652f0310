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
                flow = _SlotFlow(program, resolver, callers(program, as_called=True))
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
        self.memo_local: dict[tuple[str, str], tuple[list[Value], list[tuple[str, str]]]] = {}

    def slot(self, cls: str, attr: str) -> set[str]:
        """The project functions a call of `attr` on an instance of `cls` (or of a class
        derived from it) runs, from the parameters its methods store into it."""
        key = (cls, attr)
        cached = self.memo_slots.get(key)
        if cached is None:  # nothing below asks for a slot again: no cycle to break here
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
        where a caller hands on one of its own parameters.

        Hand-ons may form cycles (`ping(fn)` calls `pong(fn)`, which calls `ping(fn)`): what a
        parameter holds is the union of what is passed directly to every parameter it is
        handed on from, so the whole set reachable from it is walked, and only complete answers
        are cached (a placeholder breaking the cycle would leave the half asked first
        incomplete, the answer hanging on the order of the questions)."""
        key = (owner, name)
        cached = self.memo_params.get(key)
        if cached is not None:
            return cached
        found: dict[Value, None] = {}
        seen = {key}
        todo = [key]
        while todo:
            node = todo.pop()
            complete = self.memo_params.get(node)
            if complete is not None:  # all it is handed on from, already walked
                found.update(dict.fromkeys(complete))
                continue
            values, onward = self._handed(node)
            found.update(dict.fromkeys(values))
            for further in onward:
                if further not in seen:
                    seen.add(further)
                    todo.append(further)
        result = tuple(found)
        self.memo_params[key] = result
        return result

    def _handed(self, key: tuple[str, str]) -> tuple[list[Value], list[tuple[str, str]]]:
        """The values the callers of `key`'s function pass for its parameter themselves, and
        the parameters of theirs (or of a function around them) they hand on for it."""
        local = self.memo_local.get(key)
        if local is None:
            owner, name = key
            info = self.p.functions[owner].info
            values: list[Value] = []
            onward: list[tuple[str, str]] = []
            for caller, site in self.callers.get(owner, ()):
                operand = operand_for(site, info, name)
                if operand is not None:
                    self._passed(caller, operand, site, values, onward)
            local = self.memo_local[key] = (values, onward)
        return local

    def _passed(
        self,
        caller: str,
        operand: Operand,
        site: CallSite,
        values: list[Value],
        onward: list[tuple[str, str]],
    ) -> None:
        record = self.p.functions[caller]
        if operand.keyword in ("*", "**"):
            return
        if operand.ref is not None:
            segs = operand.ref
            found = list(self.r.evaluate(record, segs))
            values.extend(found)
            owner = parameter_owner(self.p, caller, segs[0]) if len(segs) == 1 else None
            if owner is None or (owner != caller and found):
                return
            if _unbound(self.p, caller, owner, segs[0]):  # not rebound before it is handed on
                onward.append((owner, segs[0]))
            return
        if len(operand.calls) == 1 and not operand.reads:
            # `Wrapper(Model())`: the argument is what the call makes; `Wrapper(partial(f, x))`
            # holds what calling it runs, `f`.
            made = operand.calls[0]
            bound = self._partial_function(caller, made, site)
            if bound is not None:
                self._passed(caller, bound, site, values, onward)
                return
            values.extend(self.r.call_results(record, made))

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
    it is by `through_slots`). Not where the method binds the name anywhere itself
    (`model = model.module; self.model = model` stores what the method made of it, not what
    its callers pass): whether a binding comes before the store, or around it in a loop, is
    not told apart, so one after it counts too."""
    value = stmt.value
    if value[:1] != ("ref",) or len(value[1]) != 1:
        return None
    name = value[1][0]
    if name in fn.info.bound:
        return None
    return name if any(p.name == name for p in fn.info.params[1:]) else None


def _unbound(program: Program, caller: str, owner: str, name: str) -> bool:
    """Whether `name` read in `caller` is still `owner`'s parameter as its callers pass it:
    neither `owner` nor any function from `caller` out to it binds the name itself."""
    scope = caller
    while True:
        record = program.functions.get(scope)
        if record is not None and name in record.info.bound:
            return False
        if scope == owner or ".<locals>." not in scope:
            return scope == owner
        scope = scope.rsplit(".<locals>.", 1)[0]
