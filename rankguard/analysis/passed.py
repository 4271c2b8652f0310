"""Callables handed to a helper, told per call site.

The model resolves a call of a bare parameter (`def step(self, post): post()`) to whatever any
caller hands it (`model.arguments`, context-insensitive like PyCG). A walk that enters the helper
from one call site knows more: on that path only what this site hands in runs. Both walks that
follow calls (the collective index and the blocking walk) narrow a parameter's call to that.
"""

from __future__ import annotations

from collections.abc import Mapping

from rankguard.model.arguments import Told, held_or_told, told_at
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord, Target
from rankguard.summary.ir import CallSite

Binding = dict[str, frozenset[str]]  # parameter -> the callables it holds on this path


class PassedCallables:
    """Per program: which parameters each function calls, and what a call site binds them to."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self._called: dict[str, tuple[str, ...]] = {}
        # (caller, id of the site, callee, parameter) -> the site (held, so its id stays its
        # own) and what it tells apart from the path's binding (`model.arguments.told_at`).
        self._told: dict[tuple[str, int, str, str], tuple[CallSite, Told]] = {}

    def binding(
        self,
        caller: FunctionRecord,
        call: CallSite,
        callee: str,
        held: Mapping[str, frozenset[str]],
    ) -> Binding:
        """What `call` passes for the parameters `callee` calls (`held`: the caller's own
        parameters' binding on this path, handed on). Asked at every entry of every path
        (the collective index, the blocking walk): what the site alone tells is read once
        per site, and `held` decides the rest on each path."""
        out: Binding = {}
        for name in self.parameters_called(callee):
            found = held_or_told(self._told_at(caller.qualname, call, callee, name), held)
            if found is not None:
                out[name] = found
        return out

    def _told_at(self, caller: str, call: CallSite, callee: str, name: str) -> Told:
        key = (caller, id(call), callee, name)
        kept = self._told.get(key)
        if kept is None or kept[0] is not call:
            kept = self._told[key] = (call, told_at(self.program, caller, call, callee, name))
        return kept[1]

    def closure(self, target: Target) -> Binding:
        """What a decorator's wrapper holds in the decorator's parameter where the call
        entered it as the function it decorates (`@timed_op def send`: entering `send`'s
        wrapper, `func` is `send`; `model.decorators.Decorators.closure`)."""
        if target.wraps is None or target.name not in self.program.functions:
            return {}
        found = self.program.resolver.closure(target.name, target.wraps)
        return {found[0]: found[1]} if found is not None else {}

    def parameters_called(self, name: str) -> tuple[str, ...]:
        """Parameters of `name` that it calls (reaching what its callers pass, `via:
        argument`) or hands on to another call, where they may be called."""
        found = self._called.get(name)
        if found is None:
            params = {p.name for p in self.program.functions[name].info.params}
            used: set[str] = set()
            for r in self.program.calls.get(name, ()):
                if len(r.call.target) == 1 and any(t.via == "argument" for t in r.targets):
                    used.add(r.call.target[0])
                used.update(o.ref[0] for o in r.call.operands if o.ref and len(o.ref) == 1)
            found = tuple(sorted(used & params))
            self._called[name] = found
        return found


def narrowed(
    call: CallSite, targets: tuple[Target, ...], held: Mapping[str, frozenset[str]]
) -> tuple[Target, ...]:
    """The targets of `call` this path can take: a parameter's call runs what was passed
    (or, in a decorator's wrapper, what the decorator was applied to at the site that made
    the wrapper this path runs)."""
    bound = held.get(call.target[0]) if len(call.target) == 1 else None
    if bound is None:
        return targets
    return tuple(t for t in targets if t.via not in _THROUGH_PARAMETERS or t.name in bound)


# How `model.arguments` resolves a call of a parameter: what callers pass (`argument`, or
# `closure` for an enclosing function's), what a decorator is applied to (`decorated`).
_THROUGH_PARAMETERS = ("argument", "closure", "decorated")


# In the blocking walk's facts a binding is a fact on the parameter, so assigning the
# parameter forgets it (`model.facts.forget`); the third element keeps it apart from a value.
def binding_facts(binding: Binding) -> dict[tuple, frozenset[str]]:
    return {("ref", (name,), "passed"): found for name, found in binding.items()}


def held_in(facts: Mapping[tuple, object]) -> Binding:
    return {
        cond[1][0]: value  # type: ignore[misc]
        for cond, value in facts.items()
        if len(cond) == 3 and cond[2] == "passed"
    }
