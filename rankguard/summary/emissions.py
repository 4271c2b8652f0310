"""Emitting call sites and their format templates, extracted during the one shared parse.

Inventories cite *emitted literals* (a log line, an exception message), and a census counts log
lines that an emitting call could have produced. Both need, per call site that emits text: the
enclosing function, the line, what kind of emitter it is, and the message's *template*: constant
pieces and format-field holes, whatever the formatting style (%-format, `.format`, f-strings,
implicit or explicit concatenation). Recording this in the cached per-file summary means a
relocation at a pin costs no extra parse.

Which calls are emitters is partly configuration (`emitters`, fnmatch on the callee text), and
the cached summary must not depend on it. So besides the built-in kinds (level methods on a
receiver known to be a logger, see `rankguard.summary.loggers`; `print`, `warnings.warn`,
`raise X("...")`, `sys.stdout/stderr.write`) every other call whose first argument is a string
template is kept as kind `call` with its callee text and the argument's position; the query
decides whether a configured pattern selects it, whether a receiver imported from another module
is a logger there, or whether the callee is a *wrapper*: a module-level function that passes a
parameter into an emitting call's message (`def print_warning_once(msg): logger.warning(msg)`),
recorded per module as `wrappers`.

Prose (comments, docstrings, strings nobody emits) is *not* recorded here: it is looked up at
query time by scanning the source bytes, and only for the rows that found no emitting site.
Recording every string and comment would grow every cached summary, for every analysis, to
serve a question that is asked rarely and answered by one byte search per file.
"""

from __future__ import annotations

import ast
import re
import string
from typing import NamedTuple

from rankguard.summary.extract import register_extractor
from rankguard.summary.ir import segs_text
from rankguard.summary.loggers import FACTORIES, Loggers, is_level_method
from rankguard.summary.references import reference

FACT = "emissions"
# Bump when the shape of `Emission` or of the fact changes: consumers recompute stale facts.
FACT_VERSION = 3

STREAM_WRITERS = frozenset({"sys.stderr.write", "sys.stdout.write"})
WARNINGS_CALLEES = frozenset({"warnings.warn", "warn"})
# Calls whose string argument is a key, a path or a pattern, never a message: not worth keeping
# as candidates for configured emitters (keeps the cached facts small on large packages).
_NOT_MESSAGES = frozenset(
    {
        "get",
        "getattr",
        "hasattr",
        "setattr",
        "delattr",
        "isinstance",
        "startswith",
        "endswith",
        "split",
        "rsplit",
        "join",
        "replace",
        "strip",
        "lstrip",
        "rstrip",
        "encode",
        "decode",
        "format",
        "open",
        "compile",
        "match",
        "fullmatch",
        "search",
        "sub",
        "findall",
        "finditer",
        "find",
        "rfind",
        "index",
        "count",
        "pop",
        "setdefault",
        "getenv",
        "import_module",
        "register_buffer",
        "add_argument",
        "Path",
        *FACTORIES,  # a logger's name
    }
)

_PERCENT = re.compile(
    r"%(?:\([^)]*\))?[#0 +\-]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?[diouxXeEfFgGcrsa%]"
)

Part = tuple[bool, str]  # (is_field, text): text is the emitted text, or the field as written


class Emission(NamedTuple):
    """One emitting (or candidate) call site."""

    function: str  # local qualname of the enclosing function; "" for module-level code
    line: int  # the call's line (`ast.Call.lineno`), or the `raise` line
    end_line: int
    kind: str  # logging | print | warnings | raise | stream | call
    callee: str  # the callee as written: `logger.info`, `RuntimeError`, `log_rank0`
    parts: tuple[Part, ...]  # the message template, adjacent constant pieces merged
    # A `call` whose receiver is imported: "..module:name", a logger when that module says so.
    origin: str = ""
    arg: int = 0  # the message argument's position (a `call` may be a wrapper's call)

    @property
    def template(self) -> str:
        """Human-readable template: constants as emitted, fields as written (`%d`, `{}`)."""
        return "".join(text for _, text in self.parts)


def _merge(parts: list[Part]) -> tuple[Part, ...]:
    merged: list[Part] = []
    for is_field, text in parts:
        if not is_field and not text:
            continue
        if merged and not is_field and not merged[-1][0]:
            merged[-1] = (False, merged[-1][1] + text)
        else:
            merged.append((is_field, text))
    return tuple(merged)


