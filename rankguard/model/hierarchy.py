"""Class-hierarchy analysis: which classes a value *declared* as class C may be at run time.

A receiver typed by an annotation (`strategy: Strategy`), or `self` inside a method of C, may be
C or any class derived from it; when C is a `typing.Protocol`, also any class that defines every
method C declares (structural typing). A call on it reaches the method each of those classes
would run (its first definition in that class's MRO): the overrides.

Narrowing: a class counts as instantiated when its name is used anywhere as a value or called
(`Local()`, `{"a": Local}`, `make(Local)`), not only named as a base or an annotation. Where
some candidate is instantiated, only the instantiated ones are kept; where none is known to
be, all are (a registry the program builds out of our sight must not lose them). A value made
by calling the class itself (`Local()`) is exact and never widened.

`self` inside a method is narrower still: an object whose class runs that method (`running`).
A subclass that overrides the method, and has no method that hands on to it (`super().m(...)`,
`Base.m(self, ...)`), never runs it, so `self.n()` in there cannot reach that subclass's `n`.
Read as any subclass, a base's `forward` calling `self.forward_extend(q, k, batch)` reached an
override of another shape and bound its arguments by position to the wrong parameters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rankguard.summary.interface import handed_on, mentioned_in, unbound_refs

if TYPE_CHECKING:
    from rankguard.model.program import Program


class Hierarchy:
    def __init__(self, program: Program) -> None:
        self.p = program
        self._mentioned: frozenset[str] | None = None
        self._receivers: dict[str, tuple[str, ...]] = {}
        self._running: dict[tuple[str, str], tuple[str, ...]] = {}
        self._handed_on: dict[str, frozenset[str]] = {}
        self._unbound_names: frozenset[str] | None = None

    def mentioned(self) -> frozenset[str]:
        """Every name the program calls, reads, stores or passes (annotations and bases are
        not reads), computed once."""
        if self._mentioned is None:
            names: set[str] = set()
            for record in self.p.functions.values():
                names |= mentioned_in(record.info)
            for cls in self.p.classes.values():
                for _, ann in cls.info.attributes:
                    names.update(ann)  # `handler = Local()` at class level
            self._mentioned = frozenset(names)
        return self._mentioned

    def instantiated(self, cls: str) -> bool:
        return self.p.classes[cls].info.name in self.mentioned()

    def is_protocol(self, cls: str) -> bool:
        return any(
            base.rsplit(".", 1)[-1] == "Protocol" for base in self.p.classes[cls].external_bases
        )

    def receivers(self, cls: str) -> tuple[str, ...]:
        """The classes a value declared as `cls` may be, narrowed as the module says."""
        cached = self._receivers.get(cls)
        if cached is not None:
            return cached
        candidates = [cls, *sorted(self.p.subclasses.get(cls, ()))]
        if self.is_protocol(cls):
            candidates += self._structural(cls, candidates)
        live = [c for c in candidates if self.instantiated(c)]
        result = tuple(live or candidates)
        self._receivers[cls] = result
        return result

    def receivers_of(self, cls: str, running: str | None) -> tuple[str, ...]:
        """`receivers`; for `self` inside the method `running`, `running`'s."""
        return self.receivers(cls) if running is None else self.running(cls, running)

    def running(self, cls: str, method: str) -> tuple[str, ...]:
        """The classes `self` may be while `method`, a method of `cls`, runs: those `receivers`
        gives whose own lookup of its name finds it, or passes through overrides that each
        hand on to the next definition. A method bound under another name than its own (`f =
        g` in a class body), or of a name some class's method is taken by as a value (a
        table's `Base.handle`, run later on any object), keeps them all."""
        key = (cls, method)
        cached = self._running.get(key)
        if cached is None:
            name = self.p.functions[method].info.name
            everyone = self.receivers(cls)
            if self.p.classes[cls].methods.get(name) != method or name in self._unbound():
                cached = everyone
            else:
                cached = tuple(c for c in everyone if self._runs(c, name, method))
            self._running[key] = cached
        return cached

    def _runs(self, receiver: str, name: str, method: str) -> bool:
        """Whether an object of class `receiver` runs `method` when its `name` is called: the
        first definition up its MRO is `method`, or every override before it may hand on (a
        method of a class on the way calls `super().name(...)` or `Base.name(self, ...)`)."""
        handed: set[str] = set()
        for ancestor in self.p.mro(receiver):
            if ancestor not in self.p.classes:
                continue
            methods = self.p.classes[ancestor].methods
            for qual in methods.values():
                handed |= self._handed(qual)
            qual = methods.get(name)
            if qual == method:
                return True
            if qual is not None and name not in handed:
                return False
        return True  # not found on the way: nothing says it does not run

    def _unbound(self) -> frozenset[str]:
        if self._unbound_names is None:
            names: set[str] = set()
            for record in self.p.functions.values():
                names |= unbound_refs(record.info)
            self._unbound_names = frozenset(names)
        return self._unbound_names

    def _handed(self, qual: str) -> frozenset[str]:
        found = self._handed_on.get(qual)
        if found is None:
            record = self.p.functions.get(qual)
            found = handed_on(record.info) if record is not None else frozenset()
            self._handed_on[qual] = found
        return found

    def _structural(self, protocol: str, known: list[str]) -> list[str]:
        wanted = {name for name in self.p.classes[protocol].methods if not name.startswith("_")}
        if not wanted:
            return []
        out = []
        for qual in sorted(self.p.classes):
            if qual in known or self.is_protocol(qual):
                continue
            names: set[str] = set()
            for ancestor in self.p.mro(qual):
                names.update(self.p.classes[ancestor].methods)
            if wanted <= names:
                out.append(qual)
        return out
