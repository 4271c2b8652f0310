"""What names mean at the top level of a module: definitions, imports (absolute, relative,
re-exports, star imports) and module-level assignments, including names a function rebinds
under `global`. A mixin of the resolver: assignments are evaluated by the resolver itself."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from rankguard.model.cycles import Cycles
from rankguard.model.values import Value, external
from rankguard.summary.ir import Stmt, walk_statements

if TYPE_CHECKING:
    from rankguard.model.program import Program
    from rankguard.model.records import FunctionRecord


def of_kind(body: tuple[Stmt, ...], kind: str) -> Iterator[Stmt]:
    return (stmt for stmt in walk_statements(body) if stmt.kind == kind)


def dedupe(values: Iterable[Value]) -> tuple[Value, ...]:
    seen: dict[Value, None] = {}
    for value in values:
        seen.setdefault(value, None)
    return tuple(seen)


class ModuleNamespaces:
    p: Program
    _globals: dict[str, dict[str, list]]
    _module_value: dict[tuple[str, str], tuple[Value, ...]]
    cycles: Cycles  # `rankguard.model.cycles`
    decorated: Callable[[str], tuple[Value, ...]]  # `rankguard.model.decorators`

    def _assigned_value(self, fn: FunctionRecord, stmt: Stmt) -> list[Value]:
        raise NotImplementedError  # the resolver evaluates assignments

    def module_stores(self, module: str) -> dict[str, list[tuple[str, Stmt]]]:
        raise NotImplementedError  # `rankguard.model.stores`

    def stored_items(self, fn: FunctionRecord, stmt: Stmt) -> list[Value]:
        raise NotImplementedError  # `rankguard.model.stores`

    def elements(self, value: Value) -> list[Value]:
        raise NotImplementedError  # the resolver knows what iterating a value gives

    # -- module namespaces ----------------------------------------------------
    def _module_globals(self, module: str) -> dict[str, list]:
        """name -> binders: ("def", qualname) | ("class", qualname) | ("import", ImportInfo)
        | ("assign", Stmt) | ("assign_in", (function qualname, Stmt))
        | ("store_in", (function qualname, Stmt)): `name[k] = ...`
        | ("iterate", Stmt): a module-level `for name in ...`."""
        cached = self._globals.get(module)
        if cached is not None:
            return cached
        table: dict[str, list] = defaultdict(list)
        record = self.p.modules[module]
        summary = record.summary
        for fn in summary.functions:
            if fn.qualname and "." not in fn.qualname:
                table[fn.name].append(("def", f"{module}.{fn.qualname}"))
        for cls in summary.classes:
            if "." not in cls.qualname:
                table[cls.name].append(("class", f"{module}.{cls.qualname}"))
        for imp in summary.imports:
            if imp.scope == "" and imp.bound != "*":
                table[imp.bound].append(("import", imp))
        body = self.p.functions.get(module)
        if body is not None:
            for stmt in body.info.body:
                if stmt.kind == "assign":
                    for target in stmt.targets:
                        if len(target) == 1:
                            table[target[0]].append(("assign", stmt))
                elif stmt.kind == "loop" and len(stmt.targets) == 1 and len(stmt.targets[0]) == 1:
                    table[stmt.targets[0][0]].append(("iterate", stmt))
        # `HANDLERS[k] = f`, at module level or in a function: f is one of its elements.
        for name, stores in self.module_stores(module).items():
            table[name].extend(("store_in", store) for store in stores)
        # `global cdb` then `cdb = TorchBackend(...)` inside a function binds the module name.
        for fn in summary.functions:
            if not fn.global_names:
                continue
            qual = f"{module}.{fn.qualname}"
            for stmt in of_kind(fn.body, "assign"):
                for target in stmt.targets:
                    if len(target) == 1 and target[0] in fn.global_names:
                        table[target[0]].append(("assign_in", (qual, stmt)))
        self._globals[module] = table
        return table

    def module_binders(self, module: str, name: str) -> tuple[tuple[str, Any], ...]:
        """Every binding of the global `name` of `module` (`_module_globals`' kinds)."""
        return tuple(self._module_globals(module).get(name, ()))

    def _star_sources(self, module: str) -> list[str]:
        summary = self.p.modules[module].summary
        return [
            self._absolute(module, imp.module, imp.level)
            for imp in summary.imports
            if imp.bound == "*" and imp.scope == ""
        ]

    def _absolute(self, module: str, target: str, level: int) -> str:
        if level == 0:
            return target
        record = self.p.modules.get(module)
        parts = module.split(".")
        package = parts if record is not None and record.is_package else parts[:-1]
        if level > 1:
            package = package[: len(package) - (level - 1)]
        base = ".".join(package)
        return f"{base}.{target}" if target and base else (target or base)

    def module_member(self, module: str, name: str, _depth: int = 0) -> tuple[Value, ...]:
        """What `name` means at the top level of `module` (following re-exports)."""
        key = (module, name)
        cached = self._module_value.get(key)
        if cached is not None:
            self.cycles.read(("member", *key))
            return cached
        compute = lambda: self._member(module, name, _depth)  # noqa: E731
        return self.cycles.answer(("member", *key), self._module_value, key, (), compute)

    def _member(self, module: str, name: str, _depth: int) -> tuple[Value, ...]:
        found: list[Value] = []
        binders = self._module_globals(module).get(name, [])
        for kind, what in binders:
            if kind == "def":
                found.extend(self.decorated(what))
            elif kind == "class":
                found.append(Value("class", what))
            elif kind == "import":
                found.extend(self._import_value(module, what, _depth))
            elif kind == "assign":
                body = self.p.functions.get(module)
                if body is not None:
                    found.extend(self._assigned_value(body, what))
            elif kind == "assign_in":
                found.extend(self._assigned_value(self.p.functions[what[0]], what[1]))
            elif kind == "iterate":  # a module-level `for` target: what iterating gives
                body = self.p.functions[module]
                found.extend(
                    v for value in self._assigned_value(body, what) for v in self.elements(value)
                )
            elif kind == "store_in":
                found.extend(self.stored_items(self.p.functions[what[0]], what[1]))
        if not binders:
            sub = f"{module}.{name}"
            if sub in self.p.modules:
                found.append(Value("module", sub))
            elif _depth < 8:
                for source in self._star_sources(module):
                    if source in self.p.modules:
                        found.extend(self.module_member(source, name, _depth + 1))
                    if found:
                        break
        return dedupe(found)

    def _import_value(self, module: str, imp, depth: int) -> list[Value]:
        base = self._absolute(module, imp.module, imp.level)
        if imp.attr is None:
            # `import a.b.c` binds `a`; `import a.b as x` binds `a.b`.
            name = base if imp.bound != base.split(".")[0] else base.split(".")[0]
            return [Value("module", name) if name in self.p.modules else external(name)]
        full = f"{base}.{imp.attr}" if base else imp.attr
        if full in self.p.modules:
            return [Value("module", full)]
        if base in self.p.modules:
            if depth > 12:
                return []
            found = self.module_member(base, imp.attr, depth + 1)
            return list(found) if found else [external(full)]
        return [external(full)]
