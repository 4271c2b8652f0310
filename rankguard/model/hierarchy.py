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
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rankguard.summary.interface import mentioned_in

if TYPE_CHECKING:
    from rankguard.model.program import Program


class Hierarchy:
    def __init__(self, program: Program) -> None:
        self.p = program
        self._mentioned: frozenset[str] | None = None
        self._receivers: dict[str, tuple[str, ...]] = {}

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
