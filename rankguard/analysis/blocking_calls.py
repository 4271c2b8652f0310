"""Which calls the blocking walk reports, and how sure it is: the catalog, with precision.

The catalog says which callees may block; this module decides, for one call site, whether
what is known there clears it (a tensor on the CPU, a timeout, zmq.NOBLOCK, a thread that
cannot be alive, the Work of a collective on a device group, which a stream waits for) and the
finding's confidence: `high` only where the model knows the callee and knows it blocks,
`medium` where a guard could not decide (a tensor of unknown placement), `low` where only the
method's name matched. It also knows what runs "now and then" (cadence) and which attribute
reads run a property getter.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Mapping, Sequence

from rankguard.analysis.blocking_types import BlockingCall, Guards, call_text
from rankguard.analysis.precision import (
    bounded,
    flags_clear,
    made_by,
    receiver_fact,
    thread_dead,
    timeout_clear,
    unreachable_while,
    value_fact,
    zero_duration,
)
from rankguard.catalogs.caching import caching_catalog
from rankguard.catalogs.catalog import BlockingCatalog, BlockingEntry
from rankguard.core.chains import Hop
from rankguard.model.facts import Cond, Facts
from rankguard.model.localtypes import ELEMENT
from rankguard.model.placement import (
    CPU,
    DEVICE,
    HOST,
    STREAM,
    AttributePlacement,
    bound,
    device_of,
    of_tree,
    produced,
)
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord, Target
from rankguard.model.returns import ReturnPlacement
from rankguard.summary.ir import CALL, SUBSCRIPT, CallSite, Segs, Stmt, segs_text

_TENSOR = "torch.Tensor()"  # an instance, as the model names one of a class outside
_PROPERTY_DECORATORS = frozenset(("property", "cached_property"))


# Decorators that hand the caller the function's own result.
_KEEP_RESULT = frozenset((("staticmethod",), ("classmethod",), ("abstractmethod",), ("override",)))


class CallClassifier:
    """Per program and catalog; memoises property lookups."""

    def __init__(
        self, program: Program, catalog: BlockingCatalog, cadence_helpers: Sequence[str] = ()
    ) -> None:
        self.program = program
        self.catalog = catalog
        self.cadence_helpers = tuple(cadence_helpers)
        self._property_names: frozenset[str] | None = None
        self._property_memo: dict[tuple[str, Segs], tuple[str, ...]] = {}
        functions = program.functions.items()
        bodies = {name: record.info.body for name, record in functions}
        params = {name: frozenset(p.name for p in record.info.params) for name, record in functions}
        self.placement = AttributePlacement(bodies, params)
        # A generator returns no value of its body's; a decorator may return another value.
        opaque = frozenset(
            name
            for name, record in functions
            if record.info.is_generator
            or any(d[-1:] not in _KEEP_RESULT for d in record.info.decorators)
        )
        self.returns = ReturnPlacement(bodies, params, opaque, self.placement.attribute)

    # -- model lookups -------------------------------------------------------------------------
    def function_cadence(self, name: str) -> str | None:
        """Why everything under `name` runs only now and then: a cache, or a configured helper."""
        record = self.program.functions.get(name)
        if record is None:
            return None
        for dec in record.info.decorators:
            if caching_catalog().decorator(dec):
                return f"{dec[-1]} on `{record.info.qualname}`"
        if any(fnmatch.fnmatchcase(name, pat) for pat in self.cadence_helpers):
            return f"cadence helper `{record.info.qualname}` (config `cadence-helpers`)"
        return None

    def property_names(self) -> frozenset[str]:
        """Names some class of the program defines as a property (reading one may run code)."""
        if self._property_names is None:
            self._property_names = frozenset(
                record.info.name
                for record in self.program.functions.values()
                if record.info.cls
                and any(d and d[-1] in _PROPERTY_DECORATORS for d in record.info.decorators)
            )
        return self._property_names

    def property_targets(self, record: FunctionRecord, ref: Segs) -> tuple[str, ...]:
        """`self.budget` where `budget` is a property: reading it runs the getter."""
        if len(ref) < 2 or ref[-1] not in self.property_names() or CALL in ref or SUBSCRIPT in ref:
            return ()
        key = (record.qualname, ref)
        if key in self._property_memo:
            return self._property_memo[key]
        resolver = self.program.resolver
        found: list[str] = []
        for owner in resolver.evaluate(record, ref[:-1]):  # type: ignore[attr-defined]
            if owner.kind != "instance":
                continue
            for cls in self.program.mro(owner.name):
                method = self.program.classes[cls].methods.get(ref[-1])
                if method is not None:
                    decorators = self.program.functions[method].info.decorators
                    if any(d and d[-1] in _PROPERTY_DECORATORS for d in decorators):
                        found.append(method)
                    break
        result = tuple(sorted(set(found)))
        self._property_memo[key] = result
        return result

    # -- the catalog, with precision -------------------------------------------------------------
    def blocking_call(
        self,
        record: FunctionRecord,
        call: CallSite,
        stmt_calls: Sequence[CallSite],
        targets: Sequence[Target],
        env: Mapping[str, str],
        guards: Guards,
        cadence: str | None,
        known: Facts | None = None,
    ) -> BlockingCall | None:
        entry: BlockingEntry | None = None
        target_name = ""
        confidence, note = "high", ""
        for target in targets:
            config_only = target.name in self.program.functions
            found = self.catalog.match(target.name, config_only=config_only)
            if found is not None:
                entry, target_name = found, target.name
                break
        if entry is None:
            method = call.target[-1] if call.target else ""
            # A library value known only as a container's element is typed no better.
            untyped = all(t.name.startswith("typing.") or t.via == ELEMENT for t in targets)
            if untyped and len(call.target) >= 2 and method not in (CALL, SUBSCRIPT):
                entry = self.catalog.by_method(method)
                confidence = "low"
                receiver = segs_text(call.target[:-1])
                note = f"receiver `{receiver}` not typed: matched by the name `.{method}()`"
        if entry is None:
            return None
        guard = entry.guard
        if guard in _COPIES and self._to_host(call, stmt_calls, env):
            # `.to("cpu")`, `h.copy_(d)`: `.cpu()` of what is copied
            env = bound(call, env, known or {}, self.placement.attribute)
            source = self._copied(call, stmt_calls, env)
            entry = self.catalog.match(_TO_HOST_ENTRY)
            if entry is None or source in HOST:
                return None
            guard = ""
            if source == DEVICE:
                confidence, note = "high", "the tensor is known to live on a device"
            elif confidence != "low":  # a receiver typed by its method's name alone stays low
                confidence, note = "medium", "the tensor's device is not known here"
        taken = (*guards,)
        if bounded(call, stmt_calls):
            return None
        if any(unreachable_while(call, taken, m, False) for m in entry.ready):
            return None
        if guard == "tensor-device":
            env = bound(call, env, known or {}, self.placement.attribute)
            fact = receiver_fact(call, stmt_calls, env, self.placement.attribute)
            if fact in HOST:
                return None
            if fact == DEVICE:
                confidence, note = "high", "the tensor is known to live on a device"
            elif confidence != "low":
                confidence, note = "medium", "the tensor's device is not known here"
        elif guard == "tensor-arg":
            read = self._tensor_read(record, call, stmt_calls, env)
            if read is None:
                return None
            confidence, note = read
        elif guard == "device-result":
            made = self._made_on(call, env)
            if made is None:
                return None
            confidence, note = made
        elif guard == "host-to-device":
            copied = self._copied_to_device(call, stmt_calls, env)
            if copied is None:
                return None
            confidence, note = copied
        elif guard == "copy-across":
            if (
                _truthy(call.kwarg("non_blocking"))
                or self._first_place(call, stmt_calls, env) != CPU
            ):
                return None
            if receiver_fact(call, stmt_calls, env, self.placement.attribute) != DEVICE:
                return None
            confidence, note = "high", "a host tensor copied into a device tensor"
        elif guard == "zmq-flags":
            if flags_clear(call, known or {}):
                return None
            if call.args or call.kwarg("flags") is not None:
                confidence, note = "medium", "flags passed that may include zmq.NOBLOCK"
        elif guard == "timeout":
            if timeout_clear(call, entry):
                return None
            if entry.kind == _WORK_WAIT:
                env = bound(call, env, known or {}, self.placement.attribute)
                if receiver_fact(call, stmt_calls, env, self.placement.attribute) == STREAM:
                    return None  # a device group's Work: the stream waits, not the host
        elif guard == "thread-dead" and (thread_dead(call, taken) or timeout_clear(call, entry)):
            return None
        if guard == "duration" and zero_duration(call):
            return None
        return BlockingCall(
            callee=entry.name,
            target=target_name,
            kind=entry.kind,
            reason=entry.reason,
            confidence=confidence,
            note=note,
            text=call_text(call),
            path=record.path,
            line=call.line,
            col=call.col,
            function=record.qualname,
            chain=(Hop(record.qualname, record.path, call.line),),
            cadenced=cadence,
        )

    def _tensor_read(
        self,
        record: FunctionRecord,
        call: CallSite,
        stmt_calls: Sequence[CallSite],
        env: Mapping[str, str],
    ) -> tuple[str, str] | None:
        """`int(t)`: (confidence, note) where the argument is a tensor that may be on a
        device: known to be (high), or a reference the model types as a tensor by its
        annotation (`sel.count` of a `count: torch.Tensor` field) but cannot place (medium)."""
        first = call.operands[0] if call.operands else None
        if first is None or first.keyword is not None:
            return None
        place = self._first_place(call, stmt_calls, env)
        if first.ref is None:  # `bool(t.norm())`: where the one call it makes leaves its result
            return ("high", "the tensor is known to live on a device") if place == DEVICE else None
        if place == DEVICE:
            return "high", "the tensor is known to live on a device"
        if place in HOST or CALL in first.ref or SUBSCRIPT in first.ref:
            return None
        values = self.program.resolver.evaluate(record, first.ref)  # type: ignore[attr-defined]
        if values and all(v.kind == "external" and v.name == _TENSOR for v in values):
            return "medium", "a tensor by its annotation; its device is not known here"
        return None

    def _first_place(
        self, call: CallSite, stmt_calls: Sequence[CallSite], env: Mapping[str, str]
    ) -> str | None:
        """Where the first positional argument lives: a reference's fact, or where the one call
        that makes it leaves its result."""
        first = call.operands[0] if call.operands else None
        if first is None or first.keyword is not None:
            return None
        if first.ref is None:
            return made_by(first, call, stmt_calls, env, self.placement.attribute)
        return value_fact(first.ref, stmt_calls, call, env, self.placement.attribute)

    def _to_host(
        self, call: CallSite, stmt_calls: Sequence[CallSite], env: Mapping[str, str]
    ) -> bool:
        """A copy whose destination is the host: `.to("cpu")` (without `non_blocking=True`,
        which returns before the data is there) or `h.copy_(src)` into a host tensor. Either
        is `.cpu()` of what it copies (`_copied`) for what it waits on."""
        if _truthy(call.kwarg("non_blocking")):
            return False
        if call.target[-1:] == ("copy_",):
            return receiver_fact(call, stmt_calls, env, self.placement.attribute) == CPU
        target = call.kwarg("device") or (call.args[0] if call.args else None)
        made = produced(call, env, lambda: None) or self._device_held(target, env)
        return made == CPU

    def _copied(
        self, call: CallSite, stmt_calls: Sequence[CallSite], env: Mapping[str, str]
    ) -> str | None:
        """Where the tensor a copy reads lives: `src` of `dst.copy_(src)`, else the receiver."""
        if call.target[-1:] == ("copy_",):
            return self._first_place(call, stmt_calls, env)
        return receiver_fact(call, stmt_calls, env, self.placement.attribute)

    def lock_calls(
        self, record: FunctionRecord, stmt: Stmt, cadence: str | None
    ) -> dict[tuple[str, int, int, str], BlockingCall]:
        """`with self._lock:` acquires the lock (no call appears in the source)."""
        found: dict[tuple[str, int, int, str], BlockingCall] = {}
        resolver = self.program.resolver
        fn = record.qualname
        for item in stmt.items:
            if item[0] != "ref":
                continue
            ref = item[1]
            for value in resolver.evaluate(record, ref):  # type: ignore[attr-defined]
                entry = self.catalog.context(value.name) if value.kind == "external" else None
                if entry is None:
                    continue
                call = BlockingCall(
                    entry.name, value.name, entry.kind, entry.reason, "high",
                    "`with` acquires it", f"with {'.'.join(ref)}:", record.path,
                    stmt.line, 0, fn, (Hop(fn, record.path, stmt.line),), cadence,
                )  # fmt: skip
                found[call.key] = call
        return found

    def _made_on(self, call: CallSite, env: Mapping[str, str]) -> tuple[str, str] | None:
        """`torch.tensor(data, device=...)`: (confidence, note) where the device it names may
        be an accelerator; None where it is the host or not named (PyTorch's default)."""
        if call.args and call.args[0].strip() in ("[]", "()"):
            return None  # nothing to copy
        made = produced(call, env, lambda: None) or self._device_held(call.kwarg("device"), env)
        if made == DEVICE:
            return "high", "the tensor is made on a device"
        if made is None and _unnamed_device(call.kwarg("device")):
            return "low", "the device it is made on is not known here"
        return None

    def _device_held(self, text: str | None, env: Mapping[str, str]) -> str | None:
        """What a device argument spelled as a reference holds (`device=self.device`, set
        to a device somewhere): its placement as an attribute or a local."""
        segs = tuple(text.strip().split(".")) if text else ()
        if not segs or not all(seg.isidentifier() for seg in segs):
            return None
        return device_of(("ref", segs), dict(env), {}, self.placement.attribute)

    def _copied_to_device(
        self, call: CallSite, stmt_calls: Sequence[CallSite], env: Mapping[str, str]
    ) -> tuple[str, str] | None:
        """`h.to(device)` / `h.cuda()`: (confidence, note) where a host tensor is copied to a
        device without `non_blocking=True` (the copy then waits for the current stream); None
        where the receiver is not known to be a host tensor, the target is the host or a dtype,
        or the copy does not block."""
        if _truthy(call.kwarg("non_blocking")):
            return None
        if receiver_fact(call, stmt_calls, env, self.placement.attribute) != CPU:
            return None
        target = call.kwarg("device") or (call.args[0] if call.args else None)
        made = produced(call, env, lambda: CPU) or self._device_held(target, env)
        if made == DEVICE:
            return "high", "a host tensor copied to a device"
        if made is None and _unnamed_device(target):
            return "low", "a host tensor copied to a device the model cannot name"
        return None

    def truth_test(
        self, record: FunctionRecord, stmt: Stmt, env: Mapping[str, str], cadence: str | None
    ) -> BlockingCall | None:
        """The test of an `if` / `while` / `assert` reads a tensor known to live on a device: a
        reference, what a reduction or a value comparison makes of one (`torch.any(mask)`,
        `x.sum() > 0`), a search in one (`0 in x`), or any operand of `and`/`or` that does
        (`flag and torch.any(x)` reads it wherever `flag` holds); `x is None` tests the
        object."""
        attrs = self.placement.attribute
        if not any(of_tree(part, env, {}, attrs) == DEVICE for part in _truths(stmt.cond)):
            return None
        entry = self.catalog.match("<builtin>.bool")
        if entry is None:
            return None
        fn = record.qualname
        return BlockingCall(
            entry.name, "", entry.kind, entry.reason, "high",
            "the tensor is known to live on a device",
            _test_text(stmt),
            record.path, stmt.line, 0, fn, (Hop(fn, record.path, stmt.line),), cadence,
        )  # fmt: skip


def _test_text(stmt: Stmt) -> str:
    if stmt.kind == "expr":
        return f"assert {stmt.text}"
    return f"{'while' if stmt.kind == 'loop' else 'if'} {stmt.text}:"


_VALUE_COMPARISONS = frozenset(("==", "!=", "<", "<=", ">", ">="))
# What a test computes from a tensor and reads as a truth: a reduction to one value.
_REDUCTIONS = frozenset(("any", "all", "sum", "max", "min", "mean", "prod", "count_nonzero"))


# Guards of copies that may run either way; one to the host is `.cpu()` (`_to_host`).
_COPIES = frozenset(("host-to-device", "copy-across"))
_TO_HOST_ENTRY = "torch.Tensor.cpu"
_WORK_WAIT = "work-wait"


def _truths(cond: Cond) -> Iterator[Cond]:
    """The values whose truth (or search) a test reads from them: itself, or each operand of
    `and`/`or`, through `not`; the container of `a in b`."""
    tag = cond[0] if cond else "other"
    if tag == "not":
        yield from _truths(cond[1])
    elif tag in ("and", "or"):
        for part in cond[1]:
            yield from _truths(part)
    elif tag == "cmp" and len(cond[1]) == 1 and cond[1][0] in ("in", "not in"):
        yield cond[2][1]
    elif cond and _valued(cond):
        yield cond


def _valued(cond: Cond) -> bool:
    """A test whose truth is a tensor's value where it is made from one: a reference, a
    reduction (`torch.any(mask)`, `x.all()`), or a value comparison with either (`x.sum() > 0`,
    `n > 0`: comparing a tensor makes a tensor of booleans). Which operand is a device tensor
    is the placement's to say (`of_tree`): a device name (`self.device == "cuda"`), a shape or
    a count is none, and asking what a tensor is (`torch.is_tensor(x)`) reads no value."""
    tag = cond[0]
    if tag == "ref":
        return True
    if tag == "call":
        return cond[1][-1] in _REDUCTIONS
    if tag == "cmp" and set(cond[1]) <= _VALUE_COMPARISONS:
        if any(_designates(part) for part in cond[2]):
            return False  # `self.device == "cuda"`: device names, whatever their placement says
        return any(part[0] == "ref" or _valued(part) for part in cond[2])
    return False


def _unnamed_device(text: str | None) -> bool:
    """A device argument the placement could not name: an expression (`self.device`), not a
    literal (a literal that names no accelerator, `"meta"`, makes no copy)."""
    return text is not None and text.strip()[:1] not in ("'", '"')


def _truthy(text: str | None) -> bool:
    """An argument written as a true literal (`non_blocking=True`, `=1`)."""
    return text is not None and text.strip() in ("True", "1")


def _designates(tree: Cond) -> bool:
    """A device's name or handle (`"cuda"`, `torch.device("cuda")`, a tensor's `x.device`):
    what is compared with one names a device too, and a tensor never is."""
    if tree[0] == "const":
        return isinstance(tree[1], str)
    return tree[0] in ("call", "ref") and tree[1][-1:] == ("device",)
