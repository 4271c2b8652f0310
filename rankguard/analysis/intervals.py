"""Numeric comparisons decided by the bounds other comparisons put on the same name.

`model.facts.evaluate` decides a comparison it was told, or its negation; it does not relate
`pp_size > 1` to `pp_size == 1`. Settings validation states its checks in whatever form reads
best (`assert cfg.pp_size == 1` under elastic EP) while the launcher chose the loop on another
(`if pp_size > 1`), so the implications among settings (`analysis.settings`) read both through
the bounds they put on the one value. The value may be a float (`mem_fraction > 0` says nothing
of `mem_fraction >= 1`): a strict bound stays open, never rounded to the next integer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rankguard.model.facts import UNKNOWN, Cond, evaluate, truth

MIRRORED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
Bound = tuple[float, bool]  # (value, strict)


def comparison(cond: Cond) -> tuple[Cond, str, int | float] | None:
    """`(name, op, n)` for `name op n` (either side written first) with a number `n`."""
    if not cond or cond[0] != "cmp" or len(cond[1]) != 1:
        return None
    op, (left, right) = cond[1][0], cond[2]
    if left[0] == "const" and right[0] == "ref":
        op, left, right = MIRRORED.get(op, ""), right, left
    if left[0] != "ref" or right[0] != "const" or op not in MIRRORED:
        return None
    bound = right[1]
    if not isinstance(bound, (int, float)) or isinstance(bound, bool):
        return None
    return left, op, bound


def decided(cond: Cond, facts: Mapping[Cond, Any]) -> bool | None:
    """The truth of `cond` under `facts`, reading bounds where plain evaluation cannot decide
    (None: still unknown)."""
    found = truth(evaluate(cond, facts))
    if found is not None:
        return found
    compared = comparison(cond)
    if compared is None:
        return None
    name, op, n = compared
    low, high = bounds(name, facts)
    below = high[0] < n or (high[0] == n and high[1])  # every allowed value is < n
    above = low[0] > n or (low[0] == n and low[1])  # every allowed value is > n
    only = low == high == (n, False)  # n is the one allowed value
    answers = {
        "==": (only, below or above),
        "!=": (below or above, only),
        "<": (below, low[0] >= n),
        "<=": (below or high == (n, False), above),
        ">": (above, high[0] <= n),
        ">=": (above or low == (n, False), below),
    }
    yes, no = answers[op]
    return True if yes else (False if no else None)


def bounds(name: Cond, facts: Mapping[Cond, Any]) -> tuple[Bound, Bound]:
    """The tightest (low, high) the true comparisons on `name` allow, each (value, strict)."""
    low: Bound = (-math.inf, False)
    high: Bound = (math.inf, False)
    exact = facts.get(name, UNKNOWN)
    if isinstance(exact, (int, float)) and not isinstance(exact, bool):
        return (exact, False), (exact, False)
    for cond, value in facts.items():
        compared = comparison(cond)
        if compared is None or compared[0] != name or truth(value) is not True:
            continue
        _, op, n = compared
        if op in (">", ">=", "=="):
            low = max(low, (n, op == ">"))  # at the same value a strict bound is tighter
        if op in ("<", "<=", "=="):
            high = min(high, (n, op == "<"), key=lambda b: (b[0], not b[1]))
    return low, high