def percent_parts(text: str) -> list[Part]:
    """`%`-format fields of `text` (as `str % args` or a lazy logging call would apply them)."""
    parts: list[Part] = []
    pos = 0
    for match in _PERCENT.finditer(text):
        parts.append((False, text[pos : match.start()]))
        spec = match.group()
        parts.append((False, "%") if spec == "%%" else (True, spec))
        pos = match.end()
    parts.append((False, text[pos:]))
    return parts


def format_parts(text: str) -> list[Part] | None:
    """`str.format` fields of `text`; None when it is not a valid format string."""
    parts: list[Part] = []
    try:
        for literal, name, spec, conversion in string.Formatter().parse(text):
            parts.append((False, literal))
            if name is not None:
                conv = f"!{conversion}" if conversion else ""
                parts.append((True, "{" + name + conv + (f":{spec}" if spec else "") + "}"))
    except ValueError:
        return None
    return parts


def template_parts(node: ast.AST, percent: bool = False) -> list[Part] | None:
    """The template an expression renders, or None when it is not built from a string.

    `percent`: the string is %-formatted later (a logging call with arguments).
    """
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return percent_parts(node.value) if percent else [(False, node.value)]
    if isinstance(node, ast.JoinedStr):
        parts: list[Part] = []
        for value in node.values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                parts.append((False, value.value))
            else:
                parts.append((True, "{}"))
        return parts
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        if isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
            return percent_parts(node.left.value)
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = template_parts(node.left)
        right = template_parts(node.right)
        if left is None and right is None:
            return None
        return (left or [(True, "{}")]) + (right or [(True, "{}")])
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and isinstance(node.func.value, ast.Constant)
        and isinstance(node.func.value.value, str)
    ):
        return format_parts(node.func.value.value)
    return None


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def _print_parts(call: ast.Call) -> list[Part] | None:
    sep_node = _keyword(call, "sep")
    sep = " "
    if isinstance(sep_node, ast.Constant) and isinstance(sep_node.value, str):
        sep = sep_node.value
    elif sep_node is not None:
        return None
    parts: list[Part] = []
    found = False
    for i, arg in enumerate(call.args):
        if i:
            parts.append((False, sep))
        piece = template_parts(arg)
        found = found or piece is not None
        parts.extend(piece if piece is not None else [(True, "{}")])
    return parts if found else None


def _message_node(call: ast.Call, kind: str, method: str) -> tuple[ast.expr | None, int, bool]:
    """(the message argument, its position, whether logging %-formats it later), by emitter
    kind: a level method's call is read as logging reads it (so a configured or imported logger
    gets the same template); another plain call's message is its first string argument."""
    if kind == "logging" or (kind == "call" and is_level_method(method)):
        index = 1 if method == "log" else 0
        if len(call.args) > index:
            return call.args[index], index, len(call.args) > index + 1
        return _keyword(call, "msg"), index, False
    if kind == "call":
        for index, arg in enumerate(call.args):
            if template_parts(arg) is not None:
                return arg, index, False
        return None, 0, False
    node = call.args[0] if call.args else None
    if node is None and kind == "warnings":
        node = _keyword(call, "message")
    return node, 0, False


def _message(call: ast.Call, kind: str, method: str) -> tuple[list[Part] | None, int]:
    """The template of the message a call emits, and the position of its argument."""
    if kind == "print":
        return _print_parts(call), 0
    node, index, lazy = _message_node(call, kind, method)
    return (None if node is None else template_parts(node, percent=lazy)), index


# Kinds a logging helper logs through (a helper raising `f"missing field: {name}"` names a
# field, it does not log a message).
_LOG_KINDS = frozenset({"logging", "print", "stream", "warnings"})


def _passed_names(call: ast.Call, kind: str, method: str) -> set[str]:
    """The name a logging helper's message ends with: the whole message (`logger.warning(msg)`),
    or after a prefix the helper adds (`print(f"[rank {r}] {msg}")`, `print("[x]", msg)`,
    `"x: " + msg`). A name inside the message (`f"{label}: {err}"`) is a label, not a message."""
    node = (call.args[-1] if call.args else None) if kind == "print" else None
    if kind != "print":
        node = _message_node(call, kind, method)[0]
    if isinstance(node, ast.JoinedStr) and node.values:
        last = node.values[-1]
        plain = isinstance(last, ast.FormattedValue) and last.conversion == -1
        node = last.value if plain and last.format_spec is None else None
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        node = node.right
    return {node.id} if isinstance(node, ast.Name) else set()


