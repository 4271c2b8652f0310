"""A file's *interface*: what resolving any other module may read of it, as one digest.

Name and call resolution (`model.resolve`) reads other modules through their names, imports,
classes (bases, decorators, attributes, method tables), function signatures, module-level
statements, the class-like names each body mentions (class-hierarchy dispatch keeps the classes
a program names), the names a method hands on to its bases (`super().m()`) and the methods a
body takes from a class as values (which classes a base's method runs on), and, for the
functions whose bodies shape what others see, the part of the body that does: what a function
returns (return inference, `return Cls(...)` even under an annotation, `return inner` for a
decorator's wrapper), what a generator yields, a method's `self.attr = ...` (attribute types), a
store of a reference into an attribute or a container (`obj.cb = f`, `TABLE[k] = f`), an
element a method puts into its object's container (`self.handlers.append(f())`), a rebound
`global`; and every binding those statements read, transitively through the function's
locals (`_slice`). A local nothing of that reads and whose value evaluates nothing (a counter, a
constant) is not part of it. Everything else in a body (calls, branches, line numbers) only
matters to the module's own resolution.

So a body edit that leaves this digest unchanged cannot change how any *other* module
resolves, and their cached resolutions stay valid: the key of per-module resolution reuse.
The digest errs on the side of including too much (the words a kept statement holds are all
taken as names it reads, and an enclosing function of one whose body counts keeps all its
bindings): a wider digest only costs reuse.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterable

from rankguard.summary.ir import FILLS, FileSummary, FunctionInfo, Stmt, walk_statements

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _binds(stmt: Stmt) -> bool:
    return stmt.kind == "assign" or (stmt.kind in ("loop", "with") and bool(stmt.targets))


def _shapes_others(fn: FunctionInfo) -> bool:
    """Whether resolving another function may read `fn`'s body."""
    if not fn.qualname or fn.global_names or fn.is_generator:
        return True
    me = fn.params[0].name if fn.params and fn.cls else None
    return any(_exported(stmt, me, fn.global_names) for stmt in walk_statements(fn.body))


def _fills_own(stmt: Stmt, me: str | None) -> bool:
    """`self.attr.append(v)`-style: what the method puts into its object's container is what
    the attribute's items are, wherever they are read (`model.stores`)."""
    return me is not None and any(
        not call.deferred
        and len(call.target) == 3
        and call.target[0] == me
        and call.target[2] in FILLS
        for call in stmt.calls
    )


def _exported(stmt: Stmt, me: str | None, global_names: tuple[str, ...]) -> bool:
    """A statement another module's resolution reads: a return with a value (`returns`,
    `_constructed`: every return's shape counts, annotated or not), `self.attr = ...`, a
    reference stored into an attribute or a container (`obj.cb = f`, `TABLE[k] = f`: the
    stored function is what others' calls reach), an element put into the object's own
    container (`self.handlers.append(f())`), an assignment to a `global` name."""
    if stmt.kind == "return":
        return bool(stmt.value)
    if _fills_own(stmt, me):
        return True
    if stmt.kind != "assign":
        return False
    stores_ref = stmt.value[:1] == ("ref",)
    for target in stmt.targets:
        if len(target) > 1 and (target[0] == me or stores_ref):
            return True
        if len(target) == 1 and target[0] in global_names:
            return True
    return False


def _asks(stmt: Stmt) -> bool:
    """A binding whose value the resolver evaluates when it builds the function's locals
    (`Resolver._build_locals` evaluates every binding, read or not). Evaluating asks other
    questions, and a question can come back to these locals (a `self` attribute assigned
    here is evaluated in this function's scope): a cycle, whose answers are made from the
    member entered first (`model.cycles`). So such a binding may change what other modules
    are answered even when nothing reads its name; only one that evaluates nothing (a
    constant, an arithmetic `("other",)` value) cannot."""
    return stmt.kind in ("assign", "loop") and _evaluates(stmt.value)


def _evaluates(shape: tuple[object, ...]) -> bool:
    if not shape:
        return False
    if shape[0] == "either":
        return any(_evaluates(side) for side in shape[1])  # type: ignore[union-attr]
    return shape[0] not in ("const", "other")


def _words(stmt: Stmt) -> set[str]:
    """Every name a binding or return statement may read (its value, what it reads, its
    calls' targets and argument texts, its targets' roots): a superset is safe."""
    calls = tuple((c.target, c.args, c.kwargs) for c in stmt.calls)
    return set(_WORD.findall(repr((stmt.targets, stmt.reads, stmt.value, calls))))


