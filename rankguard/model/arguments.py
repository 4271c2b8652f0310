"""Callables that flow through parameters: `def run(fn): fn()` called as `run(self.step)`.

A call of a bare parameter (or of a parameter of an enclosing function, as a decorator's wrapper
calls `f`) reaches what the callers pass for it: functions, lambdas, bound methods, and
callables from outside the program. What a caller passes may itself be one of *its* parameters
(`func1(a, b)` hands `b` on to `func2`), so values are followed up the callers, as far as they
go; and an edge found this way makes a new caller, whose arguments flow in turn, so the pass
runs until nothing changes (a few rounds: each one follows one more hop of calls found through
arguments). Context-insensitive, as PyCG is: a parameter's call reaches what any caller passes;
an analysis that walks from one call site narrows that to what the site passes (`passed_at`).
Edges are `call` refined `via: argument` (the parameter of the calling function itself),
`closure` (an enclosing function's) or `decorated` (a decorator's parameter: the functions it
is applied to). A decorated function's name stands for a wrapper marked with the function it
wraps (`Target.wraps`), so a walk entering the wrapper from that name narrows its `decorated`
call to that one function (`model.decorators.Decorators.closure`, `analysis.passed`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from rankguard.model.invokers import called_as
from rankguard.model.records import Resolved, Target
from rankguard.model.values import Value, names_a_callable
from rankguard.summary.ir import CallSite, FunctionInfo, Operand, walk_statements

if TYPE_CHECKING:
    from rankguard.model.program import Program
    from rankguard.model.resolve import Resolver

_MAX_ROUNDS = 8

Callers = dict[str, list[tuple[str, CallSite]]]


def through_parameters(program: Program, resolver: Resolver) -> None:
    decorated = resolver.decorated_by()
    # Calls of a bare name that is a parameter here or in an enclosing function (unresolved),
    # or a local some assignment copies a parameter into (`step = builtin; step(args)`), with
    # what the local's other assignments resolve to.
    pending: list[tuple[str, int, str, str, tuple[Target, ...]]] = []
    for qual, resolved in program.calls.items():
        for index, (call, targets) in enumerate(resolved):
            if len(call.target) != 1:
                continue
            name = call.target[0]
            owner = None if targets else parameter_owner(program, qual, name)
            if owner is not None:
                pending.append((qual, index, owner, name, ()))
            elif (param := copied_parameter(program.functions[qual].info, name)) is not None:
                pending.append((qual, index, qual, param, targets))
    for _ in range(_MAX_ROUNDS):
        flow = _Flow(program, resolver, callers(program, as_called=True))
        changed = False
        for qual, index, owner, name, held in pending:
            call = program.calls[qual][index].call
            found = flow.values(owner, name)
            via = "argument" if owner == qual else "closure"
            targets = held + tuple(Target(n, "call", via) for n in sorted(found))
            if _position(program.functions[owner].info, name) == 0 and owner in decorated:
                targets += tuple(Target(n, "call", "decorated") for n in decorated[owner])
            if targets != program.calls[qual][index].targets:
                program.calls[qual][index] = Resolved(call, targets)
                changed = True
        if not changed:
            break


def callers(program: Program, as_called: bool = False) -> Callers:
    """Callee -> (caller, call site) for every call edge (callbacks left out). `as_called`:
    the call as the callee is called by it, for what its arguments bind (`to_thread(f, a)`
    calls `f(a)`: `invokers.called_as`); else the site itself, as the caller's body holds it."""
    callers: Callers = defaultdict(list)
    for qual, resolved in program.calls.items():
        for call, targets in resolved:
            for target in targets:
                if target.kind != "callback" and target.name in program.functions:
                    site = called_as(call, targets, target.name) if as_called else call
                    callers[target.name].append((qual, site))
    return callers


