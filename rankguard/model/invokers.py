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
from typing import NamedTuple

from rankguard.model.values import BUILTIN_PREFIX


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
