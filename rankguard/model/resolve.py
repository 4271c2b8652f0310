"""Static name and call resolution over the whole program.

Everything is lazy and memoised: a name is resolved when a call needs it, and an attribute's
values are learned when first asked for (`rankguard.model.stores`). Functions are values: a
lambda, a function stored in a container or an attribute, a generator made by a call (its body
runs where it is advanced), a builtin value whose methods are the builtin's. A receiver
*declared* as a class (an annotation, or `self`) reaches the overrides of the classes it may be
(`rankguard.model.hierarchy`); module namespaces live in `rankguard.model.namespaces`.
Nothing here guesses without saying so: what cannot be told stays unresolved, and a heuristic
(the one class defining a method name; a device submodule chosen at run time) is a `fallback`.
"""

from __future__ import annotations

import builtins
from collections import defaultdict
from importlib import resources
from typing import TYPE_CHECKING, Any

from rankguard.model.cycles import Cycles
from rankguard.model.decorators import Decorators
from rankguard.model.enums import Enums
from rankguard.model.hierarchy import Hierarchy
from rankguard.model.localtypes import (
    ELEMENT,
    TAKES,
    TUPLE,
    VIEWS,
    LocalTypes,
    Scope,
    containers,
    element,
)
from rankguard.model.named import NAMED, computed_attribute, forwarded
from rankguard.model.namespaces import ModuleNamespaces, dedupe, of_kind
from rankguard.model.records import FunctionRecord, Target
from rankguard.model.stores import AttrEntry, Stores
from rankguard.model.values import (
    BUILTIN_PREFIX,
    DEVICE_MODULE_GETTER,
    DEVICE_MODULES,
    Value,
    builtin_instance,
    external,
    names_a_callable,
)
from rankguard.summary.ir import (
    CALL,
    OPAQUE,
    SUBSCRIPT,
    CallSite,
    FunctionInfo,
    Segs,
    Stmt,
)

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
_IN_PROGRESS = object()
_MODULE_CALL = "nn.Module.__call__"  # `torch.nn.Module.__call__`: runs `forward`