def _line_free(stmt: Stmt) -> tuple[object, ...]:
    calls = tuple((c.target, c.args, c.kwargs, c.deferred) for c in stmt.calls)
    return (stmt.kind, stmt.targets, stmt.reads, stmt.value, calls)


def _slice(fn: FunctionInfo) -> list[tuple[object, ...]]:
    """Line-free, in body order: the exported statements (`_exported`), the bindings whose
    value is evaluated (`_asks`), and every binding of a name those read, transitively. The
    resolver's locals of `fn` (`model.resolve`) are built from binding statements only, each
    from its own value and the names it reads, and the resolver is flow-insensitive: a local
    outside this set (`n = 0`, `n = n + 1`, that no kept statement reads) changes no value
    another module can ask for, and asks nothing while the locals are built."""
    me = fn.params[0].name if fn.params and fn.cls else None
    stmts = [
        s for s in walk_statements(fn.body) if _binds(s) or s.kind == "return" or _fills_own(s, me)
    ]
    binding: dict[str, list[int]] = {}  # name -> the statements that bind it
    for index, stmt in enumerate(stmts):
        for root in {t[0] for t in stmt.targets if t}:
            binding.setdefault(root, []).append(index)
    kept: set[int] = set()
    todo: list[str] = [segs[0] for segs in fn.yields if segs]
    for index, stmt in enumerate(stmts):
        if _exported(stmt, me, fn.global_names) or _asks(stmt):
            kept.add(index)
            if stmt.kind != "return" or _evaluated(stmt):
                todo += _words(stmt)
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for index in binding.get(name, ()):
            if index not in kept:
                kept.add(index)
                todo += _words(stmts[index])
    return _distinct(
        _line_free(stmt) if stmt.kind != "return" else _returned(stmt)
        for index, stmt in enumerate(stmts)
        if index in kept
    )


