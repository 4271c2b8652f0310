"""What a call site alone says of the callee's parameters: which argument fills which, the
literal ones and the literal defaults of those left out, and the parameters a plain reference
(or its negation) fills, for what the caller knows of it (`context.RoundContext.entry_facts`).
Read from the call's text, once per call site."""

from __future__ import annotations

from typing import Any

from rankguard.analysis.stability import SELF
from rankguard.model.facts import Cond, Symbol
from rankguard.model.records import FunctionRecord
from rankguard.summary.ir import CallSite, Param, Segs, dotted

Passed = dict[str, tuple[str, str]]  # parameter -> (literal key, argument text)
# `bound_at`: literal bindings, parameters filled by a plain reference, and by its negation.
BoundAt = tuple[dict[Cond, Any], tuple[tuple[str, Segs], ...], tuple[tuple[str, Segs], ...]]


def _params(callee: FunctionRecord, call: CallSite) -> list[Param]:
    """The parameters the call's arguments fill. A method's `self` is filled by the receiver,
    or by the bound method a bare name holds (`fn = self.process; fn(batch)`), except where
    the call names the class and passes the instance itself (`Base.method(self, batch)`)."""
    params = list(callee.info.params)
    info = callee.info
    if info.cls is None or not params:  # a method's first parameter, whatever its name
        return params
    if info.decorated("staticmethod"):
        return params
    via_class = len(call.target) >= 2 and call.target[-2][:1].isupper() and call.target[0] != SELF
    if via_class and info.name != "__init__" and not info.decorated("classmethod"):
        return params
    return params[1:]


def receiver_parameter(callee: FunctionRecord, call: CallSite) -> str | None:
    """The parameter the call's receiver fills: a method's first, whatever its name."""
    params = callee.info.params
    return params[0].name if params and len(_params(callee, call)) < len(params) else None


def passed_arguments(callee: FunctionRecord, call: CallSite) -> Passed:
    """Parameter name -> (literal key, argument text) for each argument the call passes."""
    out: dict[str, tuple[str, str]] = {}
    for index, param in enumerate(_params(callee, call)):
        if param.name.startswith("*") or index >= len(call.args):
            break
        if call.args[index].startswith("*"):
            return {}  # `f(*args)`: positions unknown from here on
        out[param.name] = (str(index), call.args[index])
    for key, text in call.kwargs:
        if key != "**":
            out[key] = (key, text)
    return out


def bound_at(callee: FunctionRecord, call: CallSite, passed: Passed) -> BoundAt:
    """What the call site alone says of `callee`'s parameters on entry: literal arguments and
    the literal defaults of those it leaves out; and the parameters filled by a plain reference
    (`f(self.batch)`) or its negation (`f(wait=not overlap)`), with its segments, for what the
    caller knows of it (`entry_facts`). `passed`: `passed_arguments(callee, call)`."""
    starred = any(a.startswith("*") for a in call.args) or any(k == "**" for k, _ in call.kwargs)
    literal = dict(call.literals)
    out: dict[Cond, Any] = {}
    named: set[str] = set()
    for param in _params(callee, call):
        if param.name.startswith("*"):
            break
        named.add(param.name)
        if param.name in passed:
            key, text = passed[param.name]
            if key in literal:
                out[("ref", (param.name,))] = literal[key]
            elif _constant_name(text):
                out[("ref", (param.name,))] = Symbol(text)
        elif not starred and param.literal:
            out[("ref", (param.name,))] = param.literal[0]
    plain, negated = [], []
    for name, (key, text) in passed.items():
        if name not in named or key in literal or _constant_name(text):
            continue
        segs = dotted(text)
        if segs:
            plain.append((name, segs))
        elif text.startswith("not ") and (segs := dotted(text[4:])):
            negated.append((name, segs))
    return out, tuple(plain), tuple(negated)


def literal_truth(value: Any) -> bool:
    """A value whose truth Python knows: a literal argument's, or a test's own answer."""
    return value is None or isinstance(value, (bool, int, float, str))


def _constant_name(text: str) -> bool:
    """`zmq.NOBLOCK`, `Mode.DECODE`: a dotted name ending in an upper-case constant."""
    parts = text.split(".")
    return len(parts) >= 2 and all(p.isidentifier() for p in parts) and parts[-1].isupper()