class Resolver(Stores, ModuleNamespaces, Decorators, LocalTypes):
    def __init__(self, program: Program) -> None:
        self.p = program
        self._globals: dict[str, dict[str, list]] = {}
        self._module_value: dict[tuple[str, str], tuple[Value, ...]] = {}
        self._attr_types: dict[tuple[str, str], AttrEntry] = {}
        self._own_stores: dict[str, dict] = {}
        self._own_fills: dict[str, dict] = {}
        self._made_from: dict[tuple[str, str], list] = {}
        self._local_types: dict[str, dict[str, list]] = {}
        self._returns: dict[str, tuple[Value, ...] | object] = {}
        self.forwarding: dict[str, tuple[Value, ...] | None] = {}  # model.named
        self._method_owners: dict[str, list[str]] | None = None
        self.hierarchy = Hierarchy(program)
        self._decorated: dict[str, tuple[Value, ...]] = {}
        self._decorated_by: dict[str, list[str]] | None = None
        self._closures: dict[tuple[str, str], tuple[str, frozenset[str]] | None] = {}
        self._attribute_stores = None
        self.cycles = Cycles()  # memoised answers that do not depend on the order asked
        self.enums = Enums(program)

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
                return self.decorated(nested)
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
        qual = fn.qualname
        cached = self._local_types.get(qual)
        if cached is not None:
            self.cycles.read(qual)
            return cached
        table: dict[str, tuple[Value, ...]] = {}
        if fn.is_module_body:
            self._local_types[qual] = table
            return table
        # The table is its own cycle guard: partial while it is built.
        return self.cycles.answer(
            qual, self._local_types, qual, table, lambda: self._build_locals(fn, table)
        )

    def _assigned_value(self, fn: FunctionRecord, stmt: Stmt) -> list[Value]:
        return self._value_of(fn, stmt, stmt.value)

    def _value_of(self, fn: FunctionRecord, stmt: Stmt, shape: tuple[Any, ...]) -> list[Value]:
        if not shape:
            return []
        if shape[0] == "either":
            return [v for side in shape[1] for v in self._value_of(fn, stmt, side)]
        # An annotation the model places is trusted over the value (`x: Base = make()` may be
        # any class derived from `Base`); one it cannot place (`"Table"`) defers to the value.
        value = shape[2] if len(shape) > 2 and shape[0] in ("annotated", "items") else ()
        if shape[0] == "annotated":
            return list(self._instances(fn, shape[1])) or self._value_of(fn, stmt, value)
        if shape[0] == "items":  # a container of T: `bound` carries the element's kind
            held = [Value("items", v.name, bound=v.kind) for v in self._instances(fn, shape[1])]
            return held + self._value_of(fn, stmt, value)  # and the container itself
        if shape[0] == "call":
            if len(shape) > 2 and (declared := list(self._instances(fn, shape[2]))):
                return declared
            computed = computed_attribute(self, fn, stmt, shape[1])
            return list(computed or self.call_results(fn, shape[1]))
        if shape[0] == "ref":
            return [v for v in self.evaluate(fn, shape[1]) if v.kind != "builtin"]
        if shape[0] == "literal":  # a container literal: its elements, through `[k]` or `for`
            return [
                Value("items", v.name, bound=v.kind)
                for segs in shape[1]
                for v in self.evaluate(fn, segs)
                if v.kind in ("function", "class", "instance")
            ] + [builtin_instance(shape[2])]
        if shape[0] == "const" and shape[1][:1] in ("'", '"'):
            return [builtin_instance("str")]
        return []

    def _instances(self, fn: FunctionRecord, annotation: Segs) -> tuple[Value, ...]:
        out = []
        for value in self.evaluate(fn, annotation):
            if value.kind == "class":  # declared: the class or any class derived from it
                out.append(Value("instance", value.name, via="declared"))
            elif value.kind == "external":
                out.append(Value("external", value.name + "()"))
        return tuple(out)

    # -- evaluation -------------------------------------------------------------
    def evaluate(
        self, fn: FunctionRecord, segs: Segs, scope: Scope | None = None
    ) -> tuple[Value, ...]:
        """Every value the reference `segs` may have inside `fn` (with the names of `scope`,
        a comprehension's variables, bound as it says)."""
        if not segs or segs[0] == OPAQUE:
            return ()
        head = segs[0]
        if head == "<str>":
            values: tuple[Value, ...] = (builtin_instance("str"),)
        elif scope and head in scope:
            values = scope[head]
        else:
            values = self._super(fn) if head == "super()" else self.lookup(fn, head)
        skip = False
        for index, seg in enumerate(segs[1:], 1):
            if not values:
                return ()
            if skip:
                skip = False
                continue
            called = segs[index + 1 : index + 2] == (CALL,)
            held = tuple(v for v in values if v.kind == "items")
            if called and held and seg in TAKES + VIEWS:
                # `xs.pop()`, `d.get(k)`: an element of the container; `d.values()`: its
                # elements still. What else the receiver may be answers as it always does.
                if seg in TAKES:
                    held = tuple(element(v) for v in held if v.via != TUPLE)
                others = (v for v in values if v.kind != "items")
                methods = (m for value in others for m in self.attribute(value, seg))
                values = dedupe((*held, *(v for m in methods for v in self._call_result(m))))
                skip = True
                continue
            if seg == CALL:
                values = dedupe(v for value in values for v in self._call_result(value))
            elif seg == SUBSCRIPT:
                items = tuple(
                    element(v) for v in values if v.kind == "items" and v.bound and v.via != TUPLE
                )
                # An element of a builtin container is only known through `items`.
                values = tuple(
                    v
                    for v in values
                    if v.kind == "external" and not v.name.startswith(BUILTIN_PREFIX)
                )
                values = items + tuple(external(v.name + "[]") for v in values)
            else:
                values = dedupe(v for value in values for v in self.attribute(value, seg))
        return values

    def call_results(self, fn: FunctionRecord, segs: Segs) -> tuple[Value, ...]:
        return self.evaluate(fn, (*segs, CALL)) if segs else ()

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
            return (Value("external", dotted, via=value.via),)
        if kind == "super":
            mro = self.p.mro(value.name)[1:]
            return self._class_member(mro, attr, instance=True, bound=value.name)
        if kind == "instance" and value.via == "declared":
            found = self._dispatch(value.name, attr, value.bound)
            if found:
                return found
        if kind in ("class", "instance"):
            mro = self.p.mro(value.name)
            found = self._class_member(mro, attr, instance=kind == "instance", bound=value.name)
            if found:
                return found
            if kind == "instance" and (held := forwarded(self, value.name)):
                return dedupe(v for owner in held for v in self.attribute(owner, attr))
            if kind == "instance":
                # `self` in a mixin may be any class derived from it.
                derived = []
                for sub in sorted(self.p.subclasses.get(value.name, ())):
                    for hit in self._class_member(self.p.mro(sub), attr, True, sub):
                        derived.append(hit._replace(via="subclass"))
                return dedupe(derived)
            return ()
        if kind == "function":
            return ()
        return ()

    def _dispatch(self, cls: str, attr: str, running: str | None = None) -> tuple[Value, ...]:
        """`x.attr` on a value declared as `cls`: what each class it may be would find
        (class-hierarchy analysis, `rankguard.model.hierarchy`); overrides are marked."""
        own = {v.name for v in self._class_member(self.p.mro(cls), attr, True, cls)}
        found: list[Value] = []
        for receiver in self.hierarchy.receivers_of(cls, running):
            for hit in self._class_member(self.p.mro(receiver), attr, True, receiver):
                override = hit.kind == "function" and hit.name not in own
                found.append(hit._replace(via="override") if override else hit)
        return dedupe(found)

    def _class_member(
        self, mro: list[str], attr: str, instance: bool, bound: str
    ) -> tuple[Value, ...]:
        # An attribute assigned by methods of several classes of the MRO is one attribute of
        # the instance: what each assigns is kept, down to the first class defining the name.
        assigned: list[Value] = []
        for cls in mro:
            record = self.p.classes[cls]
            method = record.methods.get(attr)
            if method is not None:
                if assigned:
                    break
                fn = self.p.functions[method]
                if instance and _is_property(fn):
                    return self.returns(fn)
                return (Value("function", method, bound=bound),)
            nested = f"{cls}.{attr}"
            if nested in self.p.classes:
                if assigned:
                    break
                return (Value("class", nested),)
            assigned.extend(self.attr_types(cls, attr))
        if assigned:
            return dedupe(assigned)
        for cls in mro:
            for base in self.p.classes[cls].external_bases:
                return (external(f"{base}.{attr}"),)
        return ()

    def elements(self, value: Value) -> list[Value]:
        """What iterating `value` gives."""
        if value.kind == "items" and value.bound:
            return [element(value)] if value.via != TUPLE else []
        if value.kind == "generator":
            fn = self.p.functions[value.name]
            held = ("function", "class", "instance")
            return [v for ref in fn.info.yields for v in self.evaluate(fn, ref) if v.kind in held]
        if value.kind == "external" and not value.name.startswith(_UNTYPED):
            return [element(external(value.name))]  # as a subscript reads it
        if value.kind == "instance":
            step = self._class_member(self.p.mro(value.name), "__next__", True, value.name)
            return [v for m in step if m.kind == "function" for v in self._call_result(m)]
        return []

    def _call_result(self, value: Value) -> tuple[Value, ...]:
        if value.kind == "class":
            return (Value("instance", value.name),)
        if value.kind == "function":
            fn = self.p.functions[value.name]
            if suspends(fn.info):
                return (Value("generator", value.name), *self.returns(fn))
            return self.returns(fn)
        if value.name == DEVICE_MODULE_GETTER:
            return DEVICE_MODULES
        if value.kind in ("external", "builtin"):  # what a library element's method gives
            return (
                Value("external", value.name + "()", via=ELEMENT if value.via == ELEMENT else None),
            )
        if value.kind == "instance":
            call = self._invoked(value)
            return dedupe(v for c in call if c.kind == "function" for v in self._call_result(c))
        return ()

    def _invoked(self, value: Value) -> tuple[Value, ...]:
        """What calling an instance runs: its class's `__call__`; for a `torch.nn.Module`,
        whose `__call__` runs the module's hooks and then `forward`, the class's `forward`."""
        mro = self.p.mro(value.name)
        call = self._class_member(mro, "__call__", True, value.name)
        if call and all(v.kind == "external" and v.name.endswith(_MODULE_CALL) for v in call):
            return self._class_member(mro, "forward", True, value.name)
        return call

    def returns(self, fn: FunctionRecord) -> tuple[Value, ...]:
        """What calling `fn` returns: its annotation, else `return Cls(...)`; and callables it
        returns by name (`return inner`, `return dist.all_gather`): `f()()`, decorators."""
        qual = fn.qualname
        cached = self._returns.get(qual)
        if cached is not None:
            self.cycles.read(("returns", qual))
            return () if cached is _IN_PROGRESS else cached  # type: ignore[return-value]
        return self.cycles.answer(
            ("returns", qual), self._returns, qual, _IN_PROGRESS, lambda: self._returned(fn)
        )

    def _returned(self, fn: FunctionRecord) -> tuple[Value, ...]:
        found: list[Value] = list(self._constructed(fn))
        if fn.info.returns and not found:
            found.extend(self._instances(fn, fn.info.returns))
        for stmt in of_kind(fn.info.body, "return"):
            shape = stmt.value
            if not shape:
                continue
            if shape[0] == "call" and not fn.info.returns:
                results = self.call_results(fn, shape[1])
                found.extend(v for v in results if v.kind == "instance")
                found.extend(containers(results))
            elif shape[0] == "ref":
                values = self.evaluate(fn, shape[1])
                found.extend(v for v in values if names_a_callable(v))
                found.extend(containers(values))
                if len(shape[1]) == 1 and not fn.info.returns:
                    # `opt = A()` / `opt = B()` in branches, then `return opt`: as `return A()`
                    found.extend(self.returned_local(fn, shape[1][0], stmt))
            elif stmt.tree[:1] == ("ref",) and stmt.tree[1][-1:] == (SUBSCRIPT,):
                # `return self.timers[name]`: a registry hands out an element filed into it
                # (`model.stores`), as `return self.timers.get(name)` does.
                values = self.evaluate(fn, stmt.tree[1])
                found.extend(v for v in values if v.kind == "instance")
            elif shape[0] == "literal" and shape[2] == "tuple":
                # `return t, reqs`: what `_, reqs = f()` binds; a name bound to it whole does not
                for segs in shape[1]:
                    values = self.evaluate(fn, segs)
                    found.extend(v._replace(via=TUPLE) for v in containers(values))
        return dedupe(found)

    def _constructed(self, fn: FunctionRecord) -> tuple[Value, ...]:
        """Every `return` builds an instance of a class it names (`return Tiered(...)`, a
        constant aside): exactly those classes, which say more than an annotation naming their
        base. `cls(...)` and `type(self)(...)` build whatever class the call was made on."""
        built: list[Value] = []
        for stmt in of_kind(fn.info.body, "return"):
            shape = stmt.value
            if not shape or shape[0] == "const":
                continue
            if shape[0] != "call" or len(shape) > 2 or shape[1][0] in _OPEN_CLASSES:
                return ()
            classes = self.evaluate(fn, shape[1])
            if not classes or any(v.kind != "class" for v in classes):
                return ()
            built.extend(Value("instance", v.name) for v in classes)
        return dedupe(built)

    # -- calls ------------------------------------------------------------------
    def call_targets(self, fn: FunctionRecord, call: CallSite) -> list[Target]:
        kind = "callback" if call.deferred else "call"
        targets: list[Target] = []
        for value in self.evaluate(fn, call.target, self.comprehension_scope(fn, call)):
            if value.kind == "function":
                guess = value.via == NAMED and kind == "call"  # a method named at run time
                edge = "fallback" if guess else kind
                targets.append(Target(value.name, edge, value.via, value.wraps))
            elif value.kind == "class":
                init = self._class_member(self.p.mro(value.name), "__init__", True, value.name)
                named = [v.name for v in init if v.kind == "function"]
                targets.append(Target(named[0] if named else value.name, kind, "constructor"))
                # No `__init__` in the program but an external base's: that one runs.
                inherited = [v.name for v in init if v.kind == "external" and not named]
                targets += [Target(name, kind, "constructor") for name in inherited]
            elif value.kind == "instance":
                call_m = self._invoked(value)
                targets.extend(Target(v.name, kind) for v in call_m if v.kind == "function")
            elif value.kind in ("external", "builtin"):
                # A device submodule chosen at run time is a guess among peers: `fallback`.
                guessed = value.via == "device" and kind == "call"
                targets.append(Target(value.name, "fallback" if guessed else kind, value.via))
        if (
            (call.target and call.target[-1] in (CALL, SUBSCRIPT))
            or (targets and all(t.name not in self.p.functions for t in targets))
            or any(t.name in self.p.functions and t.name.endswith(".__call__") for t in targets)
        ):
            for held in self.held_callables(fn, call.target):
                targets.append(Target(held, kind, "dispatch"))
        if all(t.via == ELEMENT for t in targets):  # none, or a library's element alone
            targets.extend(self._fallback(call.target, kind))
        return sorted(set(targets), key=lambda t: (t.name, t.kind, t.via or "", t.wraps or ""))

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


_OPEN_CLASSES = frozenset(("cls", "self", "type", "super()"))
_UNTYPED = (BUILTIN_PREFIX, "typing.")  # an element of these is known only through `items`
_CONTEXT_MANAGERS = ("contextmanager", "asynccontextmanager")


def suspends(info: FunctionInfo) -> bool:
    """Calling the function makes a generator and runs nothing (a context manager's generator
    is run by its decorator)."""
    return info.is_generator and not any(d and d[-1] in _CONTEXT_MANAGERS for d in info.decorators)


def _is_property(fn: FunctionRecord) -> bool:
    return fn.info.decorated("property") or fn.info.decorated("cached_property")
