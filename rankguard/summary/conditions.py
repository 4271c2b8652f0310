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
    ("arith", operands)             `a % b`, `-x`, `a @ b`: only in values (`arith=True`)
    ("comp", element, names, iterable, tests)
                                    `(e for a, b in xs if t)`, one `for`: only in values
    ("other",)                      anything else (its truth is never known)

Assignments and returns keep their value the same way (`Stmt.tree`), so value facts (where a
tensor lives, which device an expression names) are read from structure too. Values keep
arithmetic (`arith`): which operands an operator combines decides where its result lives. Tests
never do (their facts are comparisons of references), and a value's own test (`a if c else b`)
is kept as a test. A `with` statement
keeps each item's shape the same way (`with_items`), so an analysis can tell
which item is a bare reference (a lock being acquired) without splitting text on commas.
"""

from __future__ import annotations

import ast
from typing import Any

from rankguard.summary.ir import CALL, OPAQUE, Segs

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


def condition(node: ast.AST | None, reference: Any, depth: int = 0, arith: bool = False) -> Cond:
    """The tree of one expression; `reference` is the extractor's dotted-chain reader. With
    `arith`, the tree of a value: operators keep their operands."""
    if node is None or depth > _MAX_DEPTH:
        return OTHER
    nxt = depth + 1

    def sub(child: ast.AST | None) -> Cond:
        return condition(child, reference, nxt, arith)

    if isinstance(node, ast.BoolOp):
        tag = "and" if isinstance(node.op, ast.And) else "or"
        return (tag, tuple(sub(v) for v in node.values))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return ("not", sub(node.operand))
    if arith and isinstance(node, ast.BinOp):
        return ("arith", (sub(node.left), sub(node.right)))
    if arith and isinstance(node, ast.UnaryOp):
        return ("arith", (sub(node.operand),))
    if isinstance(node, ast.Constant):
        if node.value is None or isinstance(node.value, (bool, int, float, str)):
            return ("const", node.value)
        return OTHER
    if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)):
        segs = _ref(node, reference)
        return ("ref", segs) if segs else OTHER
    if isinstance(node, ast.IfExp):
        return ("if", condition(node.test, reference, nxt), sub(node.body), sub(node.orelse))
    if isinstance(node, (ast.Tuple, ast.List)):
        return ("tuple", tuple(sub(e) for e in node.elts))
    if arith and isinstance(node, (ast.GeneratorExp, ast.ListComp)) and len(node.generators) == 1:
        loop = node.generators[0]
        names = _names(loop.target)
        if names is not None and not loop.is_async:
            tests = tuple(sub(t) for t in loop.ifs)
            return ("comp", sub(node.elt), names, sub(loop.iter), tests)
    if isinstance(node, ast.Await):
        return condition(node.value, reference, depth, arith)
    if isinstance(node, ast.Call):
        func = node.func
        method = isinstance(func, ast.Attribute) and computed(func.value, arith)
        # A method of an operator's result (`(a - b).clamp()`) is named `<expr>.clamp`: its
        # receiver's tree says the rest.
        segs = reference(func) if method and arith else _ref(func, reference)
        if segs is None:
            return OTHER
        args = tuple(sub(a) for a in node.args)
        kwargs = tuple((kw.arg or "**", sub(kw.value)) for kw in node.keywords)
        if method:
            return ("call", segs, args, kwargs, sub(func.value))
        return ("call", segs, args, kwargs)
    if isinstance(node, ast.Compare):
        ops = tuple(_CMP.get(type(op), "?") for op in node.ops)
        return ("cmp", ops, tuple(sub(v) for v in (node.left, *node.comparators)))
    return OTHER


def _names(target: ast.AST) -> tuple[str, ...] | None:
    """`x` or `a, _, b`: the names a comprehension binds per item, in order."""
    if isinstance(target, ast.Name):
        return (target.id,)
    if not isinstance(target, ast.Tuple):
        return None
    names = tuple(e.id for e in target.elts if isinstance(e, ast.Name))
    return names if len(names) == len(target.elts) else None


def computed(node: ast.AST, arith: bool = True) -> bool:
    """A method's receiver that is no plain reference: a call's result, an element, or (in a
    value) what an operator makes (`(a % n).tolist()`)."""
    if isinstance(node, (ast.Call, ast.Subscript)):
        return True
    return arith and isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare))


def receiver_tree(func: ast.AST, reference: Any) -> Cond:
    """The value tree of a computed method receiver (`f(x).sum()`, `(a % n).tolist()`), else
    () (a plain reference says itself)."""
    if not isinstance(func, ast.Attribute) or not computed(func.value):
        return ()
    segs = reference(func.value)
    if isinstance(func.value, ast.Subscript) and OPAQUE not in segs and CALL not in segs:
        return ()  # `x[i].item()`: the reference says it
    return condition(func.value, reference, arith=True)


def with_items(node: ast.With | ast.AsyncWith, reference: Any) -> tuple[Cond, ...]:
    """Each `with` item's expression as a condition tree (a bare lock is a `ref`)."""
    return tuple(condition(item.context_expr, reference) for item in node.items)
