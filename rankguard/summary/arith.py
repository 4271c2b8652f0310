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
    ("cmp", exprs)                    a comparison: a bool, but its operands may hold consumers

Events are ("=", line, targets, expr, cache) | ("ret", line, expr) | ("ev", line, expr); a target
pattern is ("r", segs) | ("i", segs) (a subscript store into `segs`) | ("t", patterns).
`cache` is None or (kind, detail, text): the stored value is kept across rounds.
"""

from __future__ import annotations

import ast
from typing import Any, NamedTuple

from rankguard.summary.extract import reference, register_extractor
from rankguard.summary.ir import CALL, OPAQUE, SUBSCRIPT

FACT = "arith"
# Bump when the shape of the fact changes: the audit re-extracts facts with another version.
FACT_VERSION = 1

_TEXT_LIMIT = 80
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
TIME_CALLS = frozenset(
    {"time", "monotonic", "perf_counter", "monotonic_ns", "time_ns", "perf_counter_ns"}
)
CACHE_DECORATORS = frozenset({"cache", "lru_cache", "cached_property"})
NONE = ("s",)

Expr = tuple[Any, ...]


class FnArith(NamedTuple):
    """One function's value-flow record; `cache` is its caching decorator's name, if any."""

    params: tuple[str, ...]
    events: tuple[tuple[Any, ...], ...]
    cache: str | None = None
    returns_text: str = ""  # the returned expressions, for naming a cached composite
    global_names: tuple[str, ...] = ()


def _text(node: ast.AST) -> str:
    try:
        text = ast.unparse(node)
    except (ValueError, RecursionError):  # pragma: no cover - exotic trees
        return "…"
    text = " ".join(text.split())
    return text if len(text) <= _TEXT_LIMIT else text[: _TEXT_LIMIT - 1] + "…"


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
            return ("cmp", (self.expr(node.left), *(self.expr(c) for c in node.comparators)))
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            elt = node.value if isinstance(node, ast.DictComp) else node.elt
            gens = tuple((target(g.target), self.expr(g.iter)) for g in node.generators)
            return ("k", self.expr(elt), gens)
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
        return ("i", segs) if _pure(segs) else NONE
    segs = reference(node)
    return ("r", segs) if _pure(segs) else NONE


def _walk_local(nodes: list[ast.stmt]):
    """Every node of a body, not descending into nested definitions."""
    stack: list[ast.AST] = list(reversed(nodes))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _stored(nodes: list[ast.stmt]) -> list[tuple[int, tuple[str, ...]]]:
    """(line, root reference) of every store in a body: `self.x = ..`, `G[k] = ..`, `x += ..`."""
    out: list[tuple[int, tuple[str, ...]]] = []
    for node in _walk_local(nodes):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for tgt in targets:
            for leaf in ast.walk(tgt):
                if isinstance(leaf, (ast.Attribute, ast.Name)) and isinstance(
                    getattr(leaf, "ctx", None), ast.Store
                ):
                    out.append((node.lineno, reference(leaf)))
                elif isinstance(leaf, ast.Subscript) and isinstance(leaf.ctx, ast.Store):
                    base = leaf.value
                    while isinstance(base, ast.Subscript):
                        base = base.value
                    out.append((node.lineno, reference(base)))
    return out


def _is_time_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and reference(node.func)[-1] in TIME_CALLS


def _cache_stores(
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    globals_: set[str],
    module_names: set[str],
    local: list[ast.AST],
) -> dict[int, tuple[str, str]]:
    """Lines whose stores keep a value across rounds, with (kind, detail).

    Forms: a time-guarded refresh (`if now - self._at >= X: self._v = f(); self._at = now`,
    also `if now - self._at < X: return self._v` before the refresh), an attribute memo
    (`if self._v is None: self._v = f()`), a module-level memo (`global G; if G is None: G = ..`
    or `if k not in G: G[k] = ..`).
    """
    me = fn.args.args[0].arg if fn.args.args else None
    time_names: set[str] = set()
    for node in local:
        if isinstance(node, ast.Assign) and _is_time_call(node.value):
            time_names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    all_stores: list[tuple[int, tuple[str, ...]]] | None = None  # computed when needed
    found: dict[int, tuple[str, str]] = {}
    for node in local:
        if not isinstance(node, ast.If):
            continue
        test = node.test
        test_nodes = list(ast.walk(test))
        timeish = any(
            _is_time_call(n) or (isinstance(n, ast.Name) and n.id in time_names) for n in test_nodes
        )
        time_compare = timeish and any(isinstance(n, ast.Compare) for n in test_nodes)
        names = {n.id for n in test_nodes if isinstance(n, ast.Name)}
        memo_globals = names & (globals_ | module_names)
        memo_self = _memo_test(test, me)
        if not (time_compare or memo_self or (memo_globals and _memo_test(test, None))):
            continue  # no caching form starts here: skip walking the body's stores
        attrs = {
            n.attr
            for n in test_nodes
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == me
        }
        stores = _stored(node.body)
        detail = _text(test)
        stored_attrs = {s[1] for _, s in stores if me and len(s) == 2 and s[0] == me}
        stamps = attrs & stored_attrs
        if time_compare:
            if stamps:
                for line, segs in stores:
                    if len(segs) == 2 and segs[0] == me and segs[1] not in stamps:
                        found[line] = ("time-cadence", detail)
                continue
            # Early return of the kept value while fresh; the refresh follows the `if`.
            if all_stores is None:
                all_stores = _stored(fn.body)
            fn_stamps = attrs & {s[1] for _, s in all_stores if len(s) == 2 and s[0] == me}
            returned = {
                n.attr
                for r in node.body
                if isinstance(r, ast.Return) and r.value is not None
                for n in ast.walk(r.value)
                if isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name)
                and n.value.id == me
            }
            if fn_stamps and returned:
                for line, segs in all_stores:
                    if len(segs) == 2 and segs[0] == me and segs[1] in returned - fn_stamps:
                        found[line] = ("time-cadence", detail)
                continue
        if memo_self:
            for line, segs in stores:
                if len(segs) == 2 and segs[0] == me and segs[1] in attrs:
                    found.setdefault(line, ("memo", detail))
        if memo_globals and _memo_test(test, None):
            for line, segs in stores:
                if (
                    len(segs) == 1
                    and segs[0] in memo_globals
                    and (
                        segs[0] in globals_
                        or any(ln == line and s == segs for ln, s in _subscript_stores(node.body))
                    )
                ):
                    found.setdefault(line, ("memo", detail))
    return found


def _subscript_stores(nodes: list[ast.stmt]) -> list[tuple[int, tuple[str, ...]]]:
    out = []
    for node in _walk_local(nodes):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            out.append((node.lineno, reference(node.value)))
    return out


def _memo_test(test: ast.AST, me: str | None) -> bool:
    """`x is None`, `not x`, `k not in x`, `not hasattr(self, "x")` (possibly within `or`)."""
    parts = test.values if isinstance(test, ast.BoolOp) else [test]
    for part in parts:
        if isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.Not):
            operand = part.operand
            if isinstance(operand, (ast.Name, ast.Attribute)):
                return True
            if isinstance(operand, ast.Call) and reference(operand.func) == ("hasattr",):
                return True
        if isinstance(part, ast.Compare) and len(part.ops) == 1:
            op, right = part.ops[0], part.comparators[0]
            if isinstance(op, ast.Is) and isinstance(right, ast.Constant) and right.value is None:
                return True
            if isinstance(op, ast.NotIn):
                return True
    return False


def _events(
    body: list[ast.stmt],
    conv: _Converter,
    cache_lines: dict[int, tuple[str, str]],
    local: list[ast.AST] | None = None,
) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for node in local if local is not None else _walk_local(body):
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
                current = ("i", ("r", pattern[1]), None)
            op = _OPS.get(type(node.op), "?")
            value = ("b", op, current, conv.expr(node.value), line)
            out.append(("=", line, (pattern,), value, _tag(cache_lines, line, node.value)))
        elif isinstance(node, ast.Return):
            if node.value is not None:
                out.append(("ret", line, conv.expr(node.value)))
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
            out.append(("ev", line, conv.expr(node.test)))
    out.extend(conv.extra)
    conv.extra = []
    return [e for e in out if e[0] != "ev" or _carries(e[2])]


def _carries(expr: Expr) -> bool:
    """Worth keeping: the expression holds a call (arguments flow) or arithmetic."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if not isinstance(node, tuple) or not node:
            continue
        if node[0] in ("c", "b"):
            return True
        stack.extend(x for x in node[1:] if isinstance(x, tuple))
    return False