def _distinct(parts: Iterable[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """First occurrences only: the resolver is flow-insensitive and joins what statements
    give with `dedupe` (first occurrence first), so a statement repeated adds nothing."""
    seen: dict[str, tuple[object, ...]] = {}
    for part in parts:
        seen.setdefault(repr(part), part)
    return list(seen.values())


def _evaluated(stmt: Stmt) -> bool:
    """A return whose value the resolver evaluates: a call (`returns`, `_constructed`, and
    `__getattr__`'s `return getattr(self.x, name)`, `model.named`) or a reference."""
    return stmt.value[:1] in (("call",), ("ref",))


def _returned(stmt: Stmt) -> tuple[object, ...]:
    """A return as the resolver reads it: whole when it is evaluated or calls anything (a
    forwarding `__getattr__` reads the calls of every return, whatever its shape: `return
    getattr(self.a, name) if name else None`), else only its shape (`_constructed` gives up on
    any return other than `Cls(...)` or a constant)."""
    whole = _evaluated(stmt) or bool(stmt.calls)
    return _line_free(stmt) if whole else ("return", stmt.value[:1])


def mentioned_in(fn: FunctionInfo) -> set[str]:
    """Every name a body calls, reads, stores or passes (annotations are not reads): a class
    named here counts as instantiated (`model.hierarchy`), which widens dispatch anywhere."""
    names: set[str] = set()
    for segs, _ in fn.value_refs:
        names.update(segs)
    for stmt in walk_statements(fn.body):
        for read in stmt.reads:
            names.update(read)
        for call in stmt.calls:
            names.update(call.target)
            for text in (*call.args, *(text for _, text in call.kwargs)):
                names.update(_WORD.findall(text))
    return names


def _class_like(name: str) -> bool:
    return name.lstrip("_")[:1].isupper()


def handed_on(fn: FunctionInfo) -> frozenset[str]:
    """The names a method (or a closure inside one) calls on the definitions its class
    overrides or inherits: `super().n(...)`, `Base.n(self, ...)`. Whether a base's method runs
    on a subclass's objects depends on them (`model.hierarchy.running`), so they are part of
    the interface."""
    me = {fn.params[0].name} if fn.params and fn.cls else set()
    names: set[str] = set()
    for stmt in walk_statements(fn.body):
        for call in stmt.calls:
            target = call.target
            if len(target) >= 2 and (
                target[0] == "super()" or call.args[:1] in {(m,) for m in me | {"self"}}
            ):
                names.add(target[-1])
    return frozenset(names)


ANY_METHOD = "*"  # `getattr(Cls, name)`: a method of any name taken from a class


def unbound_refs(fn: FunctionInfo) -> frozenset[str]:
    """The method names a body takes from a class rather than calling them on an object
    (`{1: Base.handle}`, `Base.handle(obj)`, `Base.handle.__get__(obj)`, `super(C, obj).handle()`;
    `ANY_METHOD` for `getattr(Cls, name)` by a computed name), and every function a module or
    class body refers to as a value (`run = m`, `p = property(m)` in a class body): run that way,
    a base's method may run on a subclass that overrides it (`model.hierarchy.running`). A call
    `Base.handle(self, ...)` hands on (`handed_on`) instead."""
    me = {fn.params[0].name, "self"} if fn.params and fn.cls else {"self"}
    names: set[str] = {segs[-1] for segs, _ in fn.value_refs} if not fn.qualname else set()
    refs = [segs for segs, _ in fn.value_refs]
    for stmt in walk_statements(fn.body):
        for call in stmt.calls:
            if call.args[:1] not in {(m,) for m in me}:
                refs.append(call.target)
            by_class = call.target == ("getattr",) and call.args and _class_like(call.args[0])
            if by_class and (len(call.args) < 2 or call.args[1][:1] not in ("'", '"')):
                names.add(ANY_METHOD)
    for segs in refs:
        if segs[:1] == ("super",) and len(segs) >= 2:
            names.add(segs[-1])
        for before, name in itertools.pairwise(segs):
            if _class_like(before):
                names.add(name)
    return frozenset(names)


def _bindings(fn: FunctionInfo) -> list[tuple[object, ...]]:
    """Line-free: each binding or return statement with what it reads and binds."""
    kept = (s for s in walk_statements(fn.body) if _binds(s) or s.kind == "return")
    return _distinct(_line_free(stmt) for stmt in kept)


def _module_body(fn: FunctionInfo) -> list[tuple[object, ...]]:
    """Module-level statements, whole but for lines and columns."""
    return [
        (stmt.kind, stmt.targets, stmt.reads, stmt.value, stmt.text,
         tuple((c.target, c.args, c.kwargs, c.deferred) for c in stmt.calls))
        for stmt in walk_statements(fn.body)
    ]  # fmt: skip


def interface_of(summary: FileSummary) -> str:
    """The digest, computed once per summary (at parse time, so it is cached with it)."""
    found = summary.facts.get("interface")
    if not isinstance(found, str):
        found = summary.facts["interface"] = interface_digest(summary)
    return found


def interface_digest(summary: FileSummary) -> str:
    parts: list[object] = [summary.all_names]
    parts += [(i.scope, i.bound, i.module, i.level, i.attr) for i in summary.imports]
    parts += [
        (c.qualname, c.name, c.bases, c.decorators, c.attributes, c.tables) for c in summary.classes
    ]
    bearing = {fn.qualname for fn in summary.functions if _shapes_others(fn)}
    # A nested function evaluates through the locals of the functions enclosing it.
    enclosing = {q.rsplit(".", i)[0] for q in bearing for i in range(1, q.count(".") + 1)}
    for fn in summary.functions:
        params = tuple((p.name, p.annotation, getattr(p, "items", None)) for p in fn.params)
        parts.append(
            (fn.qualname, fn.name, fn.cls, params, fn.returns, fn.decorators, fn.global_names,
             fn.decorator_called, fn.is_generator, fn.yields)
        )  # fmt: skip
        # Class-like (capitalised) names the body mentions: naming a class anywhere keeps it
        # among the receivers of class-hierarchy dispatch in every module. A private class's
        # name (`_Impl`) is capitalised after its underscores.
        parts.append(sorted(n for n in mentioned_in(fn) if _class_like(n)))
        parts.append(sorted(handed_on(fn)))
        parts.append(sorted(unbound_refs(fn)))
        if not fn.qualname:
            parts.append(_module_body(fn))
        elif fn.qualname in enclosing:  # its locals are a nested function's enclosing scope
            parts.append(_bindings(fn))
        elif fn.qualname in bearing:
            parts.append(_slice(fn))
    return hashlib.sha1(repr(parts).encode()).hexdigest()
