"""Reduce one file's syntax tree to a `FileSummary`.

We read the file with the standard library's `ast`, not libcst: the summary needs positions and
structure but no concrete syntax, and on sglang/srt `ast.parse` took 4.3 s against libcst's 40.7 s
on this machine (benchmarks/README.md). libcst is used where concrete syntax matters: the
stamp-watchdog codemod and plugin rules that ask for a CST.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable
from typing import Any

from rankguard.summary.conditions import condition, with_items
from rankguard.summary.definitions import (
    all_names,
    body_facts,
    class_attributes,
    class_body_names,
    exits_of,
    literal_defaults,
    metaclass_of,
    method_tables,
    params_of,
)
from rankguard.summary.ir import (
    OPAQUE,
    CallSite,
    ClassInfo,
    FileSummary,
    FunctionInfo,
    ImportInfo,
    Segs,
    Stmt,
)
from rankguard.summary.reads import (
    Reads,
    is_value_ref,
    scan,
    target_refs,
    truths,
    value_shape,
)
from rankguard.summary.references import (
    LAMBDA_NAME,
    annotation_ref,
    element_ref,
    reference,
    short_text,
)

MODULE_QUALNAME = ""  # the pseudo-function that holds module-level code
_SUPPRESS = re.compile(r"#\s*rankguard:\s*ignore(?:\[([^\]]*)\])?\s*(.*)$")

# Extra per-file facts an analysis wants from the same parse: name -> fn(tree, source) -> data.
Extractor = Callable[[ast.Module, str], Any]
EXTRACTORS: dict[str, Extractor] = {}


def register_extractor(name: str) -> Callable[[Extractor], Extractor]:
    def wrap(fn: Extractor) -> Extractor:
        EXTRACTORS[name] = fn
        return fn

    return wrap


class _Builder:
    """Walks statements once, building IR for every function and the module body."""

    def __init__(self) -> None:
        self.summary = FileSummary()
        self._value_refs: list[list[tuple[Segs, int]]] = []
        self._global_names: list[set[str]] = []
        # Where a lambda met now is defined (the local scope around the statement being read),
        # and how many lambdas each scope has had: PyCG's `<lambda1>`, `<lambda2>`, ...
        self._lambda_scope = ""
        self._lambda_counts: dict[str, int] = {}
        self._class_names: list[set[str]] = []  # names each enclosing class body binds

    # -- definitions -------------------------------------------------------
    def module(self, tree: ast.Module) -> None:
        self._value_refs.append([])
        body = self.block(tree.body, scope="", cls=None)
        refs = self._value_refs.pop()
        end = max((getattr(n, "end_lineno", 1) or 1) for n in tree.body) if tree.body else 1
        self.summary.functions.append(
            FunctionInfo(MODULE_QUALNAME, "<module>", 1, end, None, (), None, (), body, tuple(refs))
        )

    def lambda_(self, node: ast.Lambda) -> None:
        """A lambda is a function of its own, `<lambdaN>` in the scope that holds it: its
        body runs where the lambda is called, and the name lets it be stored, passed and
        called like any function."""
        scope = self._lambda_scope
        count = self._lambda_counts.get(scope, 0) + 1
        self._lambda_counts[scope] = count
        name = f"<lambda{count}>"
        setattr(node, LAMBDA_NAME, name)
        qualname = f"{scope}.{name}" if scope else name
        self._lambda_scope = f"{qualname}.<locals>"
        self._value_refs.append([])
        r = self._expr(node.body)
        refs = self._value_refs.pop()
        self._lambda_scope = scope
        body = Stmt(
            "return",
            node.lineno,
            tuple(r.calls),
            reads=tuple(r.reads),
            value=value_shape(node.body),
            existence=tuple(r.existence),
            tree=condition(node.body, reference, arith=True),
        )
        end = node.end_lineno or node.lineno
        info = FunctionInfo(
            qualname, name, node.lineno, end, None, params_of(node.args), None, (), (body,)
        )
        info.value_refs = tuple(refs)
        self.summary.functions.append(info)

    def function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, scope: str, cls: str | None):
        qualname = f"{scope}.{node.name}" if scope else node.name
        params = params_of(node.args)
        decorators = tuple(
            reference(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list
        )
        self._value_refs.append([])
        self._global_names.append(set())
        # Python's own __qualname__ convention: `outer.<locals>.inner`.
        body = self.block(node.body, scope=f"{qualname}.<locals>", cls=None)
        refs = self._value_refs.pop()
        global_names = tuple(sorted(self._global_names.pop()))
        self.summary.functions.append(
            FunctionInfo(
                qualname,
                node.name,
                node.lineno,
                node.end_lineno or node.lineno,
                cls,
                params,
                annotation_ref(node.returns),
                decorators,
                body,
                tuple(refs),
                isinstance(node, ast.AsyncFunctionDef),
                global_names,
                tuple(isinstance(d, ast.Call) for d in node.decorator_list),
                *body_facts(node),  # is_generator, yields, bound
            )
        )

    def klass(self, node: ast.ClassDef, scope: str) -> list[Stmt]:
        qualname = f"{scope}.{node.name}" if scope else node.name
        class_level: list[Stmt] = []
        tables = method_tables(node)
        self._class_names.append(class_body_names(node))
        # Methods, nested classes and class-level statements alike: their definitions (and
        # decorators applied) run at import time, with the module's code.
        class_level.extend(self.block(node.body, scope=qualname, cls=qualname))
        self._class_names.pop()
        self.summary.classes.append(
            ClassInfo(
                qualname,
                node.name,
                node.lineno,
                tuple(reference(b) for b in node.bases),
                tuple(
                    reference(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list
                ),
                class_attributes(node),
                tables,
                literal_defaults(node),
                metaclass_of(node),
            )
        )
        # Class bodies run at import time, with the module's code.
        return class_level

    # -- statements --------------------------------------------------------
    def block(self, stmts: list[ast.stmt], scope: str, cls: str | None) -> tuple[Stmt, ...]:
        out: list[Stmt] = []
        for node in stmts:
            made = self.statement(node, scope, cls)
            if made is not None:
                out.extend(made) if isinstance(made, list) else out.append(made)
        self._lambda_scope = _local_scope(scope, cls)  # a nested definition may have moved it
        return tuple(out)

    def _expr(self, node: ast.AST | None) -> Reads:
        reads = scan(node, self.lambda_)
        self._value_refs[-1].extend(reads.value_refs)
        return reads

    def _exprs(self, nodes: Iterable[ast.AST | None]) -> Reads:
        merged = Reads()
        for node in nodes:
            part = self._expr(node)
            merged.calls += part.calls
            merged.reads += part.reads
        return merged

    def statement(self, node: ast.stmt, scope: str, cls: str | None) -> Stmt | list[Stmt] | None:
        line = node.lineno
        self._lambda_scope = _local_scope(scope, cls)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            applied = self.decorators_applied(node, cls)
            self.function(node, scope, cls)
            return applied
        if isinstance(node, ast.ClassDef):
            applied = self.decorators_applied(node, cls)
            return [*self.klass(node, scope), *([applied] if applied else [])]
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            self.imports(node, scope)
            return None
        if isinstance(node, ast.Expr):
            r = self._expr(node.value)
            return Stmt(
                "expr",
                line,
                tuple(r.calls),
                reads=tuple(r.reads),
                existence=tuple(r.existence),
                yields=isinstance(node.value, (ast.Yield, ast.YieldFrom)),
            )
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            return self.assignment(node)
        if isinstance(node, ast.Return):
            r = self._expr(node.value)
            if isinstance(node.value, (ast.Name, ast.Attribute)):
                ref = reference(node.value)
                if OPAQUE not in ref:
                    self._value_refs[-1].append((ref, line))
            return Stmt(
                "return",
                line,
                tuple(r.calls),
                reads=tuple(r.reads),
                value=value_shape(node.value),
                existence=tuple(r.existence),
                tree=condition(node.value, reference, arith=True) if node.value is not None else (),
            )
        if isinstance(node, ast.Raise):
            r = self._exprs([node.exc, node.cause])
            return Stmt("raise", line, tuple(r.calls), reads=tuple(r.reads))
        if isinstance(node, ast.Global):
            if self._global_names:
                self._global_names[-1].update(node.names)
            return None
        if isinstance(node, ast.Break):
            return Stmt("break", line)
        if isinstance(node, ast.Continue):
            return Stmt("continue", line)
        if isinstance(node, ast.If):
            r = self._expr(node.test)
            return Stmt(
                "if",
                line,
                tuple(r.calls),
                (self.block(node.body, scope, cls), self.block(node.orelse, scope, cls)),
                text=short_text(node.test),
                reads=tuple(r.reads),
                existence=tuple(r.existence),
                truths=truths(node.test),
                cond=condition(node.test, reference),
            )
        if isinstance(node, ast.While):
            r = self._expr(node.test)
            infinite = isinstance(node.test, ast.Constant) and bool(node.test.value)
            return Stmt(
                "loop",
                line,
                tuple(r.calls),
                (self.block(node.body, scope, cls), self.block(node.orelse, scope, cls)),
                text=short_text(node.test),
                reads=tuple(r.reads),
                infinite=infinite,
                existence=tuple(r.existence),
                truths=truths(node.test),
                cond=condition(node.test, reference),
            )
        if isinstance(node, (ast.For, ast.AsyncFor)):
            r = self._expr(node.iter)
            return Stmt(
                "loop",
                line,
                tuple(r.calls),
                (self.block(node.body, scope, cls), self.block(node.orelse, scope, cls)),
                text=short_text(node.iter),
                targets=tuple(target_refs(node.target)),
                reads=tuple(r.reads),
                value=value_shape(node.iter),
                truths=truths(node.iter) if isinstance(node.iter, ast.Attribute | ast.Name) else (),
                tree=condition(node.iter, reference, arith=True),
            )
        if isinstance(node, (ast.With, ast.AsyncWith)):
            r = self._exprs(item.context_expr for item in node.items)
            targets = [
                ref
                for item in node.items
                if item.optional_vars
                for ref in target_refs(item.optional_vars)
            ]
            return Stmt(
                "with",
                line,
                tuple(r.calls),
                (self.block(node.body, scope, cls),),
                text=", ".join(short_text(item.context_expr) for item in node.items),
                targets=tuple(targets),
                reads=tuple(r.reads),
                items=with_items(node, reference),
                exits=exits_of(node),
            )
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            handlers = []
            calls: list[CallSite] = []
            for handler in node.handlers:
                calls += self._expr(handler.type).calls
                handlers.append(self.block(handler.body, scope, cls))
            return Stmt(
                "try",
                line,
                tuple(calls),
                (
                    self.block(node.body, scope, cls),
                    self.block(node.orelse, scope, cls),
                    self.block(node.finalbody, scope, cls),
                    *handlers,
                ),
            )
        if isinstance(node, ast.Match):
            r = self._expr(node.subject)
            cases = tuple(self.block(case.body, scope, cls) for case in node.cases)
            return Stmt(
                "match",
                line,
                tuple(r.calls),
                cases,
                text=short_text(node.subject),
                reads=tuple(r.reads),
            )
        if isinstance(node, (ast.Assert, ast.Delete)):  # an assert's message: `Reads`
            r = self._expr(node) if isinstance(node, ast.Assert) else self._exprs(node.targets)
            test = condition(node.test, reference) if isinstance(node, ast.Assert) else ()
            text = short_text(node.test) if isinstance(node, ast.Assert) else ""
            return Stmt("expr", line, tuple(r.calls), reads=tuple(r.reads), cond=test, text=text)
        return Stmt("pass", line)

    def decorators_applied(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, cls: str | None
    ) -> Stmt | None:
        """`@a @b(x) def f` evaluates `a`, then `b(x)`, then calls `b(x)(f)` and `a(...)`
        where `f` is defined: the decorators' own calls, then one call per decorator applied,
        innermost first, at its `@`. A decorator named by the class body around it
        (`@size.setter`) is a class-body name the model does not scope: its application is
        left out rather than looked up outside the class."""
        calls: list[CallSite] = []
        reads: list[Segs] = []
        for dec in node.decorator_list:
            r = self._expr(dec)
            calls += r.calls
            reads += r.reads
        local = self._class_names[-1] if cls is not None and self._class_names else set()
        for dec in reversed(node.decorator_list):
            target = reference(dec)
            if OPAQUE not in target and "<str>" not in target and target[0] not in local:
                calls.append(CallSite(target, dec.lineno, max(dec.col_offset - 1, 0)))
        if not calls:
            return None
        return Stmt("expr", node.decorator_list[0].lineno, tuple(calls), reads=tuple(reads))

    def assignment(self, node: ast.Assign | ast.AnnAssign | ast.AugAssign) -> Stmt | list[Stmt]:
        value = node.value
        pairs = _unpacked_pairs(node)
        if pairs:
            # `a, b = f, g`: one assignment per name, so each keeps its own value; a nested
            # pair (`a, (b, c) = f, (g, h)`) unpacks again, flat in the same statement list.
            flat: list[Stmt] = []
            for target, element in pairs:
                made = self.assignment(
                    ast.Assign(targets=[target], value=element, lineno=node.lineno)
                )
                flat.extend(made if isinstance(made, list) else [made])
            return flat
        targets: list[Segs] = []
        if isinstance(node, ast.Assign):
            for target in node.targets:
                targets += target_refs(target)
        else:
            targets += target_refs(node.target)
        r = self._expr(value)
        shape = value_shape(value)
        if isinstance(node, ast.AnnAssign):
            ann = annotation_ref(node.annotation)
            if ann and shape[0] not in ("call",):
                shape = ("annotated", ann, shape)
            elif ann:
                shape = (*shape, ann)
            elif element_ref(node.annotation) is not None:
                # `set[int]` names the elements; the value (`set()`) says what holds them
                shape = ("items", element_ref(node.annotation), shape)
        if shape[0] == "ref" and value is not None and is_value_ref(value):
            self._value_refs[-1].append((shape[1], node.lineno))
        reads = list(r.reads)
        if isinstance(node, ast.AugAssign):
            reads += targets
        return Stmt(
            "assign",
            node.lineno,
            tuple(r.calls),
            targets=tuple(targets),
            reads=tuple(reads),
            value=shape,
            existence=tuple(r.existence),
            tree=condition(_combined(node), reference, arith=True),
            yields=isinstance(value, (ast.Yield, ast.YieldFrom)),
        )

    def imports(self, node: ast.Import | ast.ImportFrom, scope: str) -> None:
        scope = scope.removesuffix(".<locals>")
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.summary.imports.append(
                        ImportInfo(scope, alias.asname, alias.name, 0, None, node.lineno)
                    )
                else:
                    top = alias.name.split(".")[0]
                    self.summary.imports.append(
                        ImportInfo(scope, top, alias.name, 0, None, node.lineno)
                    )
        else:
            for alias in node.names:
                bound = alias.asname or alias.name
                self.summary.imports.append(
                    ImportInfo(scope, bound, node.module or "", node.level, alias.name, node.lineno)
                )


def _local_scope(scope: str, cls: str | None) -> str:
    """The local scope code at `scope` runs in: a class body's is the one around the class."""
    if cls is None:
        return scope
    return scope.rsplit(".<locals>.", 1)[0] + ".<locals>" if ".<locals>." in scope else ""


