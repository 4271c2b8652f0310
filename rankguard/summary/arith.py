"""Per-function value flow, extracted during the one shared parse: what the staleness audit reads.

The staleness audit composes the sign with which a driver term reaches each budget. It needs, per
function, the values that can carry a term: assignments, returns and expressions with calls, as
small expression trees, plus where a value is kept across rounds (a time-guarded attribute
refresh, a memo, a `functools` cache decorator). The main summary keeps only call sites and
references, which say *that* a value flows but not *with which sign*, hence this extra fact.

Expression trees are plain tuples, tag first, so the fact pickles small and fast:

    ("n", number)                     numeric constant
    ("s",)                            anything that carries no term (strings, bools, lambdas)
    ("r", segs)                       a dotted reference as written (`self._trapped`)
    ("a", expr, attr)                 an attribute of a computed value (`f().free`)
    ("c", target, args, kwargs, line, col, recv)
                                      a call; `target` as in the IR (so the model's resolution of
                                      the call at `line:col` applies), `recv` the receiver when it
                                      is computed (`f().get(...)`), else None
    ("b", op, left, right, line)      binary arithmetic (`op` is the operator's text)
    ("u", op, expr)                   unary minus / invert
    ("i", expr, index)                subscript; index is an int constant, a str key, or None
    ("t", elts)                       tuple / list literal (positions matter: `free, total = ...`)
    ("j", exprs)                      one of several values (`a if c else b`, `a or b`, dict values)
    ("k", elt, gens)                  comprehension; gens are (target pattern, iterable) pairs
    ("cmp", exprs, ops)               a comparison (`ops[i]` between exprs i and i+1): a bool, but
                                      an admission test is a consumer of its operands

Events are ("=", line, targets, expr, cache) | ("ret", line, expr) | ("ev", line, expr) |
("?", line, expr, admits) (the test of an `if`/`while`/`assert`; `admits` is -1 when a true test
leads to a rejection: `raise`, `continue`, `break`, `return None/False/0`); a target pattern is
("r", segs) | ("i", segs, key) (a subscript store into `segs`, `key` a constant str or None) |
("t", patterns). `cache` is None or (kind, detail, text): the stored value is kept across rounds.
"""

from __future__ import annotations

import ast
from typing import Any, NamedTuple

from rankguard.summary.arith_cache import cache_stores, text_of, walk_local
from rankguard.summary.extract import register_extractor
from rankguard.summary.ir import CALL, OPAQUE, SUBSCRIPT
from rankguard.summary.references import reference

FACT = "arith"
# Bump when the shape of the fact changes: the audit re-extracts facts with another version.
FACT_VERSION = 3

_OPS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitOr: "|",
    ast.BitAnd: "&",
    ast.BitXor: "^",
    ast.MatMult: "@",
}
_CMP = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
}
NONE = ("s",)

Expr = tuple[Any, ...]


class FnArith(NamedTuple):
    """One function's value-flow record."""

    params: tuple[str, ...]
    events: tuple[tuple[Any, ...], ...]
    returns_text: str = ""  # the returned expressions, for naming a cached composite
    global_names: tuple[str, ...] = ()


def _pure(segs: tuple[str, ...]) -> bool:
    return bool(segs) and not any(s in (CALL, SUBSCRIPT, OPAQUE, "<str>", "super()") for s in segs)


