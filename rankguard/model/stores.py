"""What attributes hold, and values stored into containers and attributes from where they
are not bound.

An attribute's values are learned from every assignment to it in its class (`self.x =
Cls(...)`, `self.x = param` with an annotation, `self.x = get_group()` with a return
annotation, `self.on_done = self._finish`), from class-level annotations and method tables,
and from stores anywhere else, only when first asked for.

`HANDLERS[key] = on_a` inside a function puts `on_a` into the module's `HANDLERS`;
`table[k] = f` into a local table; `job.callback = on_done` into the attribute of every `Job`,
though no method of `Job` assigns it. A later `HANDLERS[k]()` or `self.callback()` runs what
was stored. Only stores of a plain reference (a name, an attribute, a lambda) are followed:
those are how functions travel.

A container attribute is filled by its class's own methods as a local container is by its
function (`model.localtypes`): `self.timers[name] = self.Timer(name)`,
`self.event_timers.append(CudaEventTimer(...))` make those values its elements (`items`), read
back by `self.timers[name]`, `for et in self.event_timers` or a comprehension over it, in any
other method. A registry of timers or handles is filled in one method and read in another, so
its elements are known only this way. A mixin of the resolver.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING

from rankguard.model.cycles import Cycles
from rankguard.model.enums import Enums
from rankguard.model.namespaces import dedupe, of_kind
from rankguard.model.values import BUILTIN_PREFIX, Value
from rankguard.summary.ir import (
    CALL,
    FILLS,
    SUBSCRIPT,
    CallSite,
    Segs,
    Stmt,
    walk_statements,
)

if TYPE_CHECKING:
    from rankguard.model.program import Program
    from rankguard.model.records import FunctionRecord

_HELD = ("function", "class", "instance")
# An attribute's values are cut to this many, the project's first (`kept`). A factory
# attribute holds many: DeepSpeed's `self.optimizer` may be 17 project optimizers (ZeRO stages,
# BF16, FP16, fused and one-bit ones) and 7 library ones. At 4 its BF16 and FP16 wrappers were cut
# and their step's overflow and norm code unreached (recall 12/30 on the DeepSpeed sample, 14/30
# at 32, no slower; DeepSpeed 0.16.9, PipelineEngine.train_batch).
_MAX_TYPES = 32
AttrEntry = tuple[tuple["Value", ...], tuple[str, ...]]
_NOTHING_YET: AttrEntry = ((), ())


def kept(values: tuple[Value, ...]) -> tuple[Value, ...]:
    """The first `_MAX_TYPES` of an attribute's values, the project's own (its classes,
    instances, functions and modules, whose code a call on the attribute runs) before library
    values, each in the order they were found: `self.opt = torch.optim.SGD(...)` in four
    branches does not hide the fifth's `self.opt = ZeroOptimizer(...)`."""
    own = [v for v in values if _of_the_project(v)]
    return (*own, *(v for v in values if not _of_the_project(v)))[:_MAX_TYPES]


def _of_the_project(value: Value) -> bool:
    """A value whose code is the project's: not a library's or a builtin's (nor a container
    of those)."""
    kind = value.bound if value.kind == "items" else value.kind
    return kind not in _LIBRARY


_LIBRARY = frozenset(("external", "builtin", None))


def stores_a_reference(stmt: Stmt) -> bool:
    return stmt.kind == "assign" and stmt.value[:1] == ("ref",)


def subscript_root(target: Segs) -> str | None:
    """`d` for a store `d[k] = ...`."""
    return target[0] if len(target) == 2 and target[1] == SUBSCRIPT else None


def bound_names(fn: FunctionRecord) -> set[str]:
    """Names local to `fn`: its parameters and what it assigns as a plain name."""
    names = {p.name.lstrip("*") for p in fn.info.params}
    for stmt in walk_statements(fn.info.body):
        if stmt.kind == "assign" or (stmt.kind in ("loop", "with") and stmt.targets):
            names.update(t[0] for t in stmt.targets if len(t) == 1)
    return names - set(fn.info.global_names)


