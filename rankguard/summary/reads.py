"""What an expression reads and calls, in evaluation order, and the shape of a stored value.

The statement builder (`extract`) asks these for every expression it meets; they never look at
statements, so one expression is scanned once whatever statement holds it.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from typing import Any

from rankguard.summary.conditions import condition, receiver_tree
from rankguard.summary.ir import CALL, OPAQUE, SUBSCRIPT, CallSite, Operand, Segs
from rankguard.summary.references import LAMBDA_NAME, is_super, reference, short_text

Comprehension = ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
# What the builder does with a lambda it meets: make it a function and name the node.
OnLambda = Callable[[ast.Lambda], None]


def is_value_ref(node: ast.AST) -> bool:
    """A plain reference to a value: a name, an attribute chain, or a lambda made a function."""
    return isinstance(node, (ast.Name, ast.Attribute)) or (
        isinstance(node, ast.Lambda) and hasattr(node, LAMBDA_NAME)
    )


def is_literal(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and (
        node.value is None or isinstance(node.value, (bool, int, float, str))
    )


# `f"{x!s}"`, `f"{x!r}"`, `f"{x!a}"`: the conversion a formatted value names.
_CONVERSIONS = {ord("s"): "str", ord("r"): "repr", ord("a"): "ascii"}


class Reads(ast.NodeVisitor):
    """Collects, in evaluation order, the calls and maximal references of an expression."""

    def __init__(self, on_lambda: OnLambda | None = None) -> None:
        self.on_lambda = on_lambda
        self.calls: list[CallSite] = []
        self.reads: list[Segs] = []
        self.value_refs: list[tuple[Segs, int]] = []
        self.existence: list[Segs] = []
        # Per call, parallel to `calls`: (first read, end of reads, first nested call) it owns.
        self._spans: list[tuple[int, int, int]] = []
        self._deferred = 0
        self._bound: list[tuple[str, Any]] = []  # comprehension variables in scope
        self._under: list[tuple[Any, bool]] = []  # sides of `x if c else y`, `a and b` taken

    def visit_Call(self, node: ast.Call) -> None:
        # Evaluation order: the callee's base, the arguments, then the call itself.
        first_read, first_call = len(self.reads), len(self.calls)
        func = node.func
        while isinstance(func, (ast.Attribute, ast.Subscript)):
            if isinstance(func, ast.Subscript):
                self.visit(func.slice)
            func = func.value
        # `super()` is a lookup, not a call worth an edge.
        if not isinstance(func, ast.Name) and not (isinstance(func, ast.Call) and is_super(func)):
            self.visit(func)
        target = reference(node.func)
        if target and target[0] not in (OPAQUE,) and len(target) > 0:
            self.reads.append(target[:-1] if len(target) > 1 else target)
        args: list[str] = []
        literals: list[tuple[str, Any]] = []
        operands: list[Operand] = []
        for index, arg in enumerate(node.args):
            operands.append(self._operand("*" if isinstance(arg, ast.Starred) else None, arg))
            args.append(short_text(arg))
            if is_literal(arg):
                literals.append((str(index), arg.value))  # type: ignore[attr-defined]
        kwargs: list[tuple[str, str]] = []
        for kw in node.keywords:
            operands.append(self._operand(kw.arg or "**", kw.value))
            kwargs.append((kw.arg or "**", short_text(kw.value)))
            if kw.arg and is_literal(kw.value):
                literals.append((kw.arg, kw.value.value))  # type: ignore[attr-defined]
        self.calls.append(
            CallSite(
                target,
                node.lineno,
                node.col_offset,
                tuple(args),
                tuple(kwargs),
                self._deferred > 0,
                tuple(operands),
                tuple(literals),
                receiver_tree(node.func, reference),
                tuple(self._bound),
                tuple(self._under),
            )
        )
        self._spans.append((first_read, len(self.reads), first_call))

    def visit_FormattedValue(self, node: ast.FormattedValue) -> None:
        """`f"{t:.4f}"` calls `format(t, spec)` (`str(t)` with `!s`, `repr(t)` with `!r`):
        made a call here, so a value that must be copied to the host to be printed (a device
        tensor's) is read where the string is built."""
        value = node.value
        first_read, first_call = len(self.reads), len(self.calls)
        operand = self._operand(None, value)
        name = _CONVERSIONS.get(node.conversion, "format")
        self.calls.append(
            CallSite(
                (name,),
                value.lineno,
                value.col_offset,
                (short_text(value),),
                deferred=self._deferred > 0,
                operands=(operand,),
                bound=tuple(self._bound),
                under=tuple(self._under),
            )
        )
        self._spans.append((first_read, len(self.reads), first_call))
        if node.format_spec is not None:
            self.visit(node.format_spec)

    def _operand(self, keyword: str | None, node: ast.expr) -> Operand:
        """Visit one argument and say what it read and called (the slices it appended)."""
        reads, calls = len(self.reads), len(self.calls)
        self._value(node)
        # Only what the argument itself reads and calls: a nested call owns its own arguments.
        inner = range(calls, len(self.calls))
        direct = [i for i in inner if not any(self._spans[j][2] <= i < j for j in inner)]
        owned = [range(self._spans[i][0], self._spans[i][1]) for i in direct]
        ref = reference(node) if is_value_ref(node) else None
        const = repr(node.value) if isinstance(node, ast.Constant) else None
        return Operand(
            keyword,
            tuple(
                read
                for index, read in enumerate(self.reads[reads:], reads)
                if not any(index in span for span in owned)
            ),
            tuple(self.calls[i].target for i in direct),
            ref if ref and OPAQUE not in ref else None,
            const,
        )

    def visit_Compare(self, node: ast.Compare) -> None:
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            pair = (node.left, node.comparators[0])
            for value, other in (pair, pair[::-1]):
                none = isinstance(other, ast.Constant) and other.value is None
                if none and isinstance(value, (ast.Name, ast.Attribute)):
                    ref = reference(value)
                    if OPAQUE not in ref:
                        self.existence.append(ref)
        self.generic_visit(node)

    def _value(self, node: ast.AST) -> None:
        """An argument or element: a bare reference (or a lambda) here may be a callback."""
        if isinstance(node, ast.Starred):
            self._value(node.value)
            return
        if isinstance(node, ast.Lambda):
            self.visit(node)  # first, so the lambda is named before it is referenced
        if is_value_ref(node):
            ref = reference(node)
            if OPAQUE not in ref:
                self.value_refs.append((ref, node.lineno))
        if not isinstance(node, ast.Lambda):
            self.visit(node)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        """`a if c else b`: the test, then one side, each under the test's value."""
        self.visit(node.test)
        test = condition(node.test, reference)
        for side, part in ((True, node.body), (False, node.orelse)):
            self._under.append((test, side))
            self.visit(part)
            self._under.pop()

    def visit_Assert(self, node: ast.Assert) -> None:
        """`assert c, msg`: the message is built only where `c` fails."""
        self.visit(node.test)
        if node.msg is not None:
            self._under.append((condition(node.test, reference), False))
            self.visit(node.msg)
            self._under.pop()

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        """`a and b`: `b` runs only where `a` is truthy (`or`: falsy)."""
        side = isinstance(node.op, ast.And)
        depth = len(self._under)
        for value in node.values:
            self.visit(value)
            self._under.append((condition(value, reference), side))
        del self._under[depth:]

    def visit_Lambda(self, node: ast.Lambda) -> None:
        # The lambda is a function of its own (the builder makes it one); its calls are also
        # kept here, deferred: they run later, wherever the lambda is called.
        if self.on_lambda is not None and not hasattr(node, LAMBDA_NAME):
            self.on_lambda(node)
        self._deferred += 1
        self.visit(node.body)
        self._deferred -= 1

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> None:
        """In evaluation order: each generator's iterable, its target and filters, then the
        element; calls inside see each variable with what it iterates (`CallSite.bound`)."""
        depth = len(self._bound)
        for gen in node.generators:
            self.visit(gen.iter)
            self._bound.extend(_comprehension_bound(gen))
            self.visit(gen.target)
            for test in gen.ifs:
                self.visit(test)
        parts = (node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,)
        for part in parts:
            self.visit(part)
        del self._bound[depth:]

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension

    def visit_Name(self, node: ast.Name) -> None:
        self.reads.append((node.id,))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        ref = reference(node)
        if OPAQUE in ref or "<str>" in ref:
            self.generic_visit(node)
        else:
            if CALL in ref or SUBSCRIPT in ref:
                self.generic_visit(node)
            self.reads.append(ref)

    def _elements(self, elts: Iterable[ast.AST | None]) -> None:
        for elt in elts:
            if elt is not None:
                self._value(elt)

    def visit_Tuple(self, node: ast.Tuple) -> None:
        self._elements(node.elts)

    def visit_List(self, node: ast.List) -> None:
        self._elements(node.elts)

    def visit_Set(self, node: ast.Set) -> None:
        self._elements(node.elts)

    def visit_Dict(self, node: ast.Dict) -> None:
        for key, value in zip(node.keys, node.values, strict=False):
            if key is not None:
                self.visit(key)
            self._value(value)


def truths(node: ast.AST | None) -> tuple[Segs, ...]:
    """References in truth position: `q`, `not q`, `a and q`, `a or not q`."""
    if isinstance(node, ast.BoolOp):
        return tuple(ref for value in node.values for ref in truths(value))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return truths(node.operand)
    if isinstance(node, (ast.Name, ast.Attribute)):
        ref = reference(node)
        return () if OPAQUE in ref else (ref,)
    return ()


def scan(node: ast.AST | None, on_lambda: OnLambda | None = None) -> Reads:
    reads = Reads(on_lambda)
    if node is not None:
        reads.visit(node)
    return reads


def default_text(node: ast.AST | None) -> str | None:
    return None if node is None else short_text(node)


def value_shape(node: ast.AST | None) -> tuple[Any, ...]:
    if isinstance(node, ast.Call):
        return ("call", reference(node.func))
    if isinstance(node, ast.Await):
        return value_shape(node.value)
    if isinstance(node, ast.IfExp):  # `A() if c else B()`: either side's value
        return ("either", (value_shape(node.body), value_shape(node.orelse)))
    if isinstance(node, ast.BoolOp):  # `x or Default()`: any operand may be the value
        return ("either", tuple(value_shape(v) for v in node.values))
    if node is not None and is_value_ref(node):
        return ("ref", reference(node))
    if isinstance(node, ast.Constant):
        return ("const", short_text(node))
    kind = _CONTAINERS.get(type(node))
    if kind is not None:
        return ("literal", literal_elements(node), kind)
    return ("other",)


# Expressions that make a builtin value, by the builtin's type name.
_CONTAINERS: dict[type, str] = {
    ast.Dict: "dict",
    ast.DictComp: "dict",
    ast.List: "list",
    ast.ListComp: "list",
    ast.Set: "set",
    ast.SetComp: "set",
    ast.Tuple: "tuple",
    ast.JoinedStr: "str",
}


def literal_elements(node: ast.AST | None) -> tuple[Segs, ...]:
    """The plain references a dict (its values), list, tuple or set literal holds."""
    if isinstance(node, ast.Dict):
        items: list[ast.expr | None] = list(node.values)
    elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = list(node.elts)
    else:
        return ()
    refs = [reference(i) for i in items if isinstance(i, (ast.Name, ast.Attribute))]
    return tuple(ref for ref in refs if OPAQUE not in ref)


def target_refs(node: ast.AST) -> list[Segs]:
    if isinstance(node, (ast.Tuple, ast.List)):
        return [ref for elt in node.elts for ref in target_refs(elt)]
    if isinstance(node, ast.Starred):
        return target_refs(node.value)
    ref = reference(node)
    return [] if OPAQUE in ref else [ref]


def _comprehension_bound(gen: ast.comprehension) -> list[tuple[str, Any]]:
    """What each variable of one `for` in a comprehension is bound to: `x` to what it iterates;
    each name of a flat `i, x` to ("unpack", position, count, iterable) (`model.placement`
    pairs it where it can); a name in a nested target to nothing known (("other",)), so no
    outer fact of that name is read inside."""
    iterable = condition(gen.iter, reference, arith=True)
    target = gen.target
    if isinstance(target, ast.Name):
        return [(target.id, iterable)]
    elts = target.elts if isinstance(target, ast.Tuple) else []
    names = [e.id for e in elts if isinstance(e, ast.Name)]
    if elts and len(names) == len(elts):
        return [(name, ("unpack", i, len(names), iterable)) for i, name in enumerate(names)]
    return [(n.id, ("other",)) for n in ast.walk(target) if isinstance(n, ast.Name)]
