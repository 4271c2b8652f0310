"""Which class `self` is, where the call site knows: exact receivers narrow dispatch.

Class-hierarchy analysis gives `self.parse()` in a base method every subclass's override. Where
the object is known exactly (`FLAG = Plain(None)` at module level, `x = Plain(1)` in the caller,
or built by the call itself: `Plain(1).get()`, a class called by name) only the method its own
class finds runs, and inside that method `self` is still that object.
The walk carries the receiver's classes as an entry fact (`RECEIVER`) into the method it enters
and narrows the `self.m()` calls there. A receiver declared by annotation, or read through
`self` (an attribute a subclass may assign otherwise), or with many possible classes, decides
nothing: its overrides all stay.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rankguard.model.facts import Cond
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord, Target
from rankguard.summary.ir import CALL, SUBSCRIPT, CallSite

RECEIVER: Cond = ("receiver",)  # entry fact: the classes `self` may exactly be
_MAX_CLASSES = 3  # more values than this decide nothing (a set may be one the resolver cut)
_OPAQUE_ROOTS = frozenset(("self", "cls", "super()"))

Receiver = frozenset[str]


class Receivers:
    def __init__(self, program: Program, built_plainly: Callable[[str], bool]) -> None:
        self.program = program
        self.built_plainly = built_plainly  # `Instances.built_plainly`
        self._exact: dict[tuple[str, tuple[str, ...]], Receiver | None] = {}
        self._first: dict[tuple[str, str], str | None] = {}

    def of_call(
        self, record: FunctionRecord, call: CallSite, known: Mapping[Cond, Any]
    ) -> Receiver | None:
        """The exact classes of the object `call` invokes a method of, if known."""
        segs = call.target
        if len(segs) == 2 and segs[0] == "self":
            return known.get(RECEIVER)
        if len(segs) < 2 or segs[0] in _OPAQUE_ROOTS:
            return None
        held = segs[:-1]
        if held[-1] == CALL:  # `Builder().load()`: the object the call builds, if a class
            held, kind = held[:-1], "class"
        else:
            kind = "instance"
        if not held or CALL in held or SUBSCRIPT in held:
            return None
        key = (record.qualname, segs[:-1])
        if key not in self._exact:
            values = self.program.resolver.evaluate(record, held)
            exact = bool(values) and all(v.kind == kind and v.via is None for v in values)
            names = frozenset(v.name for v in values)
            if kind == "class":  # `__new__`, a metaclass, a decorator may build another class
                exact = exact and all(self.built_plainly(name) for name in names)
            self._exact[key] = names if exact and len(names) <= _MAX_CLASSES else None
        return self._exact[key]

    def narrow(
        self, targets: Sequence[Target], attr: str, receiver: Receiver
    ) -> tuple[Target, ...]:
        """The targets the receiver's own classes find for `attr` (all, where one finds none)."""
        found = {self._first_method(cls, attr) for cls in receiver}
        if None in found:
            return tuple(targets)
        return tuple(t for t in targets if t.name in found or not self._method(t.name, attr))

    def bound(self, name: str, receiver: Receiver | None) -> Receiver | None:
        """The receiver, where `name` is a method its classes have (`self` there is it)."""
        info = self.program.functions[name].info
        if not receiver or info.cls is None:
            return None
        owner = f"{self.program.functions[name].module}.{info.cls}"
        return receiver if all(owner in self.program.mro(c) for c in receiver) else None

    def _method(self, name: str, attr: str) -> bool:
        record = self.program.functions.get(name)
        return record is not None and record.info.cls is not None and record.info.name == attr

    def _first_method(self, cls: str, attr: str) -> str | None:
        key = (cls, attr)
        if key not in self._first:
            found = None
            for owner in self.program.mro(cls):
                found = self.program.classes[owner].methods.get(attr)
                if found is not None:
                    break
            self._first[key] = found
        return self._first[key]