class _Flow:
    """What each parameter may hold, memoised for one round of the pass."""

    def __init__(self, program: Program, resolver: Resolver, callers: Callers) -> None:
        self.p = program
        self.r = resolver
        self.callers = callers
        self.memo: dict[tuple[str, str], frozenset[str]] = {}

    def values(self, owner: str, name: str) -> frozenset[str]:
        key = (owner, name)
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = frozenset()  # a cycle through parameters adds nothing
        info = self.p.functions[owner].info
        found: set[str] = set()
        for caller, site in self.callers.get(owner, ()):
            operand = operand_for(site, info, name)
            if operand is None or operand.ref is None:
                continue
            found |= self.passed(caller, operand.ref)
        self.memo[key] = frozenset(found)
        return self.memo[key]

    def passed(self, caller: str, segs: tuple[str, ...]) -> set[str]:
        """The callables the reference `segs` stands for in `caller`: what it evaluates to,
        or, for a parameter of `caller` (or of a function enclosing it), what flows into it."""
        record = self.p.functions[caller]
        values = self.r.evaluate(record, segs)
        found = _callables(values)
        if len(segs) == 1:
            owner = parameter_owner(self.p, caller, segs[0])
            if owner is not None and (owner == caller or not values):
                found |= self.values(owner, segs[0])
        return found


def passed_at(
    program: Program,
    caller: str,
    site: CallSite,
    callee: str,
    name: str,
    known: Mapping[str, frozenset[str]],
) -> frozenset[str] | None:
    """What the call `site` in `caller` passes for `callee`'s parameter `name`, told from this
    call site alone: the callables it names, or, for a parameter of `caller`, what `known`
    (the caller's own binding on this path) says it holds. None: not told here."""
    return held_or_told(told_at(program, caller, site, callee, name), known)


# What a site says of one parameter apart from the caller's binding: the bare name it hands on
# (`known` answers for it first, if it holds it), and the answer otherwise.
Told = tuple[str | None, frozenset[str] | None]


def told_at(program: Program, caller: str, site: CallSite, callee: str, name: str) -> Told:
    """`passed_at` without `known`: the part of its answer the call site alone decides, so
    one reading of the site serves every path that reaches it."""
    operand = operand_for(site, program.functions[callee].info, name)
    if operand is None or operand.ref is None:
        return None, None
    segs = operand.ref
    head = segs[0] if len(segs) == 1 else None
    if head is not None and parameter_owner(program, caller, head) is not None:
        return head, None
    found = _callables(program.resolver.evaluate(program.functions[caller], segs))
    return head, frozenset(found) if found else None


def held_or_told(told: Told, known: Mapping[str, frozenset[str]]) -> frozenset[str] | None:
    """`told_at`'s answer on a path whose caller's parameters hold `known`."""
    head, found = told
    if head is not None and head in known:
        return known[head]
    return found


def _callables(values: Iterable[Value]) -> set[str]:
    return {v.name for v in values if names_a_callable(v)}


def operand_for(site: CallSite, info: FunctionInfo, name: str) -> Operand | None:
    """The argument `site` passes for the parameter `name` of the function `info`."""
    operand = site.operand(name)
    position = _position(info, name)
    if operand is None and position is not None:
        if any(o.keyword == "*" for o in site.operands[: position + 1]):
            return None  # a starred argument: positions after it are unknown
        positional = [o for o in site.operands if o.keyword is None]
        if 0 <= position < len(positional):
            operand = positional[position]
    return operand


def _position(info: FunctionInfo, name: str) -> int | None:
    """Where a caller passes `name` positionally."""
    names = [p.name for p in info.params]
    if name not in names:
        return None
    # A method's parameter is reached through a bound method (`obj.m(...)`, or `a(...)` with
    # `a = obj.m` handed down), so the receiver is not among the arguments.
    return names.index(name) - (1 if info.takes_self else 0)


def copied_parameter(info: FunctionInfo, name: str) -> str | None:
    """The parameter a local `name` is assigned from (`step = builtin`), if any."""
    params = {p.name for p in info.params}
    if name in params:
        return None
    for stmt in walk_statements(info.body):
        if (
            stmt.kind == "assign"
            and stmt.targets == ((name,),)
            and (stmt.tree or ())[:1] == ("ref",)
        ):
            source = stmt.tree[1]
            if len(source) == 1 and source[0] in params:
                return source[0]
    return None


def parameter_owner(program: Program, qual: str, name: str) -> str | None:
    """The function (`qual` or one enclosing it) whose parameter `name` is, if any."""
    scope = qual
    while True:
        record = program.functions.get(scope)
        if record is not None and any(p.name == name for p in record.info.params):
            return scope
        if ".<locals>." not in scope:
            return None
        scope = scope.rsplit(".<locals>.", 1)[0]
