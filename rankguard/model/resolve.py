"""Static name and call resolution over the whole program.

Everything is lazy and memoised: a name is resolved when a call needs it, and an attribute's type
is learned from every assignment to it in its class (`self.x = Cls(...)`, `self.x = param` with
an annotation, `self.x = get_group()` with a return annotation) only when first asked for.
Nothing here guesses: what cannot be told stays unresolved, and the one heuristic (a method name
defined by exactly one class) is marked `fallback`.
"""

from __future__ import annotations

import builtins
from collections import defaultdict
from collections.abc import Iterator
from importlib import resources
from typing import TYPE_CHECKING

from rankguard.model.records import FunctionRecord, Target
from rankguard.model.values import BUILTIN_PREFIX, Value, external
from rankguard.summary.ir import CALL, OPAQUE, SUBSCRIPT, CallSite, Segs, Stmt, walk_statements

if TYPE_CHECKING:
    from rankguard.model.program import Program

_BUILTINS = frozenset(dir(builtins))


def _common_method_names() -> frozenset[str]:
    text = resources.files("rankguard.model").joinpath("common_methods.txt").read_text("utf-8")
    shipped = {
        word for line in text.splitlines() if not line.startswith("#") for word in line.split()
    }
    for kind in (str, bytes, list, dict, set, tuple, int, float, object):
        shipped.update(name for name in dir(kind) if not name.startswith("_"))
    return frozenset(shipped)


COMMON_METHODS = _common_method_names()
_MAX_TYPES = 4
_IN_PROGRESS = object()


def _of_kind(body: tuple[Stmt, ...], kind: str) -> Iterator[Stmt]:
    return (stmt for stmt in walk_statements(body) if stmt.kind == kind)


def _iterated(stmt: Stmt) -> Segs | None:
    """The reference a `for` loop iterates, when it is a plain dotted name."""
    if len(stmt.reads) == 1 and ".".join(stmt.reads[0]) == stmt.text:
        return stmt.reads[0]
    return None