def _fold(node: ast.AST, consts: dict[str, float]) -> float | None:
    """A numeric constant expression's value (`1 << 30`, `GB * 2`), else None."""
    if isinstance(node, ast.Constant):
        value = node.value
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if isinstance(node, ast.Name):
        return consts.get(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _fold(node.operand, consts)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    if isinstance(node, ast.BinOp):
        left, right = _fold(node.left, consts), _fold(node.right, consts)
        if left is None or right is None:
            return None
        try:
            if isinstance(node.op, ast.Add):
                return left + right
            if isinstance(node.op, ast.Sub):
                return left - right
            if isinstance(node.op, ast.Mult):
                return left * right
            if isinstance(node.op, ast.Div):
                return left / right
            if isinstance(node.op, ast.FloorDiv):
                return left // right
            if isinstance(node.op, ast.Pow) and abs(right) < 64:
                return left**right
            if isinstance(node.op, ast.LShift) and isinstance(left, int) and 0 <= right < 64:
                return left << int(right)
        except (ZeroDivisionError, OverflowError, TypeError):
            return None
    return None


class _Converter:
    """Turns one function's expressions into tuples; walrus targets become extra events."""

    def __init__(self, consts: dict[str, float]) -> None:
        self.consts = consts
        self.extra: list[tuple[Any, ...]] = []

    def expr(self, node: ast.AST | None) -> Expr:
        if node is None:
            return NONE
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return ("n", value)
            return NONE
        if isinstance(node, (ast.Name, ast.Attribute)):
            segs = reference(node)
            if _pure(segs):
                return ("r", segs)
            if isinstance(node, ast.Attribute):
                return ("a", self.expr(node.value), node.attr)
            return NONE
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.BinOp):
            folded = _fold(node, self.consts)
            if folded is not None:
                return ("n", folded)
            op = _OPS.get(type(node.op), "?")
            return ("b", op, self.expr(node.left), self.expr(node.right), node.lineno)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.USub):
                folded = _fold(node, self.consts)
                return ("n", folded) if folded is not None else ("u", "-", self.expr(node.operand))
            if isinstance(node.op, ast.UAdd):
                return self.expr(node.operand)
            if isinstance(node.op, ast.Invert):
                return ("u", "~", self.expr(node.operand))
            return NONE  # `not x` is a bool
        if isinstance(node, ast.Subscript):
            index: int | str | None = None
            sl = node.slice
            if isinstance(sl, ast.Constant) and isinstance(sl.value, (int, str)):
                index = sl.value
            elif isinstance(sl, ast.UnaryOp) and isinstance(sl.op, ast.USub):
                folded = _fold(sl, self.consts)
                index = int(folded) if isinstance(folded, int) else None
            return ("i", self.expr(node.value), index)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return ("t", tuple(self.expr(e) for e in node.elts))
        if isinstance(node, ast.Dict):
            return ("j", tuple(self.expr(v) for v in node.values))
        if isinstance(node, ast.IfExp):
            return ("j", (self.expr(node.body), self.expr(node.orelse)))
        if isinstance(node, ast.BoolOp):
            return ("j", tuple(self.expr(v) for v in node.values))
        if isinstance(node, ast.Compare):
            exprs = (self.expr(node.left), *(self.expr(c) for c in node.comparators))
            return ("cmp", exprs, tuple(_CMP.get(type(op), "?") for op in node.ops))
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            elt = node.value if isinstance(node, ast.DictComp) else node.elt
            gens = tuple((target(g.target), self.expr(g.iter)) for g in node.generators)
            return ("k", self.expr(elt), gens)
        if isinstance(node, ast.Lambda):
            # A callable passed on (`get_budget=lambda: self._budget(dev)`) stands for what it
            # returns when called, evaluated where it is written (its closure).
            return self.expr(node.body)
        if isinstance(node, (ast.Await, ast.Starred)):
            return self.expr(node.value)
        if isinstance(node, ast.NamedExpr):
            value = self.expr(node.value)
            self.extra.append(("=", node.lineno, (target(node.target),), value, None))
            return value
        return NONE

    def call(self, node: ast.Call) -> Expr:
        func = node.func
        segs = reference(func)
        recv = None
        if isinstance(func, ast.Attribute) and not _pure(segs):
            recv = self.expr(func.value)
        args = tuple(self.expr(a) for a in node.args)
        kwargs = tuple((kw.arg or "**", self.expr(kw.value)) for kw in node.keywords)
        return ("c", segs, args, kwargs, node.lineno, node.col_offset, recv)


def target(node: ast.AST) -> tuple[Any, ...]:
    """An assignment target as a pattern: a reference, a subscript store, or a tuple."""
    if isinstance(node, (ast.Tuple, ast.List)):
        return ("t", tuple(target(e) for e in node.elts))
    if isinstance(node, ast.Starred):
        return ("*", target(node.value))
    if isinstance(node, ast.Subscript):
        base = node.value
        while isinstance(base, ast.Subscript):
            base = base.value
        segs = reference(base)
        key = node.slice.value if isinstance(node.slice, ast.Constant) else None
        key = None if isinstance(node.value, ast.Subscript) else key
        return ("i", segs, key if isinstance(key, str) else None) if _pure(segs) else NONE
    segs = reference(node)
    return ("r", segs) if _pure(segs) else NONE


def _events(
    body: list[ast.stmt],
    conv: _Converter,
    cache_lines: dict[int, tuple[str, str]],
    local: list[ast.AST] | None = None,
) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for node in local if local is not None else walk_local(body):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Assign):
            value = conv.expr(node.value)
            tag = _tag(cache_lines, line, node.value)
            out.append(("=", line, tuple(target(t) for t in node.targets), value, tag))
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            tag = _tag(cache_lines, line, node.value)
            out.append(("=", line, (target(node.target),), conv.expr(node.value), tag))
        elif isinstance(node, ast.AugAssign):
            pattern = target(node.target)
            current = ("r", pattern[1]) if pattern[0] == "r" else NONE
            if pattern[0] == "i":
                current = ("i", ("r", pattern[1]), pattern[2])
            op = _OPS.get(type(node.op), "?")
            value = ("b", op, current, conv.expr(node.value), line)
            out.append(("=", line, (pattern,), value, _tag(cache_lines, line, node.value)))
        elif isinstance(node, ast.Return):
            if node.value is not None:
                out.append(("ret", line, conv.expr(node.value)))
                test, admits = _unnegated(node.value)
                if isinstance(test, (ast.Compare, ast.BoolOp)):
                    # A predicate's verdict (`return est <= budget`): an admission test.
                    out.append(("?", line, conv.expr(test), admits))
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            out.append(("=", line, (target(node.target),), ("i", conv.expr(node.iter), None), None))
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                value = conv.expr(item.context_expr)
                if item.optional_vars is not None:
                    out.append(("=", line, (target(item.optional_vars),), value, None))
                elif value[0] == "c":
                    out.append(("ev", line, value))
        elif isinstance(node, ast.Expr):
            value = conv.expr(node.value)
            if value != NONE:
                out.append(("ev", line, value))
        elif isinstance(node, (ast.If, ast.While, ast.Assert)):
            test, admits = _unnegated(node.test)
            if isinstance(node, ast.If) and _rejects(node.body):
                admits = -admits
            out.append(("?", line, conv.expr(test), admits))
    out.extend(conv.extra)
    conv.extra = []
    return [e for e in out if e[0] not in ("ev", "?") or _carries(e[2])]


