"""Which receivers in a module are loggers, so that only their level methods count as logging.

`x.error("...")` is a log line when `x` is a logger and an argparse failure, a future's
exception or a math call otherwise; `logger.warning_once("...")` is a log line although
`warning_once` is no stdlib method. So an emitter is a *level method* (a level name, a name a
level prefixes such as `warning_once` or `info_rank0`, or `log`) called on a receiver known to
be a logger:

- the `logging` module itself (`logging.warning(...)`, under any alias);
- the result of a logger factory (`logging.getLogger`, structlog's or transformers'
  `get_logger`, `init_logger` as vLLM-style projects name theirs) or of a logger's `bind`,
  `opt` or `getChild`;
- loguru's `logger`;
- a name or `self`/`cls` attribute assigned one of those, or annotated with a logger type.

Names are collected over the whole module, scopes ignored: a logger is nearly always bound once
at module level or in `__init__`, and a scope-exact answer would cost a second resolver.
A receiver imported from another module (`from pkg.log import logger`) is recorded as its origin
and decided at query time, from the loggers the other module's facts list.
"""

from __future__ import annotations

import ast
import re

LEVELS = ("debug", "info", "warning", "warn", "error", "exception", "critical", "fatal")
FACTORIES = frozenset({"getLogger", "get_logger", "init_logger"})
DERIVED = frozenset({"bind", "opt", "getChild", "new"})
LOGGER_TYPES = frozenset(
    {"Logger", "LoggerAdapter", "BoundLogger", "FilteringBoundLogger", "BoundLoggerLazyProxy"}
)
_TYPE_WORD = re.compile(r"\b(?:" + "|".join(sorted(LOGGER_TYPES)) + r")\b")


def is_level_method(name: str) -> bool:
    """`info`, `warning_once`, `error_rank0`, `log`: a method a logger emits through."""
    return name == "log" or any(name == lv or name.startswith(f"{lv}_") for lv in LEVELS)


def _typed_logger(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return False
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name) and node.id in LOGGER_TYPES:
            return True
        if isinstance(node, ast.Attribute) and node.attr in LOGGER_TYPES:
            return True
        is_text = isinstance(node, ast.Constant) and isinstance(node.value, str)
        if is_text and _TYPE_WORD.search(node.value):
            return True
    return False


class Loggers:
    """The logger names of one module, and where its imported names come from."""

    def __init__(self, tree: ast.Module) -> None:
        self.names: set[str] = set()  # names and self/cls attributes bound to loggers
        self.imported: dict[str, str] = {}  # bound name -> "..module:name"
        bindings: list[tuple[list[ast.expr], ast.expr | None]] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == "logging":
                        self.names.add(alias.asname or alias.name)
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    bound = alias.asname or alias.name
                    if node.module == "loguru" and alias.name == "logger":
                        self.names.add(bound)
                    else:
                        origin = "." * node.level + (node.module or "")
                        self.imported[bound] = f"{origin}:{alias.name}"
            elif isinstance(node, ast.Assign):
                bindings.append((node.targets, node.value))
            elif isinstance(node, ast.AnnAssign):
                if _typed_logger(node.annotation):
                    self._bind(node.target)
                else:
                    bindings.append(([node.target], node.value))
            elif isinstance(node, ast.arg) and _typed_logger(node.annotation):
                self.names.add(node.arg)
        grew = True
        while grew:  # `log = logger` after `logger = getLogger()`: bind until nothing new
            grew = False
            for targets, value in bindings:
                if value is not None and self.is_logger(value):
                    for target in targets:
                        grew = self._bind(target) or grew

    def _bind(self, target: ast.expr) -> bool:
        name = _target_name(target)
        if name is None or name in self.names:
            return False
        self.names.add(name)
        return True

    def is_logger(self, node: ast.expr) -> bool:
        """Whether the expression evaluates to a logger (or the `logging` module)."""
        if isinstance(node, ast.Name):
            return node.id in self.names
        if isinstance(node, ast.Attribute):
            return _is_self(node.value) and node.attr in self.names
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                return func.id in FACTORIES
            if isinstance(func, ast.Attribute):
                return func.attr in FACTORIES or (
                    func.attr in DERIVED and self.is_logger(func.value)
                )
        return False

    def origin(self, node: ast.expr) -> str:
        """Where an imported receiver comes from ("" when it is not an imported name)."""
        return self.imported.get(node.id, "") if isinstance(node, ast.Name) else ""


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def _target_name(target: ast.expr) -> str | None:
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute) and _is_self(target.value):
        return target.attr
    return None
