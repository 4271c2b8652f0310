"""Names, attributes and annotations as references: the dotted segments every fact is keyed by.

`self.pool.free()` is `("self", "pool", "free", CALL)`; an annotation `Optional[Pool]` is the
reference `("Pool",)`. Resolution in the model works on these segments, never on source text.
"""

from __future__ import annotations

import ast

from rankguard.summary.ir import CALL, OPAQUE, SUBSCRIPT, Segs

_TEXT_LIMIT = 80
# The attribute the summary builder sets on a lambda node it has made a function of: the name
# (`<lambda1>`) under which the lambda is referenced in its scope.
LAMBDA_NAME = "rankguard_lambda"


def reference(node: ast.AST) -> Segs:
    """The dotted chain an expression spells, as far as it can be followed."""
    out: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            out.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Name):
            out.append(node.id)
            break
        elif isinstance(node, ast.Call):
            if is_super(node):
                out.append("super()")
                break
            out.append(CALL)
            node = node.func
        elif isinstance(node, ast.Subscript):
            out.append(SUBSCRIPT)
            node = node.value
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append("<str>")
            break
        elif isinstance(node, ast.Lambda) and hasattr(node, LAMBDA_NAME):
            out.append(getattr(node, LAMBDA_NAME))
            break
        else:
            out.append(OPAQUE)
            break
    return tuple(reversed(out))


def short_text(node: ast.AST | None) -> str:
    """Cheap readable text for small expressions; long ones are cut."""
    if node is None:
        return ""
    if isinstance(node, ast.Constant):
        text = repr(node.value)
    elif isinstance(node, (ast.Name, ast.Attribute)):
        text = ".".join(reference(node))
    else:
        try:
            text = ast.unparse(node)
        except (ValueError, RecursionError):  # pragma: no cover - exotic trees
            text = "…"
    return text if len(text) <= _TEXT_LIMIT else text[: _TEXT_LIMIT - 1] + "…"


def annotation_ref(node: ast.AST | None) -> Segs | None:
    """The class an annotation names: `T`, `"T"`, `Optional[T]`, `T | None`, `pkg.T`."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(node, ast.Subscript):
        head = reference(node.value)
        if head[-1] in ("Optional", "Final", "ClassVar", "Annotated", "Type", "type"):
            inner = node.slice
            if isinstance(inner, ast.Tuple) and inner.elts:
                inner = inner.elts[0]
            return annotation_ref(inner)
        if head[-1] == "Union" and isinstance(node.slice, ast.Tuple):
            refs = [annotation_ref(e) for e in node.slice.elts]
            real = [r for r in refs if r and r != ("None",)]
            return real[0] if len(real) == 1 else None
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        refs = [annotation_ref(node.left), annotation_ref(node.right)]
        real = [r for r in refs if r and r != ("None",)]
        return real[0] if len(real) == 1 else None
    if isinstance(node, (ast.Name, ast.Attribute)):
        ref = reference(node)
        return None if OPAQUE in ref else ref
    return None


_CONTAINERS = frozenset(
    (
        "List",
        "list",
        "Sequence",
        "MutableSequence",
        "Iterable",
        "Iterator",
        "Deque",
        "deque",
        "Set",
        "set",
        "FrozenSet",
        "frozenset",
        "Collection",
    )
)


def element_ref(node: ast.AST | None) -> Segs | None:
    """The element class of a one-type container annotation: `List[T]`, `list[T]`, `Deque[T]`.

    Kept apart from `annotation_ref` so `self.works: List[Work]` never types `self.works` as a
    `Work`; only iterating it (`for w in self.works`) or subscripting it yields one.
    """
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return None
    if not isinstance(node, ast.Subscript):
        return None
    head = reference(node.value)
    if not head or head[-1] not in _CONTAINERS or isinstance(node.slice, ast.Tuple):
        return None
    return annotation_ref(node.slice)


def is_super(node: ast.Call) -> bool:
    return isinstance(node.func, ast.Name) and node.func.id == "super" and not node.args
