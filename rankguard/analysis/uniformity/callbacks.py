"""A callable handed in as an argument returns, at each call site, what was handed there.

`_io(keys, op)` runs `op(key)`; the read path hands it the read, the write path the write.
Taken context-insensitively, `op(...)` returns what either returns, and so does the read path:
it answers what decided the write. So the call of a parameter is a node of its own,
`("param", fn, p, CALLED)`, fed by every function the model says can be handed there (its value
wherever the result goes other than the return), and a return that gives it is a summary
(`FunctionFlow.ret_calls`): a caller that hands a function it can name takes that function's
result instead, one that cannot (it hands on a callable it was handed) takes the node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rankguard.analysis.reach import followed
from rankguard.analysis.uniformity.lattice import CALLED, Labels, Node, through
from rankguard.model.binding import bind
from rankguard.summary.ir import CallSite, Operand

if TYPE_CHECKING:
    from rankguard.analysis.uniformity.transfer import Walker


def called_node(function: str, param: str) -> Node:
    return ("param", function, param, CALLED)


class Callables:
    """The calls of handed callables one walk sees (`Walker`), and what its calls hand on."""

    def __init__(self, walker: Walker) -> None:
        self.w = walker
        self.params = {p.name.lstrip("*") for p in walker.record.info.params}

    def answer(self, call: CallSite, target: str, builds: bool, entered: bool) -> Labels:
        """What calling `target` answers here (what it returns, and what decided which return
        ran, unless it builds an object or enters the group's collectives): when `call` calls a
        parameter (`op(...)`) and the model found `target` among what callers hand in, the
        parameter's call node, fed by that."""
        answer: Labels = {} if builds else {("ret", target): ()}
        if not entered and not builds:
            answer[("decided", target)] = ()
        if len(call.target) != 1 or call.target[0] not in self.params or not answer:
            return answer
        found = followed(self.w.f.program, self.w.fn, call)
        if not any(t.name == target and t.via == "argument" for t in found):
            return answer
        node = called_node(self.w.fn, call.target[0])
        self.w.out.flow(node, answer)
        return {node: ()}

    def returned(self, call: CallSite, target: str) -> Labels:
        """What a call of `target` returns through the callables it calls and returns the
        result of: per such parameter, what the function handed here returns, or when this
        call does not name one, what any can."""
        summary = self.w.f.ret_calls(target)
        if not summary:
            return {}
        passed = bind(self.w.f.program.functions[target], call).passed
        out: Labels = {}
        for param, steps in summary.items():
            operand = passed.get(param)
            if operand is None:
                continue
            named = [n for g in self.functions(operand) for n in (("ret", g), ("decided", g))]
            for label in named or [called_node(target, param)]:
                out[label] = steps
        return through(out, self.w.step(call.line, f"{call.text}(…) returns what it was handed"))

    def functions(self, operand: Operand) -> list[str]:
        """The program's functions an argument names (`self._read`), none when it names none."""
        if not operand.ref or operand.reads != (operand.ref,):
            return []
        values = self.w.f.resolver.evaluate(self.w.record, operand.ref)
        named = [v.name for v in values if v.kind == "function"]
        known = bool(named) and len(named) == len(values)
        return named if known and all(n in self.w.f.program.functions for n in named) else []
