"""Reading the per-function `arith` facts: expression children, assignment patterns, frames.

The staleness audit evaluates the expression tuples `rankguard.summary.arith` extracted; this
module holds the small helpers that walk them and the per-function frame (bindings of locals).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rankguard.analysis.staleness.algebra import EMPTY, Val
from rankguard.core.errors import ErrorRecord
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord
from rankguard.summary.arith import FACT, FACT_VERSION, FnArith


def load_facts(program: Program) -> tuple[dict[str, dict[str, Any]], list[ErrorRecord]]:
    """The `arith` fact of every module. Every summary carries it (the extractor registers
    with the package and the cache is salted with the extractors' code); a module without it
    is reported, not re-read from disk."""
    out: dict[str, dict[str, Any]] = {}
    errors: list[ErrorRecord] = []
    for name, mod in program.modules.items():
        fact = mod.summary.facts.get(FACT)
        if not fact or fact.get("version") != FACT_VERSION:
            errors.append(ErrorRecord(mod.path, "staleness facts unavailable for this file"))
            fact = {"functions": {}, "consts": {}}
        out[name] = fact
    return out, errors


def children(node: tuple[Any, ...]) -> tuple[Any, ...]:
    """The sub-expressions of an `arith` expression node (see rankguard.summary.arith)."""
    tag = node[0]
    if tag in ("a", "u", "i"):
        return (node[1],) if tag != "u" else (node[2],)
    if tag == "b":
        return (node[2], node[3])
    if tag == "c":
        out = [*node[2], *(v for _, v in node[3])]
        return (*out, node[6]) if node[6] is not None else tuple(out)
    if tag in ("t", "j", "cmp"):
        return tuple(node[1])
    if tag == "k":
        return (node[1], *(it for _, it in node[2]))
    return ()


def walk(expr: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))


def event_expr(event: tuple[Any, ...]) -> tuple[Any, ...]:
    """The expression of an event: the assigned value, or the returned / evaluated / tested one."""
    return event[3] if event[0] == "=" else event[2]


def pattern_names(pattern: tuple[Any, ...], access: tuple[Any, ...] = ()):
    """(name-or-segs, kind, access path, key) bound by an assignment target pattern; `key` is
    the constant str key of a subscript store (`stats["free"] = ..`), else None."""
    tag = pattern[0]
    if tag == "r":
        yield pattern[1], "ref", access, None
    elif tag == "i":
        yield pattern[1], "item", access, pattern[2]
    elif tag == "*":
        yield from pattern_names(pattern[1], (*access, "*"))
    elif tag == "t":
        for index, inner in enumerate(pattern[1]):
            yield from pattern_names(inner, (*access, index))


def access_path(val: Val, path: tuple[Any, ...]) -> Val:
    for step in path:
        val = val.flat() if step == "*" else val.part(step)
    return val


class Frame:
    """One function's evaluation: memoised locals, comprehension bindings."""

    def __init__(self, record: FunctionRecord, facts: FnArith, consts: dict[str, float]) -> None:
        self.record = record
        self.qual = record.qualname
        self.path = record.path
        self.facts = facts
        self.consts = consts
        self.is_module = record.is_module_body
        info = record.info
        self.me = facts.params[0] if info.takes_self and facts.params else None
        self.params = {p.lstrip("*"): i for i, p in enumerate(facts.params)}
        self.bindings: dict[str, list[tuple[Any, tuple[Any, ...]]]] = defaultdict(list)
        items: list[tuple[str, Any, tuple[Any, ...]]] = []
        for event in facts.events:
            if event[0] == "ev" and _puts(event[2]):
                # `runs.append(x)`: a local list holds what is put in it (any element).
                for arg in event[2][2]:
                    items.append((event[2][1][0], arg, ("*",)))
            if event[0] != "=":
                continue
            for pattern in event[2]:
                for segs, kind, access, _key in pattern_names(pattern):
                    if len(segs) == 1 and segs[0] not in facts.global_names:
                        if kind == "ref":
                            self.bindings[segs[0]].append((event[3], access))
                        else:
                            items.append((segs[0], event[3], (*access, "*")))
        for name, expr, path in items:
            # `d[k] = v` makes `d` hold `v` only when `d` is local; else it is a module global.
            if name in self.bindings or name in self.params:
                self.bindings[name].append((expr, path))
        self.locals: dict[str, Val | None] = {}
        self.overlay: list[dict[str, Val]] = []


@dataclass
class Result:
    """One function's evaluation in the current round (`done` once finished)."""

    ret: Val = EMPTY
    done: bool = False


# Methods that put a value into the container they are called on.
KEEPING_METHODS = frozenset({"append", "appendleft", "extend", "insert", "add"})


def _puts(expr: tuple[Any, ...]) -> bool:
    """`name.append(...)` and the like, on a plain name."""
    return expr[0] == "c" and len(expr[1]) == 2 and expr[1][1] in KEEPING_METHODS