def _combined(node: ast.Assign | ast.AnnAssign | ast.AugAssign) -> ast.expr | None:
    """The value a target gets: `x %= n` gives it `x % n`."""
    if isinstance(node, ast.AugAssign):
        return ast.BinOp(node.target, node.op, node.value)
    return node.value


def _unpacked_pairs(node: ast.stmt) -> list[tuple[ast.expr, ast.expr]]:
    """(target, value) pairs of `a, b = x, y` (same length, no starred element), else []."""
    if not isinstance(node, ast.Assign) or len(node.targets) != 1:
        return []
    target, value = node.targets[0], node.value
    if not isinstance(target, (ast.Tuple, ast.List)) or not isinstance(
        value, (ast.Tuple, ast.List)
    ):
        return []
    elements = [*target.elts, *value.elts]
    if len(target.elts) != len(value.elts) or any(isinstance(e, ast.Starred) for e in elements):
        return []
    return list(zip(target.elts, value.elts, strict=True))


def suppressions(source: str) -> dict[int, tuple[tuple[str, ...], str]]:
    """`# rankguard: ignore[rule, ...] reason` comments, by line (empty rules: every rule)."""
    found: dict[int, tuple[tuple[str, ...], str]] = {}
    if "rankguard:" not in source:
        return found
    for number, text in enumerate(source.splitlines(), start=1):
        if "rankguard:" in text:
            match = _SUPPRESS.search(text)
            if match:
                rules = tuple(
                    sorted(r.strip() for r in (match.group(1) or "").split(",") if r.strip())
                )
                found[number] = (rules, match.group(2).strip())
    return found


def summarize(source: str, tree: ast.Module) -> FileSummary:
    builder = _Builder()
    builder.module(tree)
    summary = builder.summary
    summary.all_names = all_names(tree)
    summary.suppressions = suppressions(source)
    summary.lines = source.count("\n") + 1
    for name, extractor in sorted(EXTRACTORS.items()):
        summary.facts[name] = extractor(tree, source)
    summary.functions.sort(key=lambda f: (f.line, f.qualname))
    summary.classes.sort(key=lambda c: (c.line, c.qualname))
    return summary
