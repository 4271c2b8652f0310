"""Conditions as small expression trees, so analyses decide on structure and never on text.

A test (`if`, `while`, `assert`, a conditional expression's test) is kept as a plain tuple, tag
first, small and picklable:

    ("and", (c, ...))  ("or", (c, ...))  ("not", c)
    ("ref", segs)                   a dotted reference as written (`self.enable_overlap`)
    ("call", segs, args, kwargs[, receiver])
                                    a call; args are trees, kwargs (name, tree) pairs; a method
                                    of a computed value (`f(x).float()`) adds its receiver's tree
    ("const", value)                a literal: bool, None, int, float or str
    ("cmp", ops, operands)          `a == b`, `x is not None`: ops are the operator names
    ("if", test, body, orelse)      a conditional expression
    ("tuple", elts)                 a tuple or list display (positions kept)
    ("other",)                      anything else (its truth is never known)

Assignments and returns keep their value the same way (`Stmt.tree`), so value facts (where a
tensor lives, which device an expression names) are read from structure too. A `with` statement
keeps each item's shape the same way (`with_items`), so an analysis can tell
which item is a bare reference (a lock being acquired) without splitting text on commas.
"""

from __future__ import annotations

import ast
from typing import Any

from rankguard.summary.ir import OPAQUE, Segs

Cond = tuple[Any, ...]
OTHER: Cond = ("other",)
_CMP = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.In: "in",
    ast.NotIn: "not in",
}
_MAX_DEPTH = 12


def _ref(node: ast.AST, reference: Any) -> Segs | None:
    segs: Segs = reference(node)
    return None if OPAQUE in segs or "<str>" in segs else segs


def condition(node: ast.AST | None, reference: Any, depth: int = 0) -> Cond:
    """The tree of one expression; `reference` is the extractor's dotted-chain reader."""
    if node is None or depth > _MAX_DEPTH:
        return OTHER
    nxt = depth + 1
    if isinstance(node, ast.BoolOp):
        tag = "and" if isinstance(node.op, ast.And) else "or"
        return (tag, tuple(condition(v, reference, nxt) for v in node.values))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return ("not", condition(node.operand, reference, nxt))
    if isinstance(node, ast.Constant):
        if node.value is None or isinstance(node.value, (bool, int, float, str)):
            return ("const", node.value)
        return OTHER
    if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)):
        segs = _ref(node, reference)
        return ("ref", segs) if segs else OTHER
    if isinstance(node, ast.IfExp):
        parts = (node.test, node.body, node.orelse)
        return ("if", *(condition(p, reference, nxt) for p in parts))
    if isinstance(node, (ast.Tuple, ast.List)):
        return ("tuple", tuple(condition(e, reference, nxt) for e in node.elts))
    if isinstance(node, ast.Await):
        return condition(node.value, reference, depth)
    if isinstance(node, ast.Call):
        segs = _ref(node.func, reference)
        if segs is None:
            return OTHER
        args = tuple(condition(a, reference, nxt) for a in node.args)
        kwargs = tuple(
            (kw.arg or "**", condition(kw.value, reference, nxt)) for kw in node.keywords
        )
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, (ast.Call, ast.Subscript)):
            return ("call", segs, args, kwargs, condition(func.value, reference, nxt))
        return ("call", segs, args, kwargs)
    if isinstance(node, ast.Compare):
        ops = tuple(_CMP.get(type(op), "?") for op in node.ops)
        operands = tuple(condition(v, reference, nxt) for v in (node.left, *node.comparators))
        return ("cmp", ops, operands)
    return OTHER


def with_items(node: ast.With | ast.AsyncWith, reference: Any) -> tuple[Cond, ...]:
    """Each `with` item's expression as a condition tree (a bare lock is a `ref`)."""
    return tuple(condition(item.context_expr, reference) for item in node.items)
