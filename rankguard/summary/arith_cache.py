"""Where a function keeps a value across rounds: the caching forms the `arith` fact tags.

A driver term read once and kept is cheap and stale; the staleness audit needs to know which
stores keep their value across rounds. The forms recognised here are the ones serving code uses:
a time-guarded refresh, an attribute or module-global memo behind `is None` / `not in`, a dict memo
keyed by an argument, a value set once at start-up and read every round. Decorator caches come
from the caching catalog (`rankguard/catalogs/caching.toml`).
"""

from __future__ import annotations

import ast

from rankguard.summary.references import reference

TIME_CALLS = frozenset(
    {"time", "monotonic", "perf_counter", "monotonic_ns", "time_ns", "perf_counter_ns"}
)


_TEXT_LIMIT = 80


def text_of(node: ast.AST) -> str:
    try:
        text = ast.unparse(node)
    except (ValueError, RecursionError):  # pragma: no cover - exotic trees
        return "…"
    text = " ".join(text.split())
    return text if len(text) <= _TEXT_LIMIT else text[: _TEXT_LIMIT - 1] + "…"


def walk_local(nodes: list[ast.stmt]):
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
    for node in walk_local(nodes):
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


def cache_stores(
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
        detail = text_of(test)
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
    for line, detail in _dict_memos(local, me, globals_ | module_names).items():
        found.setdefault(line, ("memo", detail))
    return found


def _dict_memos(local: list[ast.AST], me: str | None, shared: set[str]) -> dict[int, str]:
    """Stores into a dict kept beyond the call (an attribute, a class or module global) that
    the same function looks up first (`memo.get(key)`, `key in memo`): a dict memo."""
    looked: dict[tuple[str, ...], str] = {}
    for node in local:
        container: ast.AST | None = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("get", "setdefault"):
                container = node.func.value
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            container = node.comparators[0]
        if container is None:
            continue
        segs = reference(container)
        kept = len(segs) > 1 or (len(segs) == 1 and segs[0] in shared)
        if kept and all(isinstance(s, str) and s.isidentifier() for s in segs):
            looked.setdefault(segs, text_of(node))
    out: dict[int, str] = {}
    if not looked:
        return out
    for node in local:
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            segs = reference(node.value)
            if segs in looked and segs != (me,):
                out[node.lineno] = looked[segs]
    return out


def _subscript_stores(nodes: list[ast.stmt]) -> list[tuple[int, tuple[str, ...]]]:
    out = []
    for node in walk_local(nodes):
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
