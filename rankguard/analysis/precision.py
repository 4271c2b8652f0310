"""Local facts that clear a call the catalog would flag, or mark it cadenced.

Everything here reads one function's IR along one path: which local names hold CPU tensors or
clock readings, which conditions enclose a call, which arguments a call passes. What cannot be
told stays unknown (and the finding says so through its confidence) rather than being guessed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from rankguard.analysis.feasible import TRUTHY, Cond, contradicts
from rankguard.catalogs.catalog import BlockingEntry
from rankguard.summary.ir import CALL, CallSite, Segs, Stmt

# Local facts: name -> "cpu" (a host tensor), "device" (created with a non-CPU device=),
# "clock" (a time reading).
CPU, DEVICE, CLOCK = "cpu", "device", "clock"

# Factories that allocate on the CPU unless given `device=`.
_FACTORIES = frozenset(
    (
        "tensor", "zeros", "ones", "empty", "full", "arange", "frombuffer", "from_numpy",
        "randn", "rand", "randint", "linspace", "eye", "IntTensor", "LongTensor", "FloatTensor",
        "BoolTensor",
    )
)  # fmt: skip
_CLOCKS = frozenset(("monotonic", "time", "perf_counter", "monotonic_ns", "time_ns"))
_ACCELERATORS = "cuda|npu|xpu|musa"
_CUDA_TEXT = re.compile(rf"""^(f?['"]({_ACCELERATORS})|torch\.device\(f?['"]({_ACCELERATORS}))""")
_CPU_TEXT = re.compile(r"""^(['"]cpu['"]|torch\.device\(['"]cpu['"]\))$""")
# `now - self._t >= 30`, `time.monotonic() - self._last > interval`
_CADENCE = re.compile(
    r"^(?P<now>[\w.]+(?:\(\))?)\s*-\s*(?P<last>[\w.\[\]'\"]+)\s*>=?\s*(?P<every>.+)$"
)


def _is_cpu_text(text: str | None) -> bool:
    return bool(text) and bool(_CPU_TEXT.match(text.strip()))  # type: ignore[union-attr]


def produced(call: CallSite) -> str | None:
    """Where the tensor a call returns lives, when the call itself tells."""
    target = call.target
    method = target[-1] if target else ""
    if method in ("cpu", "numpy", "pin_memory", "tolist", "item"):
        return CPU
    if method == "to":
        first = call.args[0] if call.args else call.kwarg("device")
        if _is_cpu_text(first):
            return CPU
        return DEVICE if first and _CUDA_TEXT.match(first.strip()) else None
    if len(target) == 2 and target[0] == "torch" and method in _FACTORIES:
        device = call.kwarg("device")
        if device is None:
            return CPU  # PyTorch's default device
        if _is_cpu_text(device):
            return CPU
        # Only a literal says where: `device=self.device` may be either (confidence medium).
        return DEVICE if _CUDA_TEXT.match(device.strip()) else None
    if len(target) == 2 and target[0] == "time" and method in _CLOCKS:
        return CLOCK
    return None


def producer(stmt_calls: Sequence[CallSite], call: CallSite | None, segs: Segs) -> CallSite | None:
    """The last call in the same statement (before `call`, when given) whose target is `segs`."""
    found = None
    for other in stmt_calls:
        if other is call:
            break
        if other.target == segs:
            found = other
    return found


def receiver_fact(
    call: CallSite, stmt_calls: Sequence[CallSite], env: Mapping[str, str]
) -> str | None:
    """What is known about the receiver of a method call (`x.item()`, `f(...).item()`)."""
    receiver = call.target[:-1]
    if not receiver:
        return None
    if receiver[-1] == CALL:
        made = producer(stmt_calls, call, receiver[:-1])
        return produced(made) if made is not None else None
    if len(receiver) == 1:
        return env.get(receiver[0])
    return None


def assigned_fact(stmt: Stmt, env: Mapping[str, str]) -> str | None:
    """The fact an assignment gives its single target."""
    shape = stmt.value
    if not shape:
        return None
    if shape[0] == "call":
        made = producer(stmt.calls, None, tuple(shape[1]))
        return produced(made) if made is not None else None
    if shape[0] == "ref" and len(shape[1]) == 1:
        return env.get(shape[1][0])
    return None


def flags_clear(call: CallSite) -> bool:
    """zmq: NOBLOCK / DONTWAIT anywhere in the arguments returns at once."""
    texts = [*call.args, *(value for _, value in call.kwargs)]
    return any("NOBLOCK" in t or "DONTWAIT" in t for t in texts)


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


def thread_dead(call: CallSite, guards: Sequence[tuple[Cond, bool]]) -> bool:
    """`t.join()` where the enclosing conditions cannot all hold while `t.is_alive()`."""
    receiver = tuple(s for s in call.target[:-1] if s != CALL)
    if not receiver:
        return False
    alive = {("call", (*receiver, "is_alive"), (), ()): TRUTHY}
    return any(contradicts(cond, positive, alive) for cond, positive in guards)


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