def classify(func: ast.expr, callee: str, loggers: Loggers) -> str:
    """The emitter kind of a call (`call` when only configuration can say)."""
    if callee == "print":
        return "print"
    if callee in WARNINGS_CALLEES:
        return "warnings"
    if callee in STREAM_WRITERS:
        return "stream"
    if (
        isinstance(func, ast.Attribute)
        and is_level_method(func.attr)
        and loggers.is_logger(func.value)
    ):
        return "logging"
    return "call"


def _has_constant(parts: list[Part]) -> bool:
    return any(not is_field and text for is_field, text in parts)


class _Collector(ast.NodeVisitor):
    """Walks a module once, naming enclosing functions as `extract` does (`__qualname__`)."""

    def __init__(self, loggers: Loggers) -> None:
        self.loggers = loggers
        self.found: list[Emission] = []
        self.scope = ""  # prefix for the qualnames of definitions met here
        self.function = ""  # the function whose code runs here ("" = module level)
        self.params: list[str] = []  # a module-level function's positional parameters
        # Module-level functions that emit a parameter: name -> the parameter's position.
        self.wrappers: dict[str, int] = {}

    def _record(self, node: ast.AST, call: ast.Call, kind: str, callee: str) -> None:
        func = call.func
        method = func.attr if isinstance(func, ast.Attribute) else ""
        if kind in _LOG_KINDS and self.params:
            for name in sorted(_passed_names(call, kind, method) & set(self.params)):
                self.wrappers.setdefault(self.function, self.params.index(name))
        parts, arg = _message(call, kind, method)
        if parts is None or not _has_constant(parts):
            return
        end = getattr(call, "end_lineno", None) or call.lineno
        line = getattr(node, "lineno", call.lineno)
        origin = ""
        if kind == "call" and isinstance(func, ast.Attribute) and is_level_method(method):
            origin = self.loggers.origin(func.value)
        emission = Emission(self.function, line, end, kind, callee, _merge(parts), origin, arg)
        self.found.append(emission)

    def _visit_all(self, nodes: list) -> None:
        for node in nodes:
            if node is not None:
                self.visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._visit_all(node.decorator_list)
        self._visit_all([*node.args.defaults, *node.args.kw_defaults])
        qualname = f"{self.scope}.{node.name}" if self.scope else node.name
        saved = self.scope, self.function, self.params
        self.scope, self.function = f"{qualname}.<locals>", qualname
        positional = [*node.args.posonlyargs, *node.args.args]
        self.params = [a.arg for a in positional] if not saved[0] else []
        self._visit_all(node.body)
        self.scope, self.function, self.params = saved

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._visit_all([*node.decorator_list, *node.bases, *(k.value for k in node.keywords)])
        saved = self.scope
        # Class bodies run with the enclosing code; only definitions inside get the class name.
        self.scope = f"{self.scope}.{node.name}" if self.scope else node.name
        self._visit_all(node.body)
        self.scope = saved

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        if isinstance(exc, ast.Call):
            callee = segs_text(reference(exc.func))
            self._record(node, exc, "raise", callee)
            self._visit_all([exc.func, *exc.args, *(k.value for k in exc.keywords)])
        elif exc is not None:
            self.visit(exc)
        if node.cause is not None:
            self.visit(node.cause)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        is_str_method = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Constant)
        if not is_str_method:
            callee = segs_text(reference(func))
            kind = classify(func, callee, self.loggers)
            if kind != "call" or callee.rsplit(".", 1)[-1] not in _NOT_MESSAGES:
                self._record(node, node, kind, callee)
        self.generic_visit(node)


@register_extractor(FACT)
def extract_emissions(tree: ast.Module, source: str) -> dict[str, object]:
    """Every emitting or candidate call site of a module, in source order, and the module's
    logger names (another module importing one of them logs through it)."""
    loggers = Loggers(tree)
    collector = _Collector(loggers)
    collector.visit(tree)
    sites = sorted(set(collector.found), key=lambda e: (e.line, e.end_line, e.kind, e.callee, e))
    return {
        "version": FACT_VERSION,
        "sites": tuple(sites),
        "loggers": frozenset(loggers.names),
        "wrappers": collector.wrappers,
    }
