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

from rankguard.analysis.blocking_types import BlockingCall
from rankguard.analysis.reach import followed
from rankguard.model.program import Program
from rankguard.summary.ir import CALL, CallSite, Segs, Stmt, walk_statements

# Builtins that run no code of the program's and cannot wait.
_BUILTINS = frozenset(
    """len isinstance issubclass list dict set frozenset tuple sorted min max sum any all range
    enumerate zip int float str bool id hash getattr hasattr reversed abs round""".split()  # noqa: SIM905
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
# A condition's own methods inside its `with`: `wait` releases the lock while it waits.
_OWN_CONDITION = frozenset(("wait", "wait_for", "notify", "notify_all"))


class CriticalSections:
    """Per program: each lock attribute's `with` sections, and whether it escapes them."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self._sections: dict[str, list[tuple[str, Stmt, Segs]]] | None = None
        self._escaped: set[str] = set()
        self._short: dict[str, bool] = {}

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
            self._sections = dict(sections)
        return self._sections

    def _section_short(self, function: str, stmt: Stmt, lock: Segs) -> bool:
        """Every statement of the section runs only quick calls, and no `while` or nested
        `with` (which may spin or take another lock)."""
        for inner in walk_statements(stmt.blocks[0]):
            if inner.kind == "with" or (inner.kind == "loop" and inner.cond):
                return False
            if not all(self._quick(function, call, lock) for call in inner.calls):
                return False
        return True

    def _quick(self, function: str, call: CallSite, lock: Segs) -> bool:
        if call.deferred:
            return True  # a lambda's body runs later, not while the lock is held
        if call.target[:-1] == lock and call.target[-1] in _OWN_CONDITION:
            return True
        targets = followed(self.program, function, call)
        return bool(targets) and all(_quick_name(t.name.replace("()", "")) for t in targets)


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
