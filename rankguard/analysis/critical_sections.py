"""Locks held only for bookkeeping: taking one waits a few bytecodes, not for a slow peer.

`with self._lock:` waits while another thread holds the lock. Where every critical section of
that lock in the program runs only short operations that cannot wait (container updates, a
clock read, `notify`, a `wait` on the lock's own condition, which releases it), no holder keeps
it across a wait, so taking it is no straggler's cause. Sections are grouped by the lock's
attribute name across the whole program (locks of unrelated classes that share a name are
judged together: more sections, never fewer). A lock used any other way (`.acquire()`, read
into a local, handed to a `Condition` or a function) may be held across anything, so its
sections are not all known and it stays a wait.

Read after the walk, from findings (as `analysis.warm` is): kept summaries stay independent of
code elsewhere in the program.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from rankguard.analysis.blocking_types import BlockingCall
from rankguard.analysis.reach import followed
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord
from rankguard.summary.ir import CALL, SUBSCRIPT, CallSite, Segs, Stmt, walk_statements

# Builtins that run no code of the objects given them (`str(x)` runs `x.__str__`, `sorted`
# a key, `list(g)` a generator), and builtin containers' constructors, quick only when what
# they are given is itself a builtin container (`set(self._done)`).
_BUILTINS = frozenset(("len", "isinstance", "issubclass", "id"))
_COPIES = frozenset(("set", "list", "dict", "tuple", "frozenset"))
_CONTAINER_VALUES = ("<builtin>.set", "<builtin>.dict", "<builtin>.list", "<builtin>.tuple")
# How the program makes a lock: only an attribute set to a new one is that lock alone.
_LOCKS = frozenset(
    f"{module}.{kind}"
    for module in ("threading", "multiprocessing")
    for kind in ("Lock", "RLock", "Condition", "Semaphore", "BoundedSemaphore")
)
# Library calls that return at once (names as resolved, `()` removed).
_QUICK = frozenset(
    (
        "time.monotonic",
        "time.monotonic_ns",
        "time.time",
        "time.time_ns",
        "time.perf_counter",
        "queue.Queue.put_nowait",
        "queue.Queue.get_nowait",
        "queue.Queue.qsize",
        "queue.Queue.empty",
        "threading.Event.set",
        "threading.Event.is_set",
        "threading.Event.clear",
    )
)
# Builtin containers: every method is a quick in-memory update.
_CONTAINERS = ("<builtin>.set.", "<builtin>.dict.", "<builtin>.list.", "collections.deque.")
# A condition's own methods inside its `with`: `wait` releases the lock while it waits
# (`wait_for` runs its predicate holding it).
_OWN_CONDITION = frozenset(("wait", "notify", "notify_all"))


class CriticalSections:
    """Per program: each lock attribute's `with` sections, and whether it escapes them."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self._sections: dict[str, list[tuple[str, Stmt, Segs]]] | None = None
        self._escaped: set[str] = set()
        self._short: dict[str, bool] = {}
        self._property_names: frozenset[str] | None = None

    def short(self, call: BlockingCall) -> bool:
        """`call` is a `with` taking a lock (`analysis.blocking_calls.lock_calls`) whose every
        section is short."""
        if not (call.text.startswith("with ") and call.text.endswith(":")):
            return False
        ref = tuple(call.text[len("with ") : -1].split("."))
        record = self.program.functions.get(call.function)
        if record is None or len(ref) < 2:
            return False
        held = any(
            s.kind == "with" and s.line == call.line and ("ref", ref) in s.items
            for s in walk_statements(record.info.body)
        )
        return held and self._all_short(ref[-1])

    def _all_short(self, attr: str) -> bool:
        if attr not in self._short:
            sections = self._index().get(attr, [])
            self._short[attr] = (
                attr not in self._escaped
                and bool(sections)
                and all(self._section_short(f, s, ref) for f, s, ref in sections)
            )
        return self._short[attr]

    def _index(self) -> dict[str, list[tuple[str, Stmt, Segs]]]:
        """attribute -> its `with` sections; and the attributes read anywhere else."""
        if self._sections is None:
            sections: dict[str, list[tuple[str, Stmt, Segs]]] = defaultdict(list)
            for name, record in self.program.functions.items():
                for stmt in walk_statements(record.info.body):
                    held = {item[1] for item in stmt.items if item[0] == "ref"}
                    for ref in held:
                        if len(ref) >= 2:
                            sections[ref[-1]].append((name, stmt, ref))
                    for ref in _references(stmt):
                        if ref not in held:
                            self._escaped.update(seg for seg in ref[1:] if seg != CALL)
                    self._escaped.update(self._aliased(name, stmt))
                for param in record.info.params:  # `def f(lk=TRACKER._lock)`
                    self._escaped.update(str(param.default or "").replace("(", ".").split("."))
            self._sections = dict(sections)
        return self._sections

    def _section_short(self, function: str, stmt: Stmt, lock: Segs) -> bool:
        """Every statement of the section runs only quick calls, and no `while` or nested
        `with` (which may spin or take another lock)."""
        record = self.program.functions[function]
        if len(stmt.items) > 1 or stmt.calls or record.info.is_async:
            return False  # another item, or an `await`, runs while the lock is held
        for inner in walk_statements(stmt.blocks[0]):
            if inner.kind == "with" or (inner.kind == "loop" and inner.cond) or inner.yields:
                return False
            if any(self._runs_code(record, ref) for ref in (*inner.reads, *_items(inner))):
                return False
            if not all(self._quick(function, call, lock) for call in inner.calls):
                return False
        return True

    def _aliased(self, function: str, stmt: Stmt) -> Iterator[str]:
        """Attributes set to anything but a new lock (`self._lock = OTHER._mutex`: the same
        lock under another name), and those named to `getattr` (`getattr(t, "_lock")`)."""
        for call in stmt.calls:
            if call.target == ("getattr",) and len(call.args) > 1:
                yield call.args[1].strip("'\"")
        stored = [t[-1] for t in stmt.targets if len(t) >= 2]
        if not stored or stmt.kind != "assign":
            return
        made = [
            t.name.replace("()", "")
            for call in stmt.calls
            if stmt.value and stmt.value[:2] == ("call", call.target)
            for t in followed(self.program, function, call)
        ]
        if not made or not all(name in _LOCKS for name in made):
            yield from stored

    def _runs_code(self, record: FunctionRecord, ref: Segs) -> bool:
        """Reading `ref` may run the program's code: a property, or an item of an object that
        is not a builtin container (`__getitem__`, `__missing__`)."""
        if ref[-1] in self._properties():
            return True
        if SUBSCRIPT not in ref:
            return False
        base = ref[: ref.index(SUBSCRIPT)]
        values = self.program.resolver.evaluate(record, base)  # type: ignore[attr-defined]
        return not values or not all(v.name.startswith(_CONTAINER_VALUES) for v in values)

    def _properties(self) -> frozenset[str]:
        if self._property_names is None:
            self._property_names = frozenset(
                r.info.name
                for r in self.program.functions.values()
                if r.info.decorated("property") or r.info.decorated("cached_property")
            )
        return self._property_names

    def _quick(self, function: str, call: CallSite, lock: Segs) -> bool:
        if call.deferred:
            return True  # a lambda's body runs later, not while the lock is held
        if call.target[:-1] == lock and call.target[-1] in _OWN_CONDITION:
            return True
        targets = [t.name.replace("()", "") for t in followed(self.program, function, call)]
        if targets and all(t.startswith("<builtin>.") and t[10:] in _COPIES for t in targets):
            record = self.program.functions[function]
            given = [o.ref for o in call.operands]
            return all(  # `set(self._done)`: a copy of a builtin container
                ref is not None
                and (values := self.program.resolver.evaluate(record, ref))  # type: ignore[attr-defined]
                and all(v.name.startswith(_CONTAINER_VALUES) for v in values)
                for ref in given
            )
        return bool(targets) and all(_quick_name(t) for t in targets)