def _tag(
    cache_lines: dict[int, tuple[str, str]], line: int, value: ast.AST
) -> tuple[str, str, str] | None:
    found = cache_lines.get(line)
    return None if found is None else (found[0], found[1], _text(value))


def _decorator_cache(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    for dec in fn.decorator_list:
        segs = reference(dec.func if isinstance(dec, ast.Call) else dec)
        if segs and segs[-1] in CACHE_DECORATORS:
            return segs[-1]
    return None


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
        self.functions[""] = FnArith((), tuple(events))
        self.scope(tree.body, "")

    def scope(self, body: list[ast.stmt], prefix: str, local: list[ast.AST] | None = None) -> None:
        for node in local if local is not None else _walk_local(body):
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
        local = list(_walk_local(fn.body))  # one walk serves every pass below
        globals_ = {name for n in local if isinstance(n, ast.Global) for name in n.names}
        conv = _Converter(self.consts)
        cache_lines = _cache_stores(fn, globals_, self.module_names, local)
        events = _events(fn.body, conv, cache_lines, local)
        cache = _decorator_cache(fn)
        returns_text = ""
        if cache:
            returned = [n.value for n in local if isinstance(n, ast.Return)]
            returns_text = " | ".join(_text(v) for v in returned if v is not None)
        self.functions[qual] = FnArith(
            params, tuple(events), cache, returns_text, tuple(sorted(globals_))
        )
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
