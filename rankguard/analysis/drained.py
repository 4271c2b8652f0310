"""A device sync waits for the work queued on the device before it; right after one, nothing
is queued. A second sync on the same path with nothing called in between that could launch
work (`x.tolist()` then `y.tolist()`) returns at once: the first is the straggler, and
reporting the second names no wait of its own.

The walk keeps "drained" among its facts (`DRAINED`), so a join keeps it only where every path
agrees, and a callee starts without it. A sync the model is sure of (a device tensor's copy to
the host, a blocking copy to a known device, `torch.cuda.synchronize()`) drains everything; an
event's wait does only where the event was recorded on this path with nothing launched since
(`RECORDED`), and a stream's never (it may be a side stream). A sync on a tensor the model cannot
place drains what lives with it, for later syncs on tensors it cannot place either: the tensors
of the same local object, or of the same attribute of `self` (`out.lengths.tolist()` then
`out.statuses.tolist()`). If that object is on a device the first sync waited; if it is on the
host neither does. The mark is cleared by anything that may launch work: a call the model
cannot see into, a program function that may launch (`analysis.launches`), an operator whose
operands may be device tensors (`y = a @ b`). Host builtins, logging, indexing and a tensor's
own small ops (`x.max()`, `x.float()`: one kernel on data already there) keep it.

A later sync of unknown placement on another object (`SYNCED`) waits only where the two tensors
live apart (the first read the host): it is `drained_by` the first, and the rule reports it as
the first one's follower rather than as a wait of its own (it waits in the first one's place
once that is removed, so it is listed, never dropped). On a path where nothing drained it, it
is a finding of its own. A sync the model knows is on a device keeps its own finding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rankguard.analysis.blocking_types import BlockingCall, State, lowered
from rankguard.model.facts import Cond
from rankguard.model.placement import HOST, KEEPS, TO_PYTHON
from rankguard.summary.conditions import OTHER
from rankguard.summary.ir import CALL, SUBSCRIPT, CallSite, Stmt

DRAINED: Cond = ("drained",)
# The first sync of unknown placement since anything was launched ("`x.tolist()` (path:line)"):
# a later one of unknown placement waits only if the two live apart.
SYNCED: Cond = ("synced",)
# A host-to-device copy made without `non_blocking` synchronises the current stream after it:
# it waits as a tensor's read does, and drains the queue as one.
_SYNCS = frozenset(("device-sync", "h2d-copy"))
_COPY = "h2d-copy"
_TENSOR_READ = ("torch.Tensor.", "int(tensor)", "torch.tensor(device=)")
_DEVICE_SYNC = "torch.cuda.synchronize"
_EVENT_SYNC = "torch.cuda.Event.synchronize"
# The event recorded last on the current stream, with nothing launched since (its segments).
RECORDED: Cond = ("recorded",)
_MARKS = (DRAINED, SYNCED, RECORDED)
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
# A tensor's own methods that launch at most one small kernel on data already there, or
# copy it to the host: what they queue is not the round's work.
_SMALL = KEEPS | TO_PYTHON | frozenset(("cpu", "numpy"))
# Waiting for a stream, an event or the device queues nothing.
_WAITS = frozenset(("synchronize",))
# An arithmetic operator in an expression's text.
_ARITH_TEXT = frozenset("+-*/@%&|^~")
Roots = frozenset[tuple[str, ...]]


def dominated(blocking: BlockingCall, call: CallSite, known: Mapping[Cond, Any]) -> bool:
    """A device sync with nothing queued since the last one on every path here, for what its
    tensor lives with (its receiver computed by an operator, `(a @ b).item()`, queues that
    work first)."""
    if not _reads_tensor(blocking) or operates(call.receiver):
        return False  # a stream, an event or the device may wait for a side stream's work
    drained = known.get(DRAINED)
    if drained is True:
        return True
    # A tensor known to be on a device may live apart from one the model could not place.
    unsure = blocking.confidence != "high"
    return unsure and isinstance(drained, frozenset) and bool(_roots(call) & drained)


def maybe_drained(blocking: BlockingCall, known: Mapping[Cond, Any]) -> BlockingCall:
    """A sync of unknown placement right after another one (nothing launched between) waits
    only where their tensors live apart: `drained_by` the earlier one, whose follower it is
    reported as (low confidence, naming it, where that one is not reported). A sync known to
    be on a device keeps its confidence (the earlier one may have read the host)."""
    earlier = known.get(SYNCED)
    if blocking.kind not in _SYNCS or blocking.confidence == "high" or not earlier:
        return blocking
    why = (
        f"an earlier sync of unknown placement, {earlier}, with nothing launched since, "
        "drained the queue if both tensors are on the device"
    )
    # A stream or event may hold work of its own: only a tensor's read is the earlier's follower.
    follows = _reads_tensor(blocking)
    return lowered(blocking, "low", why, drained_by=earlier if follows else "")


def operates(tree: Cond) -> bool:
    """An operator somewhere in the value tree (`a @ b`, `x * 2`): a kernel on a tensor."""
    if not isinstance(tree, tuple) or not tree:
        return False
    return tree[0] == "arith" or any(operates(part) for part in tree[1:])


def test_operates(stmt: Stmt) -> bool:
    """An operator in the test of an if / while / assert (`if node.value @ w is not None`):
    it may queue a kernel. A test's tree keeps no arithmetic (`summary.conditions`): an
    operator leaves a part it does not keep (`("other",)`), and shows in the test's text
    where that is whole (an `assert` keeps none; a comparison's `<` is no operator)."""
    if not _unkept(stmt.cond):
        return False
    text = stmt.text
    if not text or text.endswith("…"):
        return True
    return bool(_ARITH_TEXT & set(text)) or "<<" in text or ">>" in text


def _unkept(tree: Cond) -> bool:
    """A part of a test's tree the summary does not keep (`("other",)`)."""
    if not isinstance(tree, tuple) or not tree or tree[0] in ("ref", "const"):
        return False  # a reference's segments are names, not trees
    parts = tree[1:] if isinstance(tree[0], str) else tree  # a tree, or a tuple of trees
    return tree == OTHER or any(_unkept(part) for part in parts)


def _roots(call: CallSite) -> Roots:
    """What the synced tensor lives with: the local object its receiver is read from, or the
    attribute of `self` (`self` itself holds tensors of every kind)."""
    segs = call.target[:-1] if len(call.target) > 1 else _argument(call)
    while segs and segs[-1] in (CALL, SUBSCRIPT):
        segs = segs[:-1]
    if not segs or CALL in segs or (segs[0] == "self" and len(segs) < 2):
        return frozenset()
    return frozenset((segs[:2] if segs[0] == "self" else segs[:1],))


def _argument(call: CallSite) -> tuple[str, ...]:
    """What `int(t)` reads: its argument, where that is a plain reference."""
    first = call.operands[0] if call.operands else None
    return first.ref if first is not None and first.keyword is None and first.ref else ()


def assigned(
    tree: Cond, place: str | None, targets: Sequence[tuple[str, ...]], state: State
) -> State:
    """Past an assignment whose value an operator computes (`place`: where the value lives):
    maybe work queued, unless the operator works on host values (`[None] * n`). A target that
    rebinds the recorded event (or what holds it) leaves no event recorded."""
    recorded = state.known.get(RECORDED)
    if recorded and any(recorded[: len(t)] == t for t in targets):
        state = state.evolve(known={k: v for k, v in state.known.items() if k != RECORDED})
    if not marked(state.known) or not operates(tree) or place in HOST:
        return state
    if tree[0] == "arith" and any(_display(part) for part in tree[-1]):
        return state
    return _undrained(state)


def _display(tree: Cond) -> bool:
    """A list, tuple or string literal: an operator on it repeats or joins host values."""
    return bool(tree) and (tree[0] == "tuple" or (tree[0] == "const" and isinstance(tree[1], str)))


def after(blocking: BlockingCall | None, call: CallSite, quiet: bool, state: State) -> State:
    """The state past `call` (`blocking` if it is one; `quiet`: it launches no device work,
    `analysis.launches`): drained by a sync, no longer drained by a call that may launch."""
    if blocking is not None and blocking.kind in _SYNCS:
        if blocking.doubt or state.known.get(DRAINED) is True:
            return state
        if _recorded_last(blocking, call, state.known):
            return state.evolve(known={**state.known, DRAINED: True})
        if not _drains(blocking):
            return state  # a stream's or an event's wait launches nothing, and drains no queue
        if blocking.confidence == "high":
            return state.evolve(known={**state.known, DRAINED: True})
        known = dict(state.known)
        known.setdefault(SYNCED, blocking.place)
        if len(call.target) == 1 or blocking.kind == _COPY:
            # `int(sel.count)`: a count often sits on the host beside device data, so it drains
            # nothing for sure; the reads after it are its followers. So does a copy to a
            # device the model cannot name (none, if it is the host): it reads no object.
            return state.evolve(known=known)
        roots = _roots(call)
        drained = known.get(DRAINED)
        if roots and isinstance(drained, frozenset):
            roots = roots | drained
        if roots:
            known[DRAINED] = roots
        return state.evolve(known=known)
    state = state if quiet else launched(state)
    if (
        call.target[-1:] == ("record",)
        and not (call.args or call.kwargs)
        and _plain(call.target[:-1])
    ):
        # `ev.record()` on the current stream: its wait, with nothing launched since, drains it
        return state.evolve(known={**state.known, RECORDED: call.target[:-1]})
    return state


def _recorded_last(blocking: BlockingCall, call: CallSite, known: Mapping[Cond, Any]) -> bool:
    """`ev.record()` then `ev.synchronize()` with nothing launched between: everything queued
    on the current stream before the record has run."""
    receiver = call.target[:-1]
    return blocking.callee == _EVENT_SYNC and bool(receiver) and known.get(RECORDED) == receiver


def _plain(segs: tuple[str, ...]) -> bool:
    return bool(segs) and CALL not in segs and SUBSCRIPT not in segs


def _drains(blocking: BlockingCall) -> bool:
    """A read of a tensor (it waits for the queue its tensor is computed on) or a wait for
    the whole device; an event waits only for its recorded point, a stream for its own queue
    (a side stream's work is not the current one's)."""
    return _reads_tensor(blocking) or blocking.callee == _DEVICE_SYNC


def _reads_tensor(blocking: BlockingCall) -> bool:
    """A tensor's copy to the host (`.item()`, `.tolist()`, `int(t)`): it waits for the
    queue its tensor is computed on, and nothing else."""
    return blocking.callee.startswith(_TENSOR_READ)


def marks(state: State) -> tuple[Any, ...]:
    """What the path says of the queue (`_MARKS`, None where unset)."""
    return tuple(state.known.get(cond) for cond in _MARKS)


def maybe_ran(before: State, past: State) -> State:
    """Past a call the path may skip (`a and x.tolist()`): a mark holds only where it held
    both before the call and past it."""
    kept = {k: v for k, v in past.known.items() if k not in _MARKS}
    for cond in _MARKS:
        if cond in past.known and before.known.get(cond) == past.known[cond]:
            kept[cond] = past.known[cond]
    return past.evolve(known=kept)


def launched(state: State) -> State:
    """The state past something that may launch work: no sync came last."""
    return _undrained(state) if marked(state.known) else state


def drained_into(call: CallSite, known: Mapping[Cond, Any]) -> dict[Cond, Any]:
    """What the callee starts with, where the call's arguments are plain references or
    literals (`f(a * 2)` queues work on the way in): the queue drained where a sure sync came
    last; where one of unknown placement did, its mark (`SYNCED`), so the callee's reads of
    unknown placement before anything launches are its followers, as written in place."""
    if not all(o.ref is not None or o.const is not None for o in call.operands):
        return {}
    if known.get(DRAINED) is True:
        return {DRAINED: True}
    return {SYNCED: known[SYNCED]} if SYNCED in known else {}


def marked(known: Mapping[Cond, Any]) -> bool:
    """A sync or an event's record came last on this path (`DRAINED`, `SYNCED`, `RECORDED`):
    what may launch work clears it."""
    return any(cond in known for cond in _MARKS)


def _undrained(state: State) -> State:
    return state.evolve(known={k: v for k, v in state.known.items() if k not in _MARKS})


def host_call(call: CallSite) -> bool:
    """By its name, a call that launches no work of note: a host builtin, logging, a
    tensor's small op, or a wait for the device."""
    target = call.target
    if len(target) == 1:
        return target[0] in _HOST_BUILTINS
    if len(target) == 2 and target[0] in _LOGGERS and target[1] in _LOGGING:
        return True
    return target[-1] in _SMALL or target[-1] in _WAITS
