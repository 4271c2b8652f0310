"""Consumers: where a composed term lands in a budget, as (source, consumer) rows.

A consumer is a budget: an additive expression (`free + takeable - delta`) or an admission test
(`if need <= free:`), never a log or format argument, a metric or a stats counter (the driver
catalog's `[consumers]` table names those sinks). In a comparison the term's sign is the side it
sits on: the side that, larger, lets more work through (`free` in `need <= free`, and in
`if est >= free: reject`), with the sign it has on that side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rankguard.analysis.staleness.algebra import CacheInfo, Flow, Key, Src, Val, sub
from rankguard.analysis.staleness.facts import children, event_expr
from rankguard.core.chains import Hop


@dataclass
class Row:
    """One (source, consumer) pair; signs are the composed ones."""

    src: Src
    cache: CacheInfo | None
    function: str
    path: str
    line: int
    sign: int
    chain: tuple[Hop, ...]
    compared: bool = False  # in a comparison that admits work (the sign: its permissive side)


class ConsumerRows:
    """The consumer half of `Flows` (flow.py)."""

    def consumers(self, qual: str) -> list[Row]:
        """Rows for every budget expression in `qual` whose operands carry a source."""
        if qual in self._results:
            frame = self.frame(qual)  # evaluated already as a callee: its locals afresh
        else:
            # So callee summaries exist for this final evaluation; its locals are those of
            # evaluating it, now or in the round it was last evaluated (replayed: the same).
            self.result(qual)
            frame = self._frames.get(qual)
        if frame is None:
            return []
        rows: dict[tuple[Key, int], Row] = {}

        def add(value: Val, line: int, compared: bool = False) -> None:
            value = self.concrete(frame, value).flat()
            for key, flow in sorted(value.flows.items(), key=_flow_order):
                if key[0].kind != "param":
                    row = Row(key[0], key[1], qual, frame.path, line, flow.sign, flow.chain)
                    row.compared = compared
                    rows.setdefault((key, line), row)

        for event in frame.facts.events:
            if event[0] == "=" and self.not_budget_store(event[2]):
                continue
            expr = event_expr(event)
            if event[0] == "?":
                for left, op, right in _admission_pairs(expr):
                    side = 1 if op in ("<", "<=") else -1  # +1: the right side, larger, admits
                    permissive = sub(self.eval(frame, right), self.eval(frame, left))
                    add(permissive.scale(side * event[3]), event[1], compared=True)
            accumulated = _accumulated(event)
            if accumulated is not None:
                # `x += e` / `x -= e`: the consumer is `e` with the operator's sign, not the
                # value `x` held before (a kept accumulator would read back as stale here).
                value = self.eval(frame, accumulated[1])
                add(value.flat().scale(accumulated[0]), event[1])
                expr = ("u", "-", accumulated[1])  # its inner `a - b` is part of this row
            for root in self.additive_roots(frame, expr, inside_test=event[0] == "?"):
                add(self.eval(frame, root), _line(root, event[1]))
        return list(rows.values())

    def not_budget_store(self, patterns: tuple[Any, ...]) -> bool:
        """An assignment into a stats counter or metric (`self.stats["free"] = ..`)."""
        names = [seg for p in patterns if p[0] in ("r", "i") for seg in p[1]]
        return any(self.catalog.not_budget_store(name) for name in names)

    def additive_roots(self, frame: Any, node: tuple[Any, ...], inside_test: bool = False):
        """Outermost `+`/`-` expressions (with unary minus inside them), preorder, leaving out
        log, format and metric arguments and the operands of an admission test (the test is the
        consumer there)."""
        stack: list[tuple[tuple[Any, ...], bool]] = [(node, False)]
        while stack:
            current, parent_additive = stack.pop()
            tag = current[0]
            if tag == "c" and self.not_budget_call(frame, current):
                continue
            if tag == "cmp" and inside_test:
                continue
            additive = (tag == "b" and current[1] in ("+", "-")) or (
                tag == "u" and current[1] == "-"
            )
            if additive and not parent_additive and _has_binary(current):
                yield current
            stack.extend((child, additive) for child in reversed(children(current)))

    def not_budget_call(self, frame: Any, node: tuple[Any, ...]) -> bool:
        segs = node[1]
        if segs and self.catalog.not_budget_call(segs[-1]):
            return True
        targets = self.call_targets(frame.qual, node[4], node[5], segs)
        return any(self.catalog.not_budget_call(t.name.rsplit(".", 1)[-1]) for t in targets)


def _accumulated(event: tuple[Any, ...]) -> tuple[int, tuple[Any, ...]] | None:
    """(sign, added expression) of an augmented `+=` / `-=` assignment event."""
    if event[0] != "=" or len(event[2]) != 1:
        return None
    expr, (pattern,) = event[3], event[2]
    if expr[0] != "b" or expr[1] not in ("+", "-") or pattern[0] not in ("r", "i"):
        return None
    current = ("r", pattern[1]) if pattern[0] == "r" else ("i", ("r", pattern[1]), pattern[2])
    if expr[2] != current:
        return None
    return (1 if expr[1] == "+" else -1), expr[3]


def _admission_pairs(node: tuple[Any, ...]):
    """(left, op, right) of every ordering comparison in a test, through `and` / `or`."""
    if node[0] == "j":
        for inner in node[1]:
            yield from _admission_pairs(inner)
    elif node[0] == "cmp":
        exprs, ops = node[1], node[2]
        for index, op in enumerate(ops):
            if op in ("<", "<=", ">", ">="):
                yield exprs[index], op, exprs[index + 1]


def _line(node: tuple[Any, ...], default: int) -> int:
    while node[0] == "u":
        node = node[2]
    return node[4] if node[0] == "b" else default


def _flow_order(item: tuple[Key, Flow]) -> tuple:
    (src, cache), flow = item
    return (src, cache or CacheInfo("", "", "", 0), flow.chain)


def _has_binary(node: tuple[Any, ...]) -> bool:
    while node[0] == "u":
        node = node[2]
        if not isinstance(node, tuple) or not node or node[0] not in ("u", "b"):
            return False
    return node[0] == "b" and node[1] in ("+", "-")