def _quick_name(name: str) -> bool:
    if name.startswith("<builtin>.") and name[len("<builtin>.") :] in _BUILTINS:
        return True
    return name in _QUICK or name.startswith(_CONTAINERS)


def _references(stmt: Stmt) -> Iterator[Segs]:
    """What a statement reads: its value's references, its calls' targets and arguments; a
    condition's own `wait`/`notify` (its receiver read to call them) uses it as a lock."""
    own = {c.target[:-1] for c in stmt.calls if c.target[-1:] and c.target[-1] in _OWN_CONDITION}
    yield from (ref for ref in stmt.reads if ref not in own)
    for call in stmt.calls:
        if call.target[:-1] not in own:
            yield call.target
        for operand in call.operands:
            yield from operand.reads
            if operand.ref:
                yield operand.ref


def _items(stmt: Stmt) -> Iterator[Segs]:
    """The subscripts a statement reads or stores (`t[k]`, `self.c[k] = v`), from its value's
    tree and its targets: reads keep only the plain references."""
    yield from (t for t in stmt.targets if SUBSCRIPT in t)
    todo: list[Any] = [stmt.tree]
    while todo:
        node = todo.pop()
        if isinstance(node, tuple) and node[:1] == ("ref",) and SUBSCRIPT in node[1]:
            yield node[1]
        elif isinstance(node, tuple):
            todo.extend(n for n in node if isinstance(n, tuple))
