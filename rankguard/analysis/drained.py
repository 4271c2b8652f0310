"""A device sync waits for the work queued on the device before it; right after one, nothing
is queued. A second sync on the same path with nothing called in between that could launch
work (`x.tolist()` then `y.tolist()`) returns at once: the first is the straggler, and
reporting the second names no wait of its own.

The walk keeps "drained" among its facts (`DRAINED`), so a join keeps it only where every path
agrees, and a callee starts without it. A sync the model is sure of (a device tensor's copy to
the host, `torch.cuda.synchronize()`) drains everything; an event's wait does only where the
event was recorded on this path with nothing launched since (`RECORDED`), and a stream's never
(it may be a side stream). A sync on a tensor the model cannot
place drains what lives with it, for later syncs on tensors it cannot place either: the tensors
of the same local object, or of the same attribute of `self` (`out.lengths.tolist()` then
`out.statuses.tolist()`). If that object is on a device the first sync waited; if it is on the
host neither does. The mark is cleared by anything that may launch work: a call the model
cannot see into, a program function that may launch (`analysis.launches`), an operator whose
operands may be device tensors (`y = a @ b`). Host builtins, logging, indexing and a tensor's
own small ops (`x.max()`, `x.float()`: one kernel on data already there) keep it.

A sync on one side of a conditional expression, or past `a and` (a call's `under`), drains the
queue only on the paths where those tests held: the walk joins the marks away, but keeps them
under the tests (`GIVEN`). A later call under the same tests runs only on those paths, and
starts with those marks there, while nothing has launched and nothing could have changed the
tests' values since: no call but a read (a host builtin, a tensor's own small op), and no
assignment but to a local the tests do not read (`int(x.max().item()) if x.numel() > 0 else 0`
then the same for `x.sum()`).

A later sync of unknown placement on another object (`SYNCED`) waits only where the two tensors
live apart (the first read the host): it is `drained_by` the first, and the rule reports it as
the first one's follower rather than as a wait of its own (it waits in the first one's place
once that is removed, so it is listed, never dropped). On a path where nothing drained it, it
is a finding of its own. A sync the model knows is on a device keeps its own finding.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from rankguard.analysis.blocking_types import BlockingCall, State, lowered
from rankguard.model.facts import Cond
from rankguard.model.placement import HOST, KEEPS, TO_PYTHON
from rankguard.summary.ir import CALL, SUBSCRIPT, CallSite

DRAINED: Cond = ("drained",)
# The first sync of unknown placement since anything was launched ("`x.tolist()` (path:line)"):
# a later one of unknown placement waits only if the two live apart.
SYNCED: Cond = ("synced",)
_SYNC = "device-sync"
_TENSOR_READ = ("torch.Tensor.", "int(tensor)")
_DEVICE_SYNC = "torch.cuda.synchronize"
_EVENT_SYNC = "torch.cuda.Event.synchronize"
# The event recorded last on the current stream, with nothing launched since (its segments).
RECORDED: Cond = ("recorded",)
# The marks past a call that runs only where its tests held (`x.item() if c else 0`), kept
# under those tests: ((test, side), ...), ((mark, value), ...).
GIVEN: Cond = ("given",)
_MARKS = (DRAINED, SYNCED, RECORDED, GIVEN)
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
# Calls that only read what they are handed: a test's value stays what it was past them (not
# `next(it)`, nor `rows.sort()`).
_READ_BUILTINS = _HOST_BUILTINS - frozenset(("iter", "next"))
_READ_METHODS = (_SMALL | _WAITS) - frozenset(("sort",))
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
    if blocking.kind != _SYNC or blocking.confidence == "high" or not earlier:
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
    if GIVEN in state.known and not _keeps_tests(state.known[GIVEN][0], targets):
        state = ungiven(state)
    if not marked(state.known) or not operates(tree) or place in HOST:
        return state
    if tree[0] == "arith" and any(_display(part) for part in tree[-1]):
        return state
    return _undrained(state)


def _display(tree: Cond) -> bool:
    """A list, tuple or string literal: an operator on it repeats or joins host values."""
    return bool(tree) and (tree[0] == "tuple" or (tree[0] == "const" and isinstance(tree[1], str)))


def after(
    blocking: BlockingCall | None,
    call: CallSite,
    quiet: bool,
    state: State,
    program: bool = False,
) -> State:
    """The state past `call` (`blocking` if it is one; `quiet`: it launches no device work,
    `analysis.launches`; `program`: it may run the program's own code, whatever its name):
    drained by a sync, no longer drained by a call that may launch."""
    if blocking is not None and blocking.kind == _SYNC:
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
        if len(call.target) == 1:
            # `int(sel.count)`: a count often sits on the host beside device data, so it drains
            # nothing for sure; the reads after it are its followers.
            return state.evolve(known=known)
        roots = _roots(call)
        drained = known.get(DRAINED)
        if roots and isinstance(drained, frozenset):
            roots = roots | drained
        if roots:
            known[DRAINED] = roots
        return state.evolve(known=known)
    state = state if quiet else launched(state)
    if GIVEN in state.known and (program or not _reads_only(call.target)):
        state = ungiven(state)  # it may change what the tests read
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


def given_start(call: CallSite, state: State) -> State:
    """The state `call` starts in where it runs only under the tests an earlier sync ran
    under (`GIVEN`): on those paths that sync ran, and nothing launched since. A mark the path
    holds already stays (it holds on every path); a sure drain there is kept over a partial one."""
    given = state.known.get(GIVEN)
    if not given or not call.under or call.bound or not set(given[0]) <= set(call.under):
        return state
    known = dict(state.known)
    for cond, value in given[1]:
        held = known.get(cond)
        known[cond] = value if held is None or (cond == DRAINED and value is True) else held
    return state.evolve(known=known)


def kept_given(
    call: CallSite,
    stmt_calls: Sequence[CallSite],
    infeasible: Callable[[Cond, bool, Mapping[Cond, Any]], bool],
    runs_program: Callable[[CallSite], bool],
    before: State,
    start: State,
    past: State,
) -> State:
    """Past a call that may not run (`a and x.tolist()`), from `before` (`start` where the
    tests it runs under give it marks) to `past`: what it ran, or drained, is not sure
    (`maybe_ran`). Where it changed the marks it started with, they are kept under
    the tests of its `under` the facts leave open (`GIVEN`), where each test's value stays put
    while nothing but reads runs (`_steady`), and the statement's other calls only read (one
    on the other side, `rows.append(1) if not rows else x.item()`, may change what the test
    reads before it is read again; `runs_program`: one the program defines may do anything,
    whatever its name)."""
    kept = maybe_ran(before, past.evolve(ran=before.ran))
    left = {c: past.known[c] for c in _MARKS if c != GIVEN and c in past.known}
    if call.bound or not left or marks(past) == marks(start):
        return kept
    if left == {c: kept.known.get(c) for c in left}:
        return kept
    tests = tuple((c, s) for c, s in call.under if not infeasible(c, not s, start.known))
    if not tests or not all(_steady(cond) for cond, _ in tests):
        return kept
    if not all(_reads_only(c.target) and not runs_program(c) for c in stmt_calls):
        return kept
    return kept.evolve(known={**kept.known, GIVEN: (tests, tuple(left.items()))})


def _steady(cond: Cond) -> bool:
    """A test whose value stays put while only reads run and nothing it reads is assigned:
    references, literals, comparisons, and calls that only read (`x.numel()`, `len(rows)`)."""
    tag = cond[0] if cond else "other"
    if tag == "const":
        return True
    if tag == "ref":
        return CALL not in cond[1]
    if tag == "not":
        return _steady(cond[1])
    if tag in ("and", "or", "tuple"):
        return all(_steady(part) for part in cond[1])
    if tag == "cmp":
        return all(_steady(part) for part in cond[2])
    if tag == "call":
        receiver = cond[4] if len(cond) > 4 else None
        return (
            _reads_only(cond[1])
            and (CALL not in cond[1] or (receiver is not None and _steady(receiver)))
            and all(_steady(arg) for arg in cond[2])
            and all(_steady(arg) for _, arg in cond[3])
        )
    return False


def _read_refs(cond: Cond) -> Iterable[tuple[str, ...]]:
    """What a steady test reads: its references, and the receivers of its calls."""
    tag = cond[0] if cond else "other"
    if tag == "ref":
        yield cond[1]
    elif tag == "not":
        yield from _read_refs(cond[1])
    elif tag in ("and", "or", "tuple"):
        for part in cond[1]:
            yield from _read_refs(part)
    elif tag == "cmp":
        for part in cond[2]:
            yield from _read_refs(part)
    elif tag == "call":
        yield cond[1][:-1]
        for arg in (*cond[2], *(arg for _, arg in cond[3]), *cond[4:]):
            yield from _read_refs(arg)


def _keeps_tests(tests: Sequence[tuple[Cond, bool]], targets: Sequence[tuple[str, ...]]) -> bool:
    """An assignment leaves the tests' values as they were: it binds only locals the tests do
    not read (a store into an object may reach what they read through another name)."""
    read = {segs[0] for cond, _ in tests for segs in _read_refs(cond) if segs}
    return all(len(t) == 1 and t[0] not in read for t in targets)


def _reads_only(target: tuple[str, ...]) -> bool:
    """A call that changes nothing a test reads: a host builtin that only reads, logging, a
    tensor's own small op or a wait."""
    if len(target) == 1:
        return target[0] in _READ_BUILTINS
    if len(target) == 2 and target[0] in _LOGGERS and target[1] in _LOGGING:
        return True
    return target[-1] in _READ_METHODS


def past_getter(state: State, quiet: bool) -> State:
    """Before a property's getter runs: what it queues undoes a drain before it, and it may
    write what a test reads."""
    return ungiven(state if quiet else launched(state))


def ungiven(state: State) -> State:
    """Past what may change a test's value (a call that may write, a property's getter)."""
    if GIVEN not in state.known:
        return state
    return state.evolve(known={k: v for k, v in state.known.items() if k != GIVEN})
