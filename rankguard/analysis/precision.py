"""Local facts that clear a call the catalog would flag, or mark it cadenced.

Everything here reads one function's IR along one path: which local names hold CPU tensors or
clock readings, which conditions enclose a call, which arguments a call passes. What cannot be
told stays unknown (and the finding says so through its confidence) rather than being guessed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from rankguard.analysis.reach import followed
from rankguard.catalogs.catalog import BlockingEntry
from rankguard.model.facts import FALSY, TRUTHY, Cond, Facts, Symbol, contradicts
from rankguard.model.placement import Attrs, Env, agree, of_segs, of_tree, produced
from rankguard.model.program import Program
from rankguard.model.returns import ReturnPlacement
from rankguard.summary.ir import CALL, SUBSCRIPT, CallSite, Operand, Segs, Stmt, walk_statements

CLOCK = "clock"  # a local holding a time reading
_CLOCKS = frozenset(("monotonic", "time", "perf_counter", "monotonic_ns", "time_ns"))
# `now - self._t >= 30`, `time.monotonic() - self._last > interval`
_CADENCE = re.compile(
    r"^(?P<now>[\w.]+(?:\(\))?)\s*-\s*(?P<last>[\w.\[\]'\"]+)\s*>=?\s*(?P<every>.+)$"
)


def producer(stmt_calls: Sequence[CallSite], call: CallSite | None, segs: Segs) -> CallSite | None:
    """The last call in the same statement (before `call`, when given) whose target is `segs`."""
    found = None
    for other in stmt_calls:
        if other is call:
            break
        if other.target == segs:
            found = other
    return found


def value_fact(
    segs: Segs, stmt_calls: Sequence[CallSite], before: CallSite | None, env: Env, attrs: Attrs
) -> str | None:
    """Where the value `segs` spells lives: a call result made in the same statement
    (`f(...).float()`), a local, or an attribute."""
    while segs and segs[-1] == SUBSCRIPT:
        segs = segs[:-1]
    if segs and segs[-1] == CALL:
        made = producer(stmt_calls, before, segs[:-1])
        if made is None:
            return None
        return produced(made, env, lambda: receiver_fact(made, stmt_calls, env, attrs))
    return of_segs(segs, env, attrs)


def made_by(
    operand: Operand, call: CallSite, stmt_calls: Sequence[CallSite], env: Env, attrs: Attrs
) -> str | None:
    """Where an argument computed from one call's result alone lives (`f(torch.arange(n,
    device="cpu"))`, `f(g(x) + 1)`): where that result does."""
    if not lone_call(operand):
        return None
    return value_fact((*operand.calls[0], CALL), stmt_calls, call, env, attrs)


def lone_call(operand: Operand) -> bool:
    """The argument is one call's result alone (`f(g(x))`, `f(Cls(...))`)."""
    return (
        not operand.ref and operand.const is None and not operand.reads and len(operand.calls) == 1
    )


def receiver_fact(
    call: CallSite, stmt_calls: Sequence[CallSite], env: Env, attrs: Attrs
) -> str | None:
    """What is known about the receiver of a method call (`x.item()`, `f(...).item()`,
    `(a % n).tolist()`: a computed receiver's value tree)."""
    if call.receiver:
        return of_tree(call.receiver, env, {}, attrs)
    receiver = call.target[:-1]
    return value_fact(receiver, stmt_calls, call, env, attrs) if receiver else None


def assigned_fact(stmt: Stmt, place: str | None) -> str | None:
    """The fact an assignment gives its single target: a clock reading, or where the value
    lives (`place`, read once by the walk)."""
    shape = stmt.value
    if shape and shape[0] == "call" and len(shape[1]) == 2 and shape[1][0] == "time":
        return CLOCK if shape[1][1] in _CLOCKS else None
    return place


def flags_clear(call: CallSite, known: Facts) -> bool:
    """zmq: NOBLOCK / DONTWAIT anywhere in the arguments (or in the constant a parameter
    passed as flags was bound to at the call site) returns at once."""
    texts = [*call.args, *(value for _, value in call.kwargs)]
    for text in texts:
        bound = known.get(("ref", (text,))) if text.isidentifier() else None
        if isinstance(bound, Symbol):
            text = bound.name
        if "NOBLOCK" in text or "DONTWAIT" in text:
            return True
    return False


def zero_duration(call: CallSite) -> bool:
    """`time.sleep(0)`: a literal zero only yields the GIL to other threads."""
    duration = call.args[0] if call.args else call.kwarg("secs") or call.kwarg("seconds")
    try:
        return duration is not None and float(duration) == 0
    except ValueError:
        return False


def timeout_clear(call: CallSite, entry: BlockingEntry) -> bool:
    """A timeout, or block=False / blocking=False, bounds the wait."""
    for key in ("block", "blocking"):
        if call.kwarg(key) in ("False", "0"):
            return True
    timeout = call.kwarg("timeout")
    if timeout is not None and timeout != "None":
        return True
    block = entry.block_arg
    if block is not None and len(call.args) > block and call.args[block] in ("False", "0"):
        return True
    if entry.timeout_arg is not None and len(call.args) > entry.timeout_arg:
        return call.args[entry.timeout_arg] != "None"
    return False


def unreachable_while(
    call: CallSite, guards: Sequence[tuple[Cond, bool]], method: str, truthy: bool
) -> bool:
    """The conditions on the path cannot all hold while `receiver.<method>()` has that truth:
    `if not t.is_alive(): t.join()`, `if w.is_completed(): w.wait()`."""
    receiver = tuple(s for s in call.target[:-1] if s != CALL)
    if not receiver:
        return False
    state = {("call", (*receiver, method), (), ()): TRUTHY if truthy else FALSY}
    return any(contradicts(cond, positive, state) for cond, positive in guards)


def thread_dead(call: CallSite, guards: Sequence[tuple[Cond, bool]]) -> bool:
    return unreachable_while(call, guards, "is_alive", True)


def bounded(call: CallSite, stmt_calls: Sequence[CallSite]) -> bool:
    """Awaited inside `asyncio.wait_for(..., timeout)` (or under `asyncio.timeout(...)`) in the
    same statement: the wait gives up."""
    after = False
    for other in stmt_calls:
        if other is call:
            after = True
            continue
        if after and other.target[-1:] == ("wait_for",):
            timeout = other.kwarg("timeout") or (other.args[1] if len(other.args) > 1 else None)
            if timeout is not None and timeout != "None":
                return True
    return False


def cadence_of(condition: str, env: Mapping[str, str]) -> str | None:
    """`now - self._t >= X` with `now` a clock reading: the branch runs at most every X."""
    match = _CADENCE.match(condition.strip())
    if match is None:
        return None
    now = match.group("now")
    is_clock = env.get(now) == CLOCK or (now.endswith("()") and now[:-2].split(".")[-1] in _CLOCKS)
    if not is_clock:
        return None
    every, last = match.group("every").strip(), match.group("last")
    return f"time cadence: `{condition.strip()}` (every {every} on `{last}`)"


def returned(
    program: Program, fn: str, returns: ReturnPlacement, stmt: Stmt, count: int
) -> tuple[str | None, ...] | None:
    """Where each of `count` targets bound to a call's result (`stmt`, in `fn`) lives, when
    every function the call may run returns it so on every path (`model.returns`)."""
    if stmt.tree[:1] != ("call",) or len(stmt.tree) > 4:
        return None
    call = next((c for c in reversed(stmt.calls) if c.target == stmt.tree[1]), None)
    if call is None:
        return None
    targets = followed(program, fn, call)
    if not targets or any(t.name not in program.functions for t in targets):
        return None  # something outside the program may run: what it returns is unknown
    found = [returns.of(t.name, count) for t in targets]
    if any(f is None for f in found):
        return None
    out = found[0]
    for other in found[1:]:
        out = tuple(agree(a, b) for a, b in zip(out, other, strict=True))
    return out


def rebound(env: dict[str, str], name: str) -> None:
    """Forget what `env` says of `name` and of its attributes (`result.ids`): it names another
    object now."""
    prefix = name + "."
    for key in [k for k in env if k == name or k.startswith(prefix)]:
        del env[key]


def bound_afresh(env: Mapping[str, str], element: Mapping[str, str | None]) -> dict[str, str]:
    """`env` with each loop target bound again to what it takes on every pass (`element`)."""
    out = dict(env)
    for name, place in element.items():
        rebound(out, name)
        if place is not None:
            out[name] = place
    return out


_ENTRY_PASSES = 4


def loop_entry(program: Program, fn: str, loop: Stmt, attrs: Attrs) -> dict[str, str]:
    """Where each local of `fn` lives at the head of its round `loop`, on every pass: what it
    was given before the loop, joined with what the loop gives it. A local the loop binds (or
    a nested function, which may rebind it through `nonlocal`), a parameter (its entry value
    is not known) and a local bound other than by a plain assignment (a `for`, a `with`, a
    tuple's unpacking) are not known here; the others take the placement every assignment
    outside the loop agrees on, read with what the others hold (iterated until it settles,
    so each holds wherever the local is bound)."""
    record = program.functions[fn]
    body = record.info.body
    inside = {id(s) for s in walk_statements((loop,))}
    bindings: dict[str, list[Stmt]] = {}
    blocked = {p.name.lstrip("*") for p in record.info.params} | set(record.info.global_names)
    for stmt in walk_statements(body):
        names = [t[0] for t in stmt.targets if len(t) == 1]
        if not names:
            continue
        plain = stmt.kind == "assign" and bool(stmt.tree) and len(stmt.targets) == 1
        if id(stmt) in inside or not plain:
            blocked.update(names)
            continue
        bindings.setdefault(names[0], []).append(stmt)
    prefix = fn + ".<locals>."
    for name in program.functions:
        if name.startswith(prefix):
            inner = program.functions[name].info
            blocked.update(p.name.lstrip("*") for p in inner.params)
            for stmt in walk_statements(inner.body):
                blocked.update(t[0] for t in stmt.targets if len(t) == 1)
    bindings = {name: stmts for name, stmts in bindings.items() if name not in blocked}
    env: dict[str, str] = {}
    for _ in range(_ENTRY_PASSES):
        settled: dict[str, str] = {}
        for name, stmts in bindings.items():
            place = of_tree(stmts[0].tree, env, {}, attrs)
            for stmt in stmts[1:]:
                place = agree(place, of_tree(stmt.tree, env, {}, attrs))
            if place is not None:
                settled[name] = place
        if settled == env:
            return env
        env = settled
    return {}  # not settled: nothing is sure
