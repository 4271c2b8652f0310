"""Decorators applied: the name of a function decorated by a project decorator that returns
an inner wrapper stands for that wrapper (`def dec(f): ... return inner`), stacked decorators
in order (`@a @b def f` is `a(b(f))`); and which functions each decorator is applied to, so a
wrapper's call of the decorator's parameter reaches them. A mixin of the resolver."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from rankguard.model.cycles import Cycles
from rankguard.model.values import Value
from rankguard.summary.ir import Segs

if TYPE_CHECKING:
    from rankguard.model.program import Program
    from rankguard.model.records import FunctionRecord


class Decorators:
    p: Program
    _decorated: dict[str, tuple[Value, ...]]
    _decorated_by: dict[str, list[str]] | None
    _closures: dict[tuple[str, str], tuple[str, frozenset[str]] | None]
    cycles: Cycles  # `rankguard.model.cycles`

    def evaluate(self, fn: FunctionRecord, segs: Segs) -> tuple[Value, ...]:
        raise NotImplementedError  # the resolver evaluates references

    def returns(self, fn: FunctionRecord) -> tuple[Value, ...]:
        raise NotImplementedError  # the resolver knows what functions return

    def decorated(self, qual: str) -> tuple[Value, ...]:
        """What the name of function `qual` stands for once its decorators are applied: the
        wrapper a project decorator returns (`def dec(f): ... return inner`), else itself."""
        cached = self._decorated.get(qual)
        if cached is not None:
            self.cycles.read(("decorated", qual))
            return cached
        plain = (Value("function", qual),)
        compute = lambda: self._applied(qual, plain)  # noqa: E731
        return self.cycles.answer(("decorated", qual), self._decorated, qual, plain, compute)

    def _applied(self, qual: str, plain: tuple[Value, ...]) -> tuple[Value, ...]:
        values = plain
        for wrapper in self._wrappers(qual):
            wrapped = [r for w in wrapper for r in self.returns(self.p.functions[w.name])]
            values = tuple(v for v in wrapped if v.kind == "function") or values
        if values == plain:
            return plain
        # The wrappers made at this definition close over `qual` (`Decorators.closure`).
        return tuple(v._replace(wraps=qual) for v in values)

    def closure(self, wrapper: str, wrapped: str) -> tuple[str, frozenset[str]] | None:
        """What the wrapper `wrapper`, made where `wrapped` is defined, holds in its decorator's
        parameter: `@timed_op def send` makes `timed_op(send)`, whose inner `log_wrapper`
        closes over `func = send`, so its `func(...)` runs `send` (under stacked decorators, the
        outer wrapper holds the inner wrapper). None where that cannot be told for sure: the
        wrapper is not nested in the decorator, the parameter is rebound, or it is shadowed."""
        key = (wrapper, wrapped)
        if key not in self._closures:
            self._closures[key] = self._closed_over(wrapper, wrapped)
        return self._closures[key]

    def _closed_over(self, wrapper: str, wrapped: str) -> tuple[str, frozenset[str]] | None:
        found = None
        current = frozenset((wrapped,))
        for layer in self._wrappers(wrapped):  # innermost first, as `_applied` applies them
            made: set[str] = set()
            here = None
            for decorator in layer:
                returned = {
                    v.name
                    for v in self.returns(self.p.functions[decorator.name])
                    if v.kind == "function"
                }
                made |= returned
                if wrapper in returned and wrapper.startswith(decorator.name + ".<locals>."):
                    param = _closed_parameter(self.p, decorator.name, wrapper)
                    here = (param, current) if param is not None else None
            if made:  # the last layer that makes functions makes what the name stands for
                found = here
                current = frozenset(made)
        return found

    def _wrappers(self, qual: str) -> list[tuple[Value, ...]]:
        """Project functions applied to `qual` as decorators, innermost (last written) first."""
        record = self.p.functions[qual]
        if record.info.cls or not record.info.decorators:
            return []
        scope = qual.rsplit(".<locals>.", 1)[0] if ".<locals>." in qual else record.module
        holder = self.p.functions.get(scope)
        if holder is None:
            return []
        out = []
        called = record.info.decorator_called or (False,) * len(record.info.decorators)
        for dec, call in reversed(list(zip(record.info.decorators, called, strict=True))):
            found = tuple(v for v in self.evaluate(holder, dec) if v.kind == "function")
            if call:  # `@factory(arg)`: the decorator is what the factory returns
                found = tuple(
                    r for f in found for r in self.returns(self.p.functions[f.name])
                    if r.kind == "function"
                )  # fmt: skip
            if found:
                out.append(found)
        return out

    def decorated_by(self) -> dict[str, list[str]]:
        """decorator function -> the functions it is applied to (for its parameter's calls)."""
        if self._decorated_by is None:
            table: dict[str, list[str]] = defaultdict(list)
            for qual in sorted(self.p.functions):
                current = [qual]  # what the next decorator receives: `@a @b def f` is a(b(f))
                for wrapper in self._wrappers(qual):
                    for value in wrapper:
                        table[value.name].extend(current)
                    returned = [r for w in wrapper for r in self.returns(self.p.functions[w.name])]
                    current = [v.name for v in returned if v.kind == "function"] or current
            self._decorated_by = dict(table)
        return self._decorated_by


def _closed_parameter(program: Program, decorator: str, wrapper: str) -> str | None:
    """The decorator's parameter that receives the decorated function (its first positional
    one), where the wrapper's calls of that name surely mean it: no function from the
    decorator down to the wrapper takes the name as a parameter, and neither the decorator nor
    any function nested in it binds the name again in any form (`Program.binds`: a walrus, an
    import, a sibling closure's `nonlocal func; func = impl`)."""
    info = program.functions[decorator].info
    offset = 1 if info.takes_self else 0
    if len(info.params) <= offset or info.params[offset].name.startswith("*"):
        return None
    name = info.params[offset].name
    scope = wrapper
    while scope != decorator:
        own = program.functions.get(scope)
        if own is None or any(p.name.lstrip("*") == name for p in own.info.params):
            return None
        scope = scope.rsplit(".<locals>.", 1)[0]
    return None if program.binds(decorator, name) else name
