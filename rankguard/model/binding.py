"""Which parameter of a callee each argument of a call binds to (one place for every analysis).

Positional arguments fill the parameters in order, after the receiver when the callee takes
one (`obj.m(...)`, `Cls(...)` filling `self` of `__init__`, a classmethod's `cls`); keywords
fill their namesakes. After a `*args` argument the positions are unknown, so later positional
arguments bind nothing; after `*args` or `**kwargs` the binding is incomplete (a parameter left
unbound may still be passed).
"""

from __future__ import annotations

from dataclasses import dataclass

from rankguard.model.records import FunctionRecord
from rankguard.summary.ir import CallSite, Operand


@dataclass(frozen=True)
class Binding:
    passed: dict[str, Operand]  # parameter name (without `*`) -> the argument bound to it
    complete: bool  # no `*args` / `**kwargs` argument: an unbound parameter takes its default


def receiver_bound(callee: FunctionRecord, call: CallSite) -> bool:
    """Whether the callee's first parameter is filled by the receiver (`obj.m(...)`, `Cls()`)."""
    info = callee.info
    if not info.takes_self:
        return False
    if info.decorated("classmethod") or info.name == "__init__":
        return True  # `Cls(...)` fills `self` too
    return len(call.target) >= 2


def bind(callee: FunctionRecord, call: CallSite) -> Binding:
    params = [p.name.lstrip("*") for p in callee.info.params]
    offset = 1 if receiver_bound(callee, call) else 0
    passed: dict[str, Operand] = {}
    index = offset
    for operand in call.operands:
        if operand.keyword == "*":
            break
        if operand.keyword is None:
            if index < len(params):
                passed[params[index]] = operand
            index += 1
    for operand in call.operands:
        if operand.keyword in params:
            passed[operand.keyword] = operand
    complete = not any(o.keyword in ("*", "**") for o in call.operands)
    return Binding(passed, complete)
