"""A file's *interface*: what resolving any other module may read of it, as one digest.

Name and call resolution (`model.resolve`) reads other modules through their names, imports,
classes (bases, decorators, attributes, method tables), function signatures, module-level
statements, the class-like names each body mentions (class-hierarchy dispatch keeps the classes
a program names), and, for the few functions whose bodies shape what others see, their
bindings: a generator, a function without a return annotation that returns a call's result or
a function (return inference), a
method assigning `self.attr` (attribute types), a function storing a reference into an
attribute or a container (`obj.cb = f`, `TABLE[k] = f`), a function rebinding a `global`. Everything
else in a body (calls, branches, line numbers) only matters to the module's own resolution.

So a body edit that leaves this digest unchanged cannot change how any *other* module
resolves, and their cached resolutions stay valid: the key of per-module resolution reuse.
The digest errs on the side of including too much (a binding-bearing function contributes
all its bindings, and those of the functions enclosing it): a wider digest only costs reuse.
"""

from __future__ import annotations

import hashlib
import re

from rankguard.summary.ir import FileSummary, FunctionInfo, Stmt, walk_statements

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _binds(stmt: Stmt) -> bool:
    return stmt.kind == "assign" or (stmt.kind in ("loop", "with") and bool(stmt.targets))


def _shapes_others(fn: FunctionInfo) -> bool:
    """Whether resolving another function may read `fn`'s body."""
    if not fn.qualname or fn.global_names:
        return True
    me = fn.params[0].name if fn.params and fn.cls else None
    if fn.is_generator:  # what it yields is what a `for` over it holds, anywhere
        return True
    for stmt in walk_statements(fn.body):
        # return inference: a call's result, or a function returned (a decorator's wrapper)
        if stmt.kind == "return" and not fn.returns and stmt.value[:1] in (("call",), ("ref",)):
            return True
        if me and stmt.kind == "assign" and any(len(t) > 1 and t[0] == me for t in stmt.targets):
            return True
        # `obj.cb = f`, `TABLE[k] = f`: the stored function is what others' calls reach.
        stores_ref = stmt.kind == "assign" and stmt.value[:1] == ("ref",)
        if stores_ref and any(len(t) > 1 for t in stmt.targets):
            return True
    return False


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


def handed_on(fn: FunctionInfo) -> frozenset[str]:
    """The names a method calls on the definitions its class overrides or inherits:
    `super().n(...)`, `super(C, self).n(...)`, `Base.n(self, ...)`. Whether a base's method
    runs on a subclass's objects depends on them (`model.hierarchy.running`), so they are part
    of the interface."""
    me = fn.params[0].name if fn.params and fn.cls else None
    names: set[str] = set()
    for stmt in walk_statements(fn.body):
        for call in stmt.calls:
            target = call.target
            if len(target) < 2:
                continue
            if target[0].startswith("super") or (me is not None and call.args[:1] == (me,)):
                names.add(target[-1])
    return frozenset(names)


def unbound_refs(fn: FunctionInfo) -> frozenset[str]:
    """The method names a body takes from a class as values (`{Kind.A: Base.handle}`,
    `register(Base.handle)`): called later with any object, such a method may run on a
    subclass that overrides it (`model.hierarchy.running`)."""
    return frozenset(
        segs[-1] for segs, _ in fn.value_refs if len(segs) >= 2 and segs[-2][:1].isupper()
    )


def _bindings(fn: FunctionInfo) -> list[tuple[object, ...]]:
    """Line-free: each binding or return statement with what it reads and binds."""
    return [
        (stmt.kind, stmt.targets, stmt.reads, stmt.value)
        for stmt in walk_statements(fn.body)
        if _binds(stmt) or stmt.kind == "return"
    ]


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
            (fn.qualname, fn.name, fn.cls, params, fn.returns, fn.decorators, fn.global_names)
        )
        # Class-like (capitalised) names the body mentions: naming a class anywhere keeps it
        # among the receivers of class-hierarchy dispatch in every module.
        parts.append(sorted(n for n in mentioned_in(fn) if n[:1].isupper()))
        if fn.cls:
            parts.append(sorted(handed_on(fn)))
        parts.append(sorted(unbound_refs(fn)))
        if not fn.qualname:
            parts.append(_module_body(fn))
        elif fn.qualname in bearing or fn.qualname in enclosing:
            parts.append(_bindings(fn))
    return hashlib.sha1(repr(parts).encode()).hexdigest()
