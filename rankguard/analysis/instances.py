"""What an argument the call constructs decides of `isinstance` tests in the callee.

A dispatcher that branches on its argument's class (`if isinstance(action, Free): ... elif
isinstance(action, Backup): ...`) runs one branch per call site when the caller builds the
argument right there (`apply(Free(pages))`): the object is exactly that class. Class-hierarchy
analysis alone walks every branch from every caller, so a backup reached only through the
`Backup` branch would be charged to the caller that frees. The walk hands the callee each such
test's value as an entry fact; an assignment to the parameter forgets it (`facts.forget`), and a
test the model cannot decide (a class outside the program, a base it cannot see) stays open.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rankguard.analysis.context import passed_arguments
from rankguard.model.facts import FALSY, TRUTHY, Cond
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord
from rankguard.summary.ir import CALL, CallSite, walk_statements

_ISINSTANCE = ("isinstance",)
# Builtin classes no program class derives from unless it names a base outside the program.
_BUILTINS = frozenset(("int", "float", "bool", "str", "bytes", "list", "dict", "tuple", "set"))

_HOOKS = ("__instancecheck__", "__subclasshook__")
# (parameter, the test, the classes each listed element names; None: one the model cannot place)
_Test = tuple[str, Cond, tuple[frozenset[str] | None, ...]]


class Instances:
    def __init__(self, program: Program) -> None:
        self.program = program
        self._tests: dict[str, tuple[_Test, ...]] = {}

    def entry_facts(
        self, caller: FunctionRecord, callee: FunctionRecord, call: CallSite
    ) -> dict[Cond, Any]:
        """The value of each `isinstance(param, ...)` in `callee` whose argument `call`
        constructs: `Cls(...)` evaluates to an instance of exactly `Cls`."""
        tests = self.tests(callee)
        if not tests:
            return {}
        passed = passed_arguments(callee, call)
        positional = [o for o in call.operands if o.keyword is None]
        out: dict[Cond, Any] = {}
        exact: dict[str, str | None] = {}
        for param, cond, elements in tests:
            if param not in exact:
                exact[param] = None
                if param in passed:
                    key = passed[param][0]
                    operand = positional[int(key)] if key.isdigit() else call.operand(key)
                    if operand is not None:
                        exact[param] = self._constructed(caller, operand)
            cls = exact[param]
            if cls is not None:
                value = self._decides(cls, elements)
                if value is not None:
                    out[cond] = TRUTHY if value else FALSY
        return out

    def tests(self, callee: FunctionRecord) -> tuple[_Test, ...]:
        name = callee.qualname
        if name not in self._tests:
            params = {p.name for p in callee.info.params}
            found = {}
            for stmt in walk_statements(callee.info.body):
                for cond in _isinstance_tests(stmt.cond):
                    param = cond[2][0][1][0]
                    if param in params and cond not in found:
                        elements = tuple(self._classes(callee, e) for e in _listed(cond[2][1]))
                        found[cond] = (param, cond, elements)
            self._tests[name] = tuple(found.values())
        return self._tests[name]

    def _constructed(self, caller: FunctionRecord, operand: Any) -> str | None:
        """The class an argument that is one call's result alone is exactly an instance of."""
        if operand.ref or operand.const is not None or operand.reads or len(operand.calls) != 1:
            return None
        values = self.program.resolver.evaluate(caller, (*operand.calls[0], CALL))
        names = {v.name for v in values}
        exact = len(names) == 1 and all(v.kind == "instance" and v.via is None for v in values)
        return next(iter(names)) if exact and next(iter(names)) in self.program.classes else None

    def _classes(self, callee: FunctionRecord, element: Cond) -> frozenset[str] | None:
        """The classes a listed element names: program classes that decide `isinstance` by
        their bases alone (no `__instancecheck__`/`__subclasshook__`), or a builtin."""
        if element[0] != "ref":
            return None
        classes = self.program.classes
        values = self.program.resolver.evaluate(callee, element[1])
        if values and all(v.kind == "class" and v.name in classes for v in values):
            hooked = any(
                hook in classes[c].methods
                for v in values
                for c in self.program.mro(v.name)
                for hook in _HOOKS
            )
            return None if hooked else frozenset(v.name for v in values)
        name = element[1][0] if len(element[1]) == 1 else None
        if name in _BUILTINS or name == "object":
            return frozenset((name,)) if all(v.kind == "builtin" for v in values) else None
        return None

    def _decides(self, cls: str, elements: tuple[frozenset[str] | None, ...]) -> bool | None:
        """Whether an instance of exactly `cls` passes the test, where the model can tell."""
        mro = self.program.mro(cls)
        external = any(self.program.classes[c].external_bases for c in mro)
        unknown = False
        for names in elements:
            if names is None:
                unknown = True
            elif "object" in names or any(n in mro for n in names):
                return True
            elif external and names & _BUILTINS:
                unknown = True  # `class Count(int)`: a base outside the program
        return None if unknown else False


def _isinstance_tests(cond: Cond) -> Iterator[Cond]:
    """The `isinstance(name, classes)` leaves of a test, through `not`, `and`, `or`."""
    if not cond:
        return
    tag = cond[0]
    if tag == "not":
        yield from _isinstance_tests(cond[1])
    elif tag in ("and", "or"):
        for part in cond[1]:
            yield from _isinstance_tests(part)
    elif (
        tag == "call"
        and cond[1] == _ISINSTANCE
        and len(cond[2]) == 2
        and not cond[3]
        and cond[2][0][0] == "ref"
        and len(cond[2][0][1]) == 1
    ):
        yield cond


def _listed(classes: Cond) -> tuple[Cond, ...]:
    """`isinstance(x, A)` lists A; `isinstance(x, (A, B))` lists both."""
    return tuple(classes[1]) if classes[0] == "tuple" else (classes,)
