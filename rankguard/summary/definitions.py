"""Facts about definitions read straight from their syntax: parameters, whether a function is
a generator, what it yields and the names it binds, a class's tables of its own methods, its
literal field defaults and the names its body binds, the `__exit__` calls a `with` makes, a
module's `__all__`.
The statement builder (`extract`) asks these; they read no statements' calls."""

from __future__ import annotations

import ast
from typing import Any

from rankguard.summary.ir import NOT_LITERAL, OPAQUE, CallSite, Param, Segs
from rankguard.summary.reads import default_text, is_literal, is_value_ref
from rankguard.summary.references import annotation_ref, element_ref, reference


def _own_nodes(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    """The nodes of a function's own body (not of a nested function, lambda or class)."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(node.body)
    while todo:
        item = todo.pop()
        out.append(item)
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(item))
    return out


def is_generator(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A `yield` in the function's own body (not in a nested function, lambda or class)."""
    return any(isinstance(item, (ast.Yield, ast.YieldFrom)) for item in _own_nodes(node))


def yielded(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[Segs, ...]:
    """The plain references (names, attributes, lambdas) the function's own body yields, in
    source order: what iterating its generator gives."""
    found = [
        (item.lineno, item.col_offset, reference(item.value))
        for item in _own_nodes(node)
        if isinstance(item, ast.Yield) and item.value is not None and is_value_ref(item.value)
    ]
    return tuple(dict.fromkeys(ref for *_, ref in sorted(found) if OPAQUE not in ref))


# Nodes that bind the name they carry: def, class, `except E as name`, `case name`, `*name`.
_NAMING = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.ExceptHandler,
    ast.MatchAs,
    ast.MatchStar,
)


def bound_names(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    """The names the function's own body binds or unbinds (`FunctionInfo.bound`), sorted."""
    own = _own_nodes(node)
    # A comprehension's targets are its own scope's (a walrus in it binds the function's).
    inner = {
        id(name)
        for item in own
        if isinstance(item, ast.comprehension)
        for name in ast.walk(item.target)
    }
    found: set[str] = set()
    for item in own:
        if isinstance(item, ast.Name) and isinstance(item.ctx, (ast.Store, ast.Del)):
            if id(item) not in inner:
                found.add(item.id)
        elif isinstance(item, _NAMING):
            if item.name:  # `except E:`, `case _:` bind nothing
                found.add(item.name)
        elif isinstance(item, ast.MatchMapping) and item.rest:
            found.add(item.rest)
        elif isinstance(item, (ast.Import, ast.ImportFrom)):
            found.update((a.asname or a.name).split(".")[0] for a in item.names if a.name != "*")
    return tuple(sorted(found))


def body_facts(
    node: ast.FunctionDef | ast.AsyncFunctionDef,
) -> tuple[bool, tuple[Segs, ...], tuple[str, ...]]:
    """`FunctionInfo`'s facts about the function's own body, in its field order: whether it
    is a generator, what it yields, the names it binds."""
    return is_generator(node), yielded(node), bound_names(node)


def params_of(a: ast.arguments) -> tuple[Param, ...]:
    params: list[Param] = []
    positional = [*a.posonlyargs, *a.args]
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)

    def param(arg: ast.arg, default: ast.expr | None) -> Param:
        ann = arg.annotation
        literal = (default.value,) if is_literal(default) else ()  # type: ignore[union-attr]
        return Param(arg.arg, annotation_ref(ann), default_text(default), element_ref(ann), literal)

    params += [param(arg, default) for arg, default in zip(positional, defaults, strict=True)]
    if a.vararg:
        params.append(Param("*" + a.vararg.arg))
    params += [param(arg, dflt) for arg, dflt in zip(a.kwonlyargs, a.kw_defaults, strict=True)]
    if a.kwarg:
        params.append(Param("**" + a.kwarg.arg))
    return tuple(params)


def class_attributes(node: ast.ClassDef) -> tuple[tuple[str, Segs], ...]:
    """Class-level `name: T` (its annotation) and `name = T(...)` (what it calls)."""
    out: list[tuple[str, Segs]] = []
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            ann = annotation_ref(stmt.annotation)
            if ann:
                out.append((stmt.target.id, ann))
        elif isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    out.append((target.id, ("()", *reference(stmt.value.func))))
    return tuple(out)


def literal_defaults(node: ast.ClassDef) -> tuple[tuple[str, Any], ...]:
    """Every class-level annotated name with its literal default (None, a bool, number or
    string): what a record's generated constructor stores where it is not given the field.
    A field whose default is no literal (`field(default=x)`, `[]`) or that has none is kept
    with `NOT_LITERAL`, so a subclass's such field hides its base's literal."""
    out = []
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            literal = is_literal(stmt.value)
            out.append((stmt.target.id, stmt.value.value if literal else NOT_LITERAL))  # type: ignore[union-attr]
    return tuple(out)


def metaclass_of(node: ast.ClassDef) -> Segs:
    """`class C(metaclass=M)`: M, whose `__call__` and `__instancecheck__` may make
    `C(...)` and `isinstance(x, C)` mean anything; () when there is none."""
    for keyword in node.keywords:
        if keyword.arg == "metaclass":
            return reference(keyword.value) or (OPAQUE,)
    return ()


def method_tables(node: ast.ClassDef) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Class attributes that are containers of the class's own methods (a dispatch table)."""
    methods = {s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    tables = []
    for stmt in node.body:
        if not isinstance(stmt, ast.Assign) or not isinstance(
            stmt.value, (ast.Dict, ast.List, ast.Tuple, ast.Set)
        ):
            continue
        held = sorted(
            {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name) and n.id in methods}
        )
        if held:
            tables += [(t.id, tuple(held)) for t in stmt.targets if isinstance(t, ast.Name)]
    return tuple(tables)


def all_names(tree: ast.Module) -> tuple[str, ...] | None:
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
            and isinstance(node.value, (ast.List, ast.Tuple))
        ):
            return tuple(
                e.value
                for e in node.value.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str)
            )
    return None


def exits_of(node: ast.With | ast.AsyncWith) -> tuple[CallSite, ...]:
    """`with Cm() as x:` calls `Cm().__exit__` when its body is left (after the body, so a
    collective or a wait in it runs after the body's); `async with`, `__aexit__`."""
    name = "__aexit__" if isinstance(node, ast.AsyncWith) else "__exit__"
    end = node.end_lineno or node.lineno
    out = []
    for item in reversed(node.items):
        expr = item.context_expr
        ref = reference(expr) if isinstance(expr, ast.Call) else (OPAQUE,)
        if OPAQUE not in ref and "<str>" not in ref:
            out.append(CallSite((*ref, name), end, expr.col_offset))
    return tuple(out)


def class_body_names(node: ast.ClassDef) -> set[str]:
    """Names a class body binds: its methods, nested classes and class attributes."""
    names: set[str] = set()
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names
