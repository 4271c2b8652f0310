"""Staleness rows that are new at head, gone, or whose direction or verdict changed.

A row is identified line-free: the term, its consumer and the functions of the chain between
them. What may change under that identity is whether the term is cached, the operation, what
a stale too-large value does, and the verdict: exactly what a reviewer must look at.

The rows come from the staleness audit through one small interface, `RowSource` (rows as the
contract's JSON dictionaries), so this section does not depend on that audit's internals.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rankguard.rules.base import RuleContext

RowSource = Callable[[RuleContext], list[dict[str, Any]]]
ATTRIBUTES = ("cached", "operation", "stale_larger", "verdict")


def audit_rows(context: RuleContext) -> list[dict[str, Any]]:
    """The staleness audit's rows for the context's program, as JSON dictionaries (the
    session shares one staleness run with `stale-widening-term`)."""
    return [row.to_json() for row in context.staleness.rows]


def row_key(row: dict[str, Any]) -> tuple[str, str, tuple[str, ...]]:
    consumer = row.get("consumer") or {}
    chain = tuple(str(hop.get("function", "")) for hop in row.get("chain") or ())
    return (str(row.get("term", "")), str(consumer.get("function", "")), chain)


def attributes(row: dict[str, Any]) -> dict[str, Any]:
    return {name: row.get(name) for name in ATTRIBUTES}


def _frozen(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row.get(name) for name in ATTRIBUTES)


@dataclass
class StalenessDiff:
    available: bool = True
    new: list[dict[str, Any]] = field(default_factory=list)
    gone: list[dict[str, Any]] = field(default_factory=list)
    changed: list[dict[str, Any]] = field(default_factory=list)
    unchanged: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "available": self.available,
            "new": self.new,
            "changed": self.changed,
            "gone": self.gone,
            "unchanged": self.unchanged,
        }


def _sort(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (row_key(r), _frozen(r)))


def diff_rows(base: Sequence[dict[str, Any]], head: Sequence[dict[str, Any]]) -> StalenessDiff:
    by_base: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    by_head: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for row in base:
        by_base[row_key(row)].append(row)
    for row in head:
        by_head[row_key(row)].append(row)
    out = StalenessDiff()
    for key in sorted(set(by_base) | set(by_head)):
        before, after = by_base.get(key, []), by_head.get(key, [])
        if not before:
            out.new += _sort(after)
        elif not after:
            out.gone += _sort(before)
        elif Counter(map(_frozen, before)) != Counter(map(_frozen, after)):
            out.changed.append(
                {
                    "term": key[0],
                    "consumer": (_sort(after)[0].get("consumer") or {}),
                    "chain": _sort(after)[0].get("chain") or [],
                    "base": sorted((attributes(r) for r in before), key=str),
                    "head": sorted((attributes(r) for r in after), key=str),
                }
            )
        else:
            out.unchanged += len(after)
    return out


def staleness_diff(
    base: Sequence[dict[str, Any]] | None, head: Sequence[dict[str, Any]] | None
) -> StalenessDiff:
    if base is None or head is None:
        return StalenessDiff(available=False)
    return diff_rows(base, head)
