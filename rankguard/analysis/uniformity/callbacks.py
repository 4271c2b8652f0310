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

from collections.abc import Callable

from rankguard.analysis.uniformity.lattice import Labels, Node, Step, through
from rankguard.model.records import FunctionRecord, Target
from rankguard.summary.ir import CallSite, Operand

CALLED = "()"  # `("param", fn, p, CALLED)`: what the callable handed as `p` returns


def handed_param(record: FunctionRecord, call: CallSite) -> str | None:
    """The parameter `call` calls (`op(...)` in a function taking `op`), if it calls one."""
    names = {p.name.lstrip("*") for p in record.info.params}
    return call.target[0] if len(call.target) == 1 and call.target[0] in names else None


def called_node(function: str, param: str) -> Node:
    return ("param", function, param, CALLED)


def through_argument(targets: tuple[Target, ...]) -> frozenset[str]:
    """The targets the model found through what the callers hand in."""
    return frozenset(t.name for t in targets if t.via == "argument")


def handed_results(
    callee: str,
    passed: dict[str, Operand],
    summary: dict[str, tuple[Step, ...]],
    functions: Callable[[Operand], list[str]],
    back: Step,
) -> Labels:
    """What a call of `callee` returns through the callables it calls (`summary`): for each,
    what the function handed here returns, or when it cannot be named, what any can."""
    out: Labels = {}
    for param, steps in summary.items():
        operand = passed.get(param)
        if operand is None:
            continue
        named = functions(operand)
        labels: list[Node] = [n for g in named for n in (("ret", g), ("decided", g))]
        for label in labels or [called_node(callee, param)]:
            out[label] = steps
    return through(out, back)