def _unnegated(test: ast.expr) -> tuple[ast.expr, int]:
    """The test under any `not`, and -1 when an odd number of them flips it."""
    admits = 1
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, admits = test.operand, -admits
    return test, admits


def _rejects(body: list[ast.stmt]) -> bool:
    """A block that turns work away: it ends in raise/continue/break or returns a falsy constant."""
    last = body[-1] if body else None
    if isinstance(last, (ast.Raise, ast.Continue, ast.Break)):
        return True
    if isinstance(last, ast.Return):
        value = last.value
        return value is None or (isinstance(value, ast.Constant) and not value.value)
    return False


def _class_attributes(cls: ast.ClassDef, conv: _Converter) -> list[tuple[Any, ...]]:
    """Class-level values as stores into `Cls.attr` (evaluated with the module's code): a
    dataclass `field(default_factory=...)` or a shared dict is what every instance reads."""
    out: list[tuple[Any, ...]] = []
    for node in cls.body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        value = conv.expr(node.value)
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if names and _carries(value):
            patterns = tuple(("r", (cls.name, name)) for name in names)
            out.append(("=", node.lineno, patterns, value, None))
    return out


def _carries(expr: Expr) -> bool:
    """Worth keeping: the expression holds a call (arguments flow) or arithmetic."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if not isinstance(node, tuple) or not node:
            continue
        if node[0] in ("c", "b", "cmp"):
            return True
        stack.extend(x for x in node[1:] if isinstance(x, tuple))
    return False


def _tag(
    cache_lines: dict[int, tuple[str, str]], line: int, value: ast.AST
) -> tuple[str, str, str] | None:
    found = cache_lines.get(line)
    return None if found is None else (found[0], found[1], text_of(value))


class _Collector:
    def __init__(self, tree: ast.Module) -> None:
        self.consts: dict[str, float] = {}
        self.module_names: set[str] = set()
        for node in tree.body:
            if isinstance(node, ast.Assign):
                folded = _fold(node.value, self.consts)
                for tgt in node.targets:
                    if isinstance(tgt, ast.Name):
                        self.module_names.add(tgt.id)
                        if folded is not None:
                            self.consts[tgt.id] = folded
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                self.module_names.add(node.target.id)
        self.functions: dict[str, FnArith] = {}

    def module(self, tree: ast.Module) -> None:
        conv = _Converter(self.consts)
        body = [n for n in tree.body if not isinstance(n, ast.ClassDef)]
        events = _events(body, conv, {})
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                events.extend(_class_attributes(node, conv))
        self.functions[""] = FnArith((), tuple(events))
        self.scope(tree.body, "")

    def scope(self, body: list[ast.stmt], prefix: str, local: list[ast.AST] | None = None) -> None:
        for node in local if local is not None else walk_local(body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.function(node, prefix)
            elif isinstance(node, ast.ClassDef):
                qual = f"{prefix}.{node.name}" if prefix else node.name
                self.scope(node.body, qual)

    def function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, prefix: str) -> None:
        qual = f"{prefix}.{fn.name}" if prefix else fn.name
        a = fn.args
        params = tuple(
            p.arg
            for p in [*a.posonlyargs, *a.args, *([a.vararg] if a.vararg else []), *a.kwonlyargs]
        )
        local = list(walk_local(fn.body))  # one walk serves every pass below
        globals_ = {name for n in local if isinstance(n, ast.Global) for name in n.names}
        conv = _Converter(self.consts)
        cache_lines = cache_stores(fn, globals_, self.module_names, local)
        events = _events(fn.body, conv, cache_lines, local)
        returns_text = ""
        if fn.decorator_list:  # a caching decorator (catalog) names the kept value by it
            returned = [n.value for n in local if isinstance(n, ast.Return)]
            returns_text = " | ".join(text_of(v) for v in returned if v is not None)
        self.functions[qual] = FnArith(params, tuple(events), returns_text, tuple(sorted(globals_)))
        self.scope(fn.body, f"{qual}.<locals>", local)


@register_extractor(FACT)
def extract_arith(tree: ast.Module, source: str) -> dict[str, Any]:
    """Value-flow records of every function of a module (module-level code under "")."""
    collector = _Collector(tree)
    collector.module(tree)
    return {
        "version": FACT_VERSION,
        "functions": collector.functions,
        "consts": collector.consts,
    }
