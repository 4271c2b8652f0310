"""A device sync waits for the work queued on the device before it; right after one, nothing
is queued. A second sync on the same path with nothing called in between that could launch
work (`x.tolist()` then `y.tolist()`) returns at once: the first is the straggler, and
reporting the second names no wait of its own.

The walk keeps "drained" among its facts (`DRAINED`), so a join keeps it only where every path
agrees, and a callee starts without it. It is set by a sync the model is sure of (a device
tensor's copy to the host, `torch.cuda.synchronize()`), and cleared by any call but a host-only
builtin or logging (a program function, a tensor method, an unknown call may launch work) and by
an operator in an assigned value (`y = a @ b`). Indexing is taken as queueing no wait of note.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rankguard.analysis.blocking_types import BlockingCall, State
from rankguard.model.facts import Cond
from rankguard.summary.ir import CallSite

DRAINED: Cond = ("drained",)
_SYNC = "device-sync"
# Calls that run on the host only and launch nothing on the device.
_HOST_BUILTINS = frozenset(
    (
        "len", "int", "float", "bool", "str", "repr", "list", "tuple", "dict", "set", "sorted",
        "range", "enumerate", "zip", "min", "max", "sum", "any", "all", "abs", "round",
        "isinstance", "print", "format", "hasattr", "getattr", "id", "iter", "next",
    )
)  # fmt: skip
_LOGGING = frozenset(("debug", "info", "warning", "warn", "error", "exception", "critical"))
_LOGGERS = frozenset(("logger", "logging", "log", "_logger", "LOGGER"))


def dominated(blocking: BlockingCall, call: CallSite, known: Mapping[Cond, Any]) -> bool:
    """A device sync with nothing queued since the last one on every path here (its receiver
    computed by an operator, `(a @ b).item()`, queues that work first)."""
    return blocking.kind == _SYNC and DRAINED in known and not _operates(call.receiver)


def _operates(tree: Cond) -> bool:
    """An operator somewhere in the value tree (`a @ b`, `x * 2`): a kernel on a tensor."""
    if not isinstance(tree, tuple) or not tree:
        return False
    return tree[0] == "arith" or any(_operates(part) for part in tree[1:])


def assigned(tree: Cond, state: State) -> State:
    """Past an assignment whose value an operator computes: maybe work queued."""
    if DRAINED not in state.known or not _operates(tree):
        return state
    return _undrained(state)


def after(blocking: BlockingCall | None, call: CallSite, state: State) -> State:
    """The state past `call` (`blocking` if it is one): drained by a sure sync, no longer
    drained by a call that may launch work."""
    if blocking is not None and blocking.kind == _SYNC:
        if blocking.confidence == "high" and not blocking.doubt and DRAINED not in state.known:
            return state.evolve(known={**state.known, DRAINED: True})
        return state
    if DRAINED not in state.known or _host_only(call):
        return state
    return _undrained(state)


def _undrained(state: State) -> State:
    return state.evolve(known={k: v for k, v in state.known.items() if k != DRAINED})


def _host_only(call: CallSite) -> bool:
    target = call.target
    if len(target) == 1:
        return target[0] in _HOST_BUILTINS
    return len(target) == 2 and target[0] in _LOGGERS and target[1] in _LOGGING
