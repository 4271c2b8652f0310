"""Which calls may launch work on a device, for `analysis.drained`: after a sync the queue
stays empty until one does.

A call launches nothing when everything it may run is *quiet*: a host builtin or logging, a
container's own method (`rows.append(x)`), a tensor's small op on data already there, a device
event's marker or timing read (`end.record()`, `start.elapsed_time(end)`), a wait for a
stream or event (`done.synchronize()`), a host-only standard
library helper (`itertools.repeat`, `collections.deque`, `math.ceil`), building
a record (a class with no constructor of its own, a `msgspec.Struct`), or a program function
whose body calls only quiet things and computes no operator (`x * 2` may be a kernel). A
function on a cycle of calls, or one with a `with` block (its exit runs code this does not see),
is not taken as quiet. The answer does not depend on which caller asks first: a function on a
cycle is not quiet whichever member is entered, and the depth bound is a guard against runaway
recursion, far beyond real helper chains, not a cut that decides answers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rankguard.analysis.drained import host_call, operates
from rankguard.model.program import Program
from rankguard.model.records import Target
from rankguard.summary.ir import CallSite, walk_statements

_DEPTH = 64
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
        self._stack: set[str] = set()

    def quiet_call(self, call: CallSite, targets: Sequence[Target], depth: int = 0) -> bool:
        """Nothing `call` may run launches device work."""
        program = self.program
        inside = [t for t in targets if t.name in program.functions or t.name in program.classes]
        outside = [t for t in targets if t not in inside]
        if not inside and not any(t.name in _RECORD_INITS for t in outside):
            return (
                host_call(call)
                or _container_method(call)
                or _event_marker(outside)
                or _host_library(outside)
            )
        if any(t.name not in _RECORD_INITS for t in outside):
            return False
        functions = [t.name for t in inside if t.name in program.functions]
        return all(self._quiet_function(name, depth + 1) for name in functions)

    def quiet_function(self, name: str) -> bool:
        """Nothing the program function `name` may run launches device work (a property
        read runs one with no call in the source)."""
        return self._quiet_function(name, 0)

    def _quiet_function(self, name: str, depth: int) -> bool:
        found = self._quiet.get(name)
        if found is not None:
            return found
        if depth > _DEPTH or name in self._stack:
            return False
        self._stack.add(name)
        try:
            found = self._body_quiet(name, depth)
        finally:
            self._stack.discard(name)
        self._quiet[name] = found
        return found

    def _body_quiet(self, name: str, depth: int) -> bool:
        record = self.program.functions[name]
        resolved = {id(r.call): r.targets for r in self.program.calls.get(name, ())}
        for stmt in walk_statements(record.info.body):
            if stmt.kind == "with" or operates(stmt.tree):
                return False
            for call in stmt.calls:
                if any(_OPERATOR_TEXT & set(arg) for arg in call.args):
                    return False
                if not self.quiet_call(call, resolved.get(id(call), ()), depth):
                    return False
        return True


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
