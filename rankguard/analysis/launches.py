"""Which calls may launch work on a device, for `analysis.drained`: after a sync the queue
stays empty until one does.

A call launches nothing when everything it may run is *quiet*: a host builtin or logging, a
container's own method (`rows.append(x)`), a tensor's small op on data already there, a device
event's marker or timing read (`end.record()`, `start.elapsed_time(end)`), a wait for a
stream or event (`done.synchronize()`), a host-only standard
library helper (`itertools.repeat`, `collections.deque`, `math.ceil`), building
a record (a class with no constructor of its own, a `msgspec.Struct`), or a program function
whose body calls only quiet things and computes no operator (`x * 2` may be a kernel), in a
value or a test (`if node.value @ w is not None`). One
with a `with` block (its exit runs code this does not see) is not taken as quiet. Functions
that call each other (a recursive walk of a tree that collects values on the host) are quiet
together where nothing else they call launches: whatever finite run they make, each step calls
only quiet things or each other. The answer is the largest such set, so it does not depend on
which caller asks first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rankguard.analysis.drained import host_call, operates, test_operates
from rankguard.model.program import Program
from rankguard.model.records import Target
from rankguard.summary.ir import CallSite, walk_statements

# Constructors of record types from outside the program: they store their fields.
_RECORD_INITS = frozenset(
    ("msgspec.Struct.__init__", "typing.NamedTuple.__init__", "builtins.object.__init__")
)
# Methods of Python's containers that no tensor has: what they do stays on the host.
_CONTAINER_METHODS = frozenset(
    (
        "append", "appendleft", "extend", "extendleft", "insert", "pop", "popleft", "popitem",
        "remove", "discard", "clear", "get", "items", "keys", "setdefault", "update", "join",
        "startswith", "endswith", "format", "strip", "split", "lower", "upper", "replace",
    )
)  # fmt: skip
_OPERATOR_TEXT = frozenset("+-*/@%&|^~<>")
# Standard library modules whose functions and classes touch only host values.
_HOST_MODULES = frozenset(
    (
        "itertools", "collections", "functools", "math", "time", "json", "re", "os", "uuid",
        "datetime", "enum", "dataclasses", "string", "random", "heapq", "bisect", "queue",
        "threading", "socket", "struct", "hashlib", "pathlib", "shutil", "tempfile",
    )
)  # fmt: skip
_EVENT_CALL = re.compile(r"torch(\.cuda)?(\.streams)?\.Event(\(\))?\.(record|query|elapsed_time)")


class Launches:
    """Per program, memoised per function: is it quiet."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self._quiet: dict[str, bool] = {}

    def quiet_call(self, call: CallSite, targets: Sequence[Target]) -> bool:
        """Nothing `call` may run launches device work."""
        functions = self._callees(call, targets)
        return functions is not None and all(self.quiet_function(n) for n in functions)

    def quiet_function(self, name: str) -> bool:
        """Nothing the program function `name` may run launches device work (a property
        read runs one with no call in the source). Every function `name` reaches through
        bodies that launch nothing of their own (`_own`) is quiet unless one reaches a
        function that launches: the largest such set (a greatest fixpoint), so a cycle of
        host helpers is quiet together."""
        found = self._quiet.get(name)
        if found is None:
            callees, loud = self._explore(name)
            loud = _spread(callees, loud)
            for current in callees:
                self._quiet[current] = current not in loud
            found = self._quiet[name]
        return found

    def _explore(self, name: str) -> tuple[dict[str, frozenset[str]], set[str]]:
        """What each function `name` reaches, not yet decided, calls in the program, and
        those that launch by themselves or call one already known to."""
        callees: dict[str, frozenset[str]] = {}
        loud: set[str] = set()
        todo = [name]
        while todo:
            current = todo.pop()
            if current in callees or current in self._quiet:
                continue
            own = self._own(current)
            callees[current] = own if own is not None else frozenset()
            if own is None or any(self._quiet.get(c) is False for c in own):
                loud.add(current)
            if own is not None:
                todo.extend(own)
        return callees, loud

    def _own(self, name: str) -> frozenset[str] | None:
        """The program functions `name`'s body may call, where nothing else in it launches
        work (no operator, in a value or a test; no `with`; every other call quiet by
        itself); else None."""
        record = self.program.functions[name]
        resolved = {id(r.call): r.targets for r in self.program.calls.get(name, ())}
        called: set[str] = set()
        for stmt in walk_statements(record.info.body):
            if stmt.kind == "with" or operates(stmt.tree) or test_operates(stmt):
                return None
            for call in stmt.calls:
                if any(_OPERATOR_TEXT & set(arg) for arg in call.args):
                    return None
                functions = self._callees(call, resolved.get(id(call), ()))
                if functions is None:
                    return None
                called |= functions
        return frozenset(called)

    def _callees(self, call: CallSite, targets: Sequence[Target]) -> frozenset[str] | None:
        """The program functions a call may run, where what else it may run is quiet by
        itself; else None."""
        program = self.program
        inside = [t for t in targets if t.name in program.functions or t.name in program.classes]
        outside = [t for t in targets if t not in inside]
        if not inside and not any(t.name in _RECORD_INITS for t in outside):
            quiet = (
                host_call(call)
                or _container_method(call)
                or _event_marker(outside)
                or _host_library(outside)
            )
            return frozenset() if quiet else None
        if any(t.name not in _RECORD_INITS for t in outside):
            return None
        return frozenset(t.name for t in inside if t.name in program.functions)


def _spread(callees: dict[str, frozenset[str]], loud: set[str]) -> set[str]:
    """`loud` and every function that calls one of them, directly or not."""
    callers: dict[str, set[str]] = {}
    for caller, called in callees.items():
        for callee in called:
            callers.setdefault(callee, set()).add(caller)
    loud = set(loud)
    todo = list(loud)
    while todo:
        for caller in callers.get(todo.pop(), ()):
            if caller not in loud:
                loud.add(caller)
                todo.append(caller)
    return loud


def _host_library(targets: Sequence[Target]) -> bool:
    """Functions of the standard library's host-only modules (`itertools.repeat`,
    `collections.deque`, `math.ceil`, a clock): they work on Python values. Not `copy` or
    `operator`, which run a tensor's own methods when handed one."""
    return bool(targets) and all(t.name.split(".", 1)[0] in _HOST_MODULES for t in targets)


def _event_marker(targets: Sequence[Target]) -> bool:
    """A device event's own host-side calls: `record()` queues a marker, not a kernel;
    `query()` and `elapsed_time()` read what the events hold."""
    return bool(targets) and all(_EVENT_CALL.fullmatch(t.name) for t in targets)


def _container_method(call: CallSite) -> bool:
    return len(call.target) >= 2 and call.target[-1] in _CONTAINER_METHODS