class Resolver:
    def __init__(self, program: Program) -> None:
        self.p = program
        self._globals: dict[str, dict[str, list]] = {}
        self._module_value: dict[tuple[str, str], tuple[Value, ...]] = {}
        self._attr_types: dict[tuple[str, str], tuple[Value, ...] | object] = {}
        self._attr_callables: dict[tuple[str, str], tuple[str, ...]] = {}
        self._local_types: dict[str, dict[str, list]] = {}
        self._returns: dict[str, tuple[Value, ...] | object] = {}
        self._method_owners: dict[str, list[str]] | None = None

    # -- module namespaces ----------------------------------------------------
    def _module_globals(self, module: str) -> dict[str, list]:
        """name -> binders: ("def", qualname) | ("class", qualname) | ("import", ImportInfo)
        | ("assign", Stmt) | ("assign_in", (function qualname, Stmt))."""
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
        # `global cdb` then `cdb = TorchBackend(...)` inside a function binds the module name.
        for fn in summary.functions:
            if not fn.global_names:
                continue
            qual = f"{module}.{fn.qualname}"
            for stmt in _of_kind(fn.body, "assign"):
                for target in stmt.targets:
                    if len(target) == 1 and target[0] in fn.global_names:
                        table[target[0]].append(("assign_in", (qual, stmt)))
        self._globals[module] = table
        return table

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
        if key in self._module_value:
            return self._module_value[key]
        self._module_value[key] = ()  # cycle guard
        found: list[Value] = []
        binders = self._module_globals(module).get(name, [])
        for kind, what in binders:
            if kind == "def":
                found.append(Value("function", what))
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
        result = _dedupe(found)
        self._module_value[key] = result
        return result

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

    # -- scopes -----------------------------------------------------------------
    def _enclosing(self, fn: FunctionRecord) -> list[str]:
        """Local qualnames of `fn` and its enclosing functions, innermost first."""
        out = [fn.info.qualname]
        parts = fn.info.qualname.split(".<locals>.")
        for i in range(len(parts) - 1, 0, -1):
            out.append(".<locals>.".join(parts[:i]))
        return out

    def lookup(self, fn: FunctionRecord, name: str) -> tuple[Value, ...]:
        """A bare name inside `fn`: locals, enclosing functions, module globals, builtins."""
        module = fn.module
        for scope in self._enclosing(fn):
            qual = f"{module}.{scope}" if scope else module
            nested = f"{qual}.<locals>.{name}"
            if nested in self.p.functions:
                return (Value("function", nested),)
            if nested in self.p.classes:
                return (Value("class", nested),)
            record = self.p.functions.get(qual)
            if record is None:
                continue
            local = self._locals(record)
            if name in local:
                return local[name]
            for imp in self.p.modules[module].summary.imports:
                if imp.scope == scope and scope and imp.bound == name:
                    return tuple(self._import_value(module, imp, 0))
        found = self.module_member(module, name)
        if found:
            return found
        if name in _BUILTINS:
            return (Value("builtin", BUILTIN_PREFIX + name),)
        return ()

    def _locals(self, fn: FunctionRecord) -> dict[str, tuple[Value, ...]]:
        cached = self._local_types.get(fn.qualname)
        if cached is not None:
            return cached
        table: dict[str, tuple[Value, ...]] = {}
        self._local_types[fn.qualname] = table  # cycle guard: partial while building
        if fn.is_module_body:
            return table
        params = fn.info.params
        for index, param in enumerate(params):
            items = getattr(param, "items", None)  # absent from summaries cached before it
            if param.annotation:
                table[param.name] = self._instances(fn, param.annotation)
            elif items:
                table[param.name] = tuple(
                    Value("items", v.name, bound=v.kind) for v in self._instances(fn, items)
                )
            elif index == 0 and fn.info.cls and not _is_static(fn):
                cls = f"{fn.module}.{fn.info.cls}"
                kind = "class" if _is_classmethod(fn) else "instance"
                table[param.name] = (Value(kind, cls),)
            else:  # bound here, type unknown: it still shadows any global of that name
                table[param.name.lstrip("*")] = ()
        assigned: dict[str, list[Value]] = defaultdict(list)
        # Assignments, `for` targets and `with ... as` targets bind names.
        for stmt in walk_statements(fn.info.body):
            if stmt.kind != "assign" and not (stmt.kind in ("loop", "with") and stmt.targets):
                continue
            for target in stmt.targets:
                name = target[0] if len(target) == 1 else None
                if name is None or name in table or name in fn.info.global_names:
                    continue
                assigned[name].extend(
                    self._assigned_value(fn, stmt) if stmt.kind == "assign" else ()
                )
        # `for x in self.items:` where `items: List[T]`: x is a T.
        for stmt in _of_kind(fn.info.body, "loop"):
            source = _iterated(stmt)
            if source is None or len(stmt.targets) != 1 or len(stmt.targets[0]) != 1:
                continue
            name = stmt.targets[0][0]
            if name in table:
                continue
            for value in self.evaluate(fn, source):
                if value.kind == "items" and value.bound:
                    assigned[name].append(Value(value.bound, value.name))
        for name, values in assigned.items():
            table[name] = _dedupe(values)  # empty: a local we cannot type, never the global
        return table

    def _assigned_value(self, fn: FunctionRecord, stmt: Stmt) -> list[Value]:
        shape = stmt.value
        if not shape:
            return []
        if shape[0] == "annotated":
            return list(self._instances(fn, shape[1]))
        if shape[0] == "items":  # a container of T: `bound` carries the element's kind
            return [Value("items", v.name, bound=v.kind) for v in self._instances(fn, shape[1])]
        if shape[0] == "call":
            if len(shape) > 2:  # annotated and called: trust the annotation
                return list(self._instances(fn, shape[2]))
            return list(self.call_results(fn, shape[1]))
        if shape[0] == "ref":
            return [v for v in self.evaluate(fn, shape[1]) if v.kind != "builtin"]
        return []

    def _instances(self, fn: FunctionRecord, annotation: Segs) -> tuple[Value, ...]:
        out = []
        for value in self.evaluate(fn, annotation):
            if value.kind == "class":
                out.append(Value("instance", value.name))
            elif value.kind == "external":
                out.append(Value("external", value.name + "()"))
        return tuple(out)

    # -- evaluation -------------------------------------------------------------
    def evaluate(self, fn: FunctionRecord, segs: Segs) -> tuple[Value, ...]:
        """Every value the reference `segs` may have inside `fn`."""
        if not segs or segs[0] in (OPAQUE, "<str>"):
            return ()
        head = segs[0]
        values = self._super(fn) if head == "super()" else self.lookup(fn, head)
        for seg in segs[1:]:
            if not values:
                return ()
            if seg == CALL:
                values = _dedupe(v for value in values for v in self._call_result(value))
            elif seg == SUBSCRIPT:
                items = tuple(
                    Value(v.bound, v.name) for v in values if v.kind == "items" and v.bound
                )
                values = tuple(v for v in values if v.kind == "external")
                values = items + tuple(external(v.name + "[]") for v in values)
            else:
                values = _dedupe(v for value in values for v in self.attribute(value, seg))
        return values

    def call_results(self, fn: FunctionRecord, segs: Segs) -> tuple[Value, ...]:
        return _dedupe(v for value in self.evaluate(fn, segs) for v in self._call_result(value))

    def _super(self, fn: FunctionRecord) -> tuple[Value, ...]:
        if not fn.info.cls:
            return ()
        cls = f"{fn.module}.{fn.info.cls}"
        return (Value("super", cls),)

    def attribute(self, value: Value, attr: str) -> tuple[Value, ...]:
        kind = value.kind
        if kind == "module":
            sub = f"{value.name}.{attr}"
            if sub in self.p.modules:
                return (Value("module", sub),)
            return self.module_member(value.name, attr) or (external(sub),)
        if kind in ("external", "builtin"):
            dotted = f"{value.name}.{attr}"
            if dotted in self.p.modules:  # a package whose top we do not analyse
                return (Value("module", dotted),)
            return (external(dotted),)
        if kind == "super":
            mro = self.p.mro(value.name)[1:]
            return self._class_member(mro, attr, instance=True, bound=value.name)
        if kind in ("class", "instance"):
            mro = self.p.mro(value.name)
            found = self._class_member(mro, attr, instance=kind == "instance", bound=value.name)
            if found:
                return found
            if kind == "instance":
                # `self` in a mixin may be any class derived from it.
                derived = []
                for sub in sorted(self.p.subclasses.get(value.name, ())):
                    for hit in self._class_member(self.p.mro(sub), attr, True, sub):
                        derived.append(hit._replace(via="subclass"))
                return _dedupe(derived)
            return ()
        if kind == "function":
            return ()
        return ()

    def _class_member(
        self, mro: list[str], attr: str, instance: bool, bound: str
    ) -> tuple[Value, ...]:
        for cls in mro:
            record = self.p.classes[cls]
            method = record.methods.get(attr)
            if method is not None:
                fn = self.p.functions[method]
                if instance and _is_property(fn):
                    return self.returns(fn)
                return (Value("function", method, bound=bound),)
            nested = f"{cls}.{attr}"
            if nested in self.p.classes:
                return (Value("class", nested),)
            types = self.attr_types(cls, attr)
            if types:
                return types
        for cls in mro:
            for base in self.p.classes[cls].external_bases:
                return (external(f"{base}.{attr}"),)
        return ()

    def _call_result(self, value: Value) -> tuple[Value, ...]:
        if value.kind == "class":
            return (Value("instance", value.name),)
        if value.kind == "function":
            return self.returns(self.p.functions[value.name])
        if value.kind in ("external", "builtin"):
            return (external(value.name + "()"),)
        if value.kind == "instance":
            call = self._class_member(self.p.mro(value.name), "__call__", True, value.name)
            return _dedupe(v for c in call if c.kind == "function" for v in self._call_result(c))
        return ()

    def returns(self, fn: FunctionRecord) -> tuple[Value, ...]:
        """What calling `fn` returns: its annotation, else `return Cls(...)` statements."""
        cached = self._returns.get(fn.qualname)
        if cached is _IN_PROGRESS:
            return ()
        if cached is not None:
            return cached  # type: ignore[return-value]
        self._returns[fn.qualname] = _IN_PROGRESS
        if fn.info.returns:
            result = self._instances(fn, fn.info.returns)
        else:
            found: list[Value] = []
            for stmt in _of_kind(fn.info.body, "return"):
                if stmt.value and stmt.value[0] == "call":
                    found.extend(
                        v for v in self.call_results(fn, stmt.value[1]) if v.kind == "instance"
                    )
            result = _dedupe(found)
        self._returns[fn.qualname] = result
        return result

    # -- attribute types ----------------------------------------------------------
    def attr_types(self, cls: str, attr: str) -> tuple[Value, ...]:
        key = (cls, attr)
        cached = self._attr_types.get(key)
        if cached is _IN_PROGRESS:
            return ()
        if cached is not None:
            return cached  # type: ignore[return-value]
        self._attr_types[key] = _IN_PROGRESS
        record = self.p.classes[cls]
        found: list[Value] = []
        callables: list[str] = []
        for name, ann in record.info.attributes:
            if name != attr:
                continue
            holder = self.p.functions.get(record.module)
            if holder is None:
                continue
            if ann and ann[0] == CALL:
                found.extend(self.call_results(holder, ann[1:]))
            else:
                found.extend(self._instances(holder, ann))
        for name, methods in record.info.tables:
            if name == attr:
                callables += [record.methods[m] for m in methods if m in record.methods]
        for method in record.methods.values():
            fn = self.p.functions[method]
            if not fn.info.params:
                continue
            me = fn.info.params[0].name
            for stmt in _of_kind(fn.info.body, "assign"):
                if (me, attr) in stmt.targets:
                    found.extend(v for v in self._assigned_value(fn, stmt) if v.kind != "function")
                    for read in stmt.reads:
                        for value in self.evaluate(fn, read):
                            if value.kind == "function":
                                callables.append(value.name)
                        if len(read) > 1 and read[0] == me:
                            # `self.run = MethodType(self._MAP[kind], self)`: what the table
                            # holds, this attribute may hold.
                            callables.extend(self.held_callables(fn, read))
        result = _dedupe(found)[:_MAX_TYPES]
        self._attr_types[key] = result
        self._attr_callables[key] = tuple(sorted(set(callables)))
        return result

    def held_callables(self, fn: FunctionRecord, segs: Segs) -> tuple[str, ...]:
        """Functions stored in the attribute `segs` names (a dispatch table), if any."""
        tail = list(segs)
        while tail and tail[-1] == SUBSCRIPT:
            tail.pop()
        if len(tail) < 2 or CALL in tail:
            return ()
        owners = self.evaluate(fn, tuple(tail[:-1]))
        out: list[str] = []
        for owner in owners:
            if owner.kind != "instance":
                continue
            for cls in self.p.mro(owner.name):
                self.attr_types(cls, tail[-1])
                out.extend(self._attr_callables.get((cls, tail[-1]), ()))
        return tuple(sorted(set(out)))

    # -- calls ------------------------------------------------------------------
    def call_targets(self, fn: FunctionRecord, call: CallSite) -> list[Target]:
        kind = "callback" if call.deferred else "call"
        targets: list[Target] = []
        for value in self.evaluate(fn, call.target):
            if value.kind == "function":
                targets.append(Target(value.name, kind, value.via))
            elif value.kind == "class":
                init = self._class_member(self.p.mro(value.name), "__init__", True, value.name)
                named = [v.name for v in init if v.kind == "function"]
                targets.append(Target(named[0] if named else value.name, kind, "constructor"))
            elif value.kind == "instance":
                call_m = self._class_member(self.p.mro(value.name), "__call__", True, value.name)
                targets.extend(Target(v.name, kind) for v in call_m if v.kind == "function")
            elif value.kind in ("external", "builtin"):
                targets.append(Target(value.name, kind))
        if (
            (call.target and call.target[-1] in (CALL, SUBSCRIPT))
            or (targets and all(t.name not in self.p.functions for t in targets))
            or any(t.name in self.p.functions and t.name.endswith(".__call__") for t in targets)
        ):
            for held in self.held_callables(fn, call.target):
                targets.append(Target(held, kind, "dispatch"))
        if not targets:
            targets.extend(self._fallback(call.target, kind))
        return sorted(set(targets), key=lambda t: (t.name, t.kind, t.via or ""))

    def _fallback(self, segs: Segs, kind: str) -> list[Target]:
        if len(segs) < 2 or segs[-1] in (CALL, SUBSCRIPT) or segs[-1].startswith("__"):
            return []
        if segs[-1] in COMMON_METHODS:  # most likely a library object's method
            return []
        if self._method_owners is None:
            owners: dict[str, list[str]] = defaultdict(list)
            for record in self.p.classes.values():
                for name, qual in record.methods.items():
                    owners[name].append(qual)
            self._method_owners = owners
        found = self._method_owners.get(segs[-1], [])
        if len(found) == 1:
            return [Target(found[0], "callback" if kind == "callback" else "fallback")]
        return []

    def value_ref_targets(self, fn: FunctionRecord, segs: Segs) -> list[str]:
        """Functions a reference passed or stored as a value stands for (callback edges)."""
        return sorted({v.name for v in self.evaluate(fn, segs) if v.kind == "function"})


def _decorated(fn: FunctionRecord, name: str) -> bool:
    return any(dec and dec[-1] == name for dec in fn.info.decorators)


def _is_static(fn: FunctionRecord) -> bool:
    return _decorated(fn, "staticmethod")


def _is_classmethod(fn: FunctionRecord) -> bool:
    return _decorated(fn, "classmethod")


def _is_property(fn: FunctionRecord) -> bool:
    return _decorated(fn, "property") or _decorated(fn, "cached_property")


def _dedupe(values) -> tuple[Value, ...]:
    seen: dict[Value, None] = {}
    for value in values:
        seen.setdefault(value, None)
    return tuple(seen)