class Stores:
    p: Program
    enums: Enums
    _attribute_stores: dict[str, list[tuple[str, Stmt, str]]] | None
    _attr_types: dict[tuple[str, str], AttrEntry]
    # Syntax read once (each was re-walked for every question asked of it): a class's own
    # `self.attr = ...` statements by attribute, and what a local of a function is made from.
    _own_stores: dict[str, dict[str, list[tuple[FunctionRecord, Stmt]]]]
    _made_from: dict[tuple[str, str], list[Segs]]
    _own_fills: dict[str, dict[str, list[tuple[FunctionRecord, Stmt | CallSite]]]]
    cycles: Cycles
    module_member: Callable[..., tuple[Value, ...]]  # `rankguard.model.namespaces`
    _added: Callable[..., list[Value]]  # `rankguard.model.localtypes`

    def _instances(self, fn: FunctionRecord, annotation: Segs) -> tuple[Value, ...]:
        raise NotImplementedError  # the resolver reads annotations

    def call_results(self, fn: FunctionRecord, segs: Segs) -> tuple[Value, ...]:
        raise NotImplementedError  # the resolver evaluates calls

    def attribute(self, value: Value, attr: str) -> tuple[Value, ...]:
        raise NotImplementedError  # the resolver looks attributes up

    def _assigned_value(self, fn: FunctionRecord, stmt: Stmt) -> list[Value]:
        raise NotImplementedError  # the resolver evaluates assignments

    def evaluate(self, fn: FunctionRecord, segs: Segs) -> tuple[Value, ...]:
        raise NotImplementedError  # the resolver evaluates references

    def stored_items(self, fn: FunctionRecord, stmt: Stmt) -> list[Value]:
        """What `x[k] = value` puts into `x`: the value, as an element."""
        return [
            Value("items", v.name, bound=v.kind)
            for v in self._assigned_value(fn, stmt)
            if v.kind in _HELD or (v.kind == "external" and not v.name.startswith(BUILTIN_PREFIX))
        ]

    def module_stores(self, module: str) -> dict[str, list[tuple[str, Stmt]]]:
        """Global name -> (function, statement) for each `name[k] = ref` that stores into the
        module's global `name` (the module body's own, or a function's where `name` is not
        local)."""
        found: dict[str, list[tuple[str, Stmt]]] = defaultdict(list)
        for info in self.p.modules[module].summary.functions:
            qual = f"{module}.{info.qualname}" if info.qualname else module
            record = self.p.functions.get(qual)
            if record is None:
                continue
            local: set[str] | None = None
            for stmt in walk_statements(info.body):
                if not stores_a_reference(stmt):
                    continue
                for target in stmt.targets:
                    root = subscript_root(target)
                    if root is None:
                        continue
                    if local is None:
                        local = set() if record.is_module_body else bound_names(record)
                    if root not in local:
                        found[root].append((qual, stmt))
        return found

    def attribute_stores(self, cls: str, attr: str) -> list[Value]:
        """What stores from anywhere (`obj.attr = f`, with `obj` a local made from or
        annotated as `cls`) put into the attribute `attr` of `cls`."""
        if self._attribute_stores is None:
            index: dict[str, list[tuple[str, Stmt, str]]] = defaultdict(list)
            for qual in sorted(self.p.functions):
                info = self.p.functions[qual].info
                # A method's own `self.x = ...` is read by `attr_types` from its class.
                me = info.params[0].name if info.cls and info.params else None
                for stmt in walk_statements(info.body):
                    if not stores_a_reference(stmt):
                        continue
                    for target in stmt.targets:
                        if (
                            len(target) == 2
                            and target[0] != me
                            and target[1] not in (CALL, SUBSCRIPT)
                        ):
                            index[target[1]].append((qual, stmt, target[0]))
            self._attribute_stores = dict(index)
        found: list[Value] = []
        for qual, stmt, owner in self._attribute_stores.get(attr, ()):
            fn = self.p.functions[qual]
            if cls in self._declared_classes(fn, owner):
                found.extend(self._assigned_value(fn, stmt))
        return found

    def _declared_classes(self, fn: FunctionRecord, name: str) -> set[str]:
        """The classes the local `name` is made from (`job = Job()`) or annotated with (a
        parameter `job: Job`), read from the module's names only: a store's owner is told
        without evaluating the function's other locals, which would chain through every
        attribute they touch."""
        written = self._made_from.get((fn.qualname, name))
        if written is None:
            written = [p.annotation for p in fn.info.params if p.name == name and p.annotation]
            for stmt in walk_statements(fn.info.body):
                made = stmt.kind == "assign" and stmt.value[:1] == ("call",)
                if made and (name,) in stmt.targets:
                    written.append(stmt.value[1])
            self._made_from[(fn.qualname, name)] = written
        found: set[str] = set()
        for segs in written:
            values = self.module_member(fn.module, segs[0]) if segs else ()
            for seg in segs[1:]:
                values = tuple(v for value in values for v in self.attribute(value, seg))
            found.update(v.name for v in values if v.kind == "class")
        return found

    # -- attribute types ----------------------------------------------------------
    def attr_types(self, cls: str, attr: str) -> tuple[Value, ...]:
        return self._attr_entry(cls, attr)[0]

    def _attr_entry(self, cls: str, attr: str) -> AttrEntry:
        """The attribute's values, and the functions a call of it runs (`held_callables`)."""
        key = (cls, attr)
        cached = self._attr_types.get(key)
        if cached is not None:
            self.cycles.read(("attr", *key))
            return cached
        compute = lambda: self._attr_values(cls, attr)  # noqa: E731
        return self.cycles.answer(("attr", *key), self._attr_types, key, _NOTHING_YET, compute)

    def _attr_values(self, cls: str, attr: str) -> AttrEntry:
        if self.enums.member(cls, attr):
            return (Value("instance", cls),), ()
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
        for fn, stmt in self._stores_of(cls).get(attr, ()):
            me = fn.info.params[0].name
            # A function stored (`self.on_done = self._finish`, a lambda) is what a call of
            # the attribute runs; one called there is not (`self.model = get_model(cfg)` stores
            # the model it returns, in `found`), one handed to a call may be (`partial(f, 1)`).
            found.extend(self._assigned_value(fn, stmt))
            called = {call.target for call in stmt.calls}
            for read in (r for r in stmt.reads if r not in called):
                for value in self.evaluate(fn, read):
                    if value.kind == "function":
                        callables.append(value.name)
                if len(read) > 1 and read[0] == me:
                    # `self.run = MethodType(self._MAP[kind], self)`: what the table holds,
                    # this attribute may hold.
                    callables.extend(self.held_callables(fn, read))
        found.extend(self.attribute_stores(cls, attr))
        found.extend(self._filled(cls, attr))
        return kept(dedupe(found)), tuple(sorted(set(callables)))

    def _filled(self, cls: str, attr: str) -> list[Value]:
        """The elements `cls`'s own methods put into its container attribute `attr`
        (`self.attr[k] = v`, `self.attr.append(v)`, `.extend(vs)`, ...), as `items`: what
        `stored_items` and `_added` tell of a local container. A value that cannot be told
        adds nothing, and an attribute filled with nothing known stays as it was."""
        found: list[Value] = []
        for fn, site in self._fills_of(cls).get(attr, ()):
            if isinstance(site, CallSite):
                found.extend(self._added(fn, site))
            elif site.value[:1] in (("ref",), ("call",)):
                found.extend(self.stored_items(fn, site))
        return found

    def _fills_of(self, cls: str) -> dict[str, list[tuple[FunctionRecord, Stmt | CallSite]]]:
        """`self.attr[k] = ...` statements and `self.attr.append(...)`-style calls (a method
        `_added` knows) of `cls`'s own methods, by attribute; read once per class."""
        found = self._own_fills.get(cls)
        if found is None:
            index: dict[str, list[tuple[FunctionRecord, Stmt | CallSite]]] = defaultdict(list)
            for method in self.p.classes[cls].methods.values():
                fn = self.p.functions[method]
                if not fn.info.params:
                    continue
                me = fn.info.params[0].name
                for stmt in walk_statements(fn.info.body):
                    for target in dict.fromkeys(stmt.targets if stmt.kind == "assign" else ()):
                        if target[:1] == (me,) and target[2:] == (SUBSCRIPT,) and len(target) == 3:
                            index[target[1]].append((fn, stmt))
                    for call in (c for c in stmt.calls if not c.deferred):
                        segs = call.target
                        if len(segs) == 3 and segs[0] == me and segs[2] in FILLS:
                            index[segs[1]].append((fn, call))
            found = self._own_fills[cls] = dict(index)
        return found

    def _stores_of(self, cls: str) -> dict[str, list[tuple[FunctionRecord, Stmt]]]:
        """The `self.attr = ...` statements of `cls`'s own methods, by attribute."""
        found = self._own_stores.get(cls)
        if found is None:
            index: dict[str, list[tuple[FunctionRecord, Stmt]]] = defaultdict(list)
            for method in self.p.classes[cls].methods.values():
                fn = self.p.functions[method]
                if not fn.info.params:
                    continue
                me = fn.info.params[0].name
                for stmt in of_kind(fn.info.body, "assign"):
                    for target in dict.fromkeys(stmt.targets):
                        if len(target) == 2 and target[0] == me:
                            index[target[1]].append((fn, stmt))
            found = self._own_stores[cls] = dict(index)
        return found

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
                out.extend(self._attr_entry(cls, tail[-1])[1])
        return tuple(sorted(set(out)))
