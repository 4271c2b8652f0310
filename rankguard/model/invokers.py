"""Calls that run a callable argument before their own result is available.

`await asyncio.to_thread(f)` and `await loop.run_in_executor(ex, f)` return once `f` has run;
`executor.submit(f)` runs `f` on a worker, and a function that then waits on a future
(`.result()`, `concurrent.futures.wait`) waits for it; `map`, `filter`, `sorted(key=f)` call `f`
right there. For these, the callable argument is a `call` edge refined by `via` (`awaited`,
`executor`, `argument`), so a round follows it; anything else passed as a value stays a
`callback` (it runs elsewhere, later).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import replace
from typing import NamedTuple

from rankguard.model.records import Target
from rankguard.model.values import BUILTIN_PREFIX
from rankguard.summary.ir import CallSite, Operand, dotted


class Invoker(NamedTuple):
    pattern: str  # fnmatch over the resolved callee
    argument: int | str  # position, or keyword, of the callable
    via: str  # awaited | executor | argument


INVOKERS: tuple[Invoker, ...] = (
    Invoker("asyncio.to_thread", 0, "awaited"),
    Invoker("*.run_in_executor", 1, "awaited"),
    Invoker("*Executor*.submit", 0, "executor"),
    Invoker(BUILTIN_PREFIX + "map", 0, "argument"),
    Invoker(BUILTIN_PREFIX + "filter", 0, "argument"),
    Invoker(BUILTIN_PREFIX + "sorted", "key", "argument"),
    Invoker(BUILTIN_PREFIX + "min", "key", "argument"),
    Invoker(BUILTIN_PREFIX + "max", "key", "argument"),
    Invoker("functools.reduce", 0, "argument"),
)
# Invokers that call the callable with the arguments handed after it (`to_thread(f, a, b)`
# calls `f(a, b)`), by `Target.via`. `argument` is not one: `map`/`sorted` hand it items, and
# a callable parameter's call (`model.arguments`) is marked `argument` too.
FORWARDING = frozenset(("awaited", "executor"))

# A function that calls one of these waits for what it submitted to an executor.
FUTURE_WAITS = ("*.result", "concurrent.futures.wait", "concurrent.futures.as_completed")


def invoker(callee: str) -> Invoker | None:
    for entry in INVOKERS:
        if fnmatch.fnmatchcase(callee, entry.pattern):
            return entry
    return None


def waits_on_futures(callees: list[str], texts: list[str]) -> bool:
    """Whether a function waits on a future: a resolved wait, or a `.result()` call."""
    if any(text.endswith(".result") for text in texts):
        return True
    return any(fnmatch.fnmatchcase(c, p) for c in callees for p in FUTURE_WAITS)


def called_as(call: CallSite, targets: Sequence[Target], name: str) -> CallSite:
    """`call` as its target `name` (one of `targets`) is called by it: where an invoker runs
    the callable handed to it, the call the invoker makes (`invoked`); else `call` itself,
    also where the same call reaches `name` directly too (`self.run(self.gate, n)` with
    `self.run` either `gate` or a pool's `submit`)."""
    edges = [t for t in targets if t.name == name]
    if not edges or any(t.via not in FORWARDING for t in edges):
        return call
    entry = next((found for t in targets if (found := invoker(t.name))), None)
    return call if entry is None else invoked(call, entry)


def invoked(call: CallSite, entry: Invoker) -> CallSite:
    """The call an invoker makes of the callable it is handed (`rankguard.model.invokers`):
    `to_thread(f, a, b)` and `run_in_executor(pool, f, a, b)` call `f(a, b)`, with the
    keywords too. Where the callable is not a plain positional argument (by keyword, after a
    `*args`), what it is handed is unknown: a starred shape, so no default is taken as bound."""
    where = entry.argument
    unknown = isinstance(where, str) or where >= len(call.args)
    if unknown or any(arg.startswith("*") for arg in call.args[: where + 1]):
        starred = (Operand("*"),)
        return replace(call, args=("*",), kwargs=(), operands=starred, literals=(), receiver=())
    target = dotted(call.args[where]) or ()
    literals = tuple(
        (str(int(key) - where - 1) if key.isdigit() else key, value)
        for key, value in call.literals
        if not key.isdigit() or int(key) > where
    )
    skipped, operands = 0, []
    for operand in call.operands:  # in the order written, the first `where + 1` left out
        if operand.keyword in (None, "*") and skipped <= where:
            skipped += 1
            continue
        operands.append(operand)
    return replace(
        call,
        target=target,
        args=call.args[where + 1 :],
        operands=tuple(operands),
        literals=literals,
        receiver=(),
    )
