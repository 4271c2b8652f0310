"""A receiver's class from the `isinstance` tests on the path.

Class-hierarchy resolution sends `self.drafter.propose()` on a declared `Proposer` to every
subclass's override. Past `assert isinstance(self.drafter, Ngram)`, inside `if isinstance(...)`,
or past `if not isinstance(...): return`, the object is an `Ngram` (or a class derived from it),
so only the methods such an object can run are called: those of `Ngram`'s MRO and of its
subclasses'. The walk keeps these tests among its facts (`model.facts.forget` drops them when
the receiver is assigned). Where a class is not one the model can name (a variable holding a
class), nothing is narrowed; targets outside the program are kept, and a test that would leave
no method of the program is ignored rather than trusted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rankguard.analysis.stability import Stability, class_of
from rankguard.model.facts import TRUTHY, Cond
from rankguard.model.program import Program
from rankguard.model.records import Target
from rankguard.summary.ir import CALL, SUBSCRIPT, CallSite, Segs

_ISINSTANCE = ("isinstance",)


def class_test(cond: Cond) -> tuple[Segs, tuple[Cond, ...]] | None:
    """(the reference tested, the class expressions) of `isinstance(x, C)` or `(C, D)`."""
    if len(cond) < 3 or cond[:2] != ("call", _ISINSTANCE) or len(cond[2]) != 2:
        return None
    tested, classes = cond[2]
    if tested[0] != "ref" or CALL in tested[1] or SUBSCRIPT in tested[1]:
        return None
    return tested[1], tuple(classes[1]) if classes[0] == "tuple" else (classes,)


class Narrowing:
    """Per program: which methods an object tested by `isinstance` on the path may run."""

    def __init__(self, program: Program, stability: Stability) -> None:
        self.program = program
        self.stability = stability
        self._allowed: dict[tuple[str, Cond], frozenset[str] | None] = {}

    def narrow(
        self, function: str, call: CallSite, targets: Sequence[Target], known: Mapping[Cond, Any]
    ) -> Sequence[Target]:
        receiver = call.target[:-1]
        if not receiver or len(targets) < 2:
            return targets
        functions = self.program.functions
        for cond, value in known.items():
            test = class_test(cond) if value == TRUTHY else None
            if test is None or test[0] != receiver:
                continue
            allowed = self._classes(function, cond, test[1])
            if allowed is None:
                continue
            kept = [
                t
                for t in targets
                if t.name not in functions
                or (owner := class_of(functions[t.name])) is None
                or owner in allowed
            ]
            if any(t.name in functions for t in kept):
                targets = kept
        return targets

    def _classes(
        self, function: str, cond: Cond, classes: tuple[Cond, ...]
    ) -> frozenset[str] | None:
        """The program classes whose methods an object passing the test may run; None where
        a class expression is not one the model can name."""
        key = (function, cond)
        if key not in self._allowed:
            found: set[str] = set()
            for expression in classes:
                values = (
                    self.program.evaluate(function, expression[1]) if expression[0] == "ref" else ()
                )
                if not values or any(v.kind != "class" for v in values):
                    self._allowed[key] = None
                    break
                for value in values:
                    if value.name in self.program.classes:
                        found |= self.stability.related(value.name)
            else:
                self._allowed[key] = frozenset(found)
        return self._allowed[key]
