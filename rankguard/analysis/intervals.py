"""Integer comparisons decided by the bounds other comparisons put on the same name.

`model.facts.evaluate` decides a comparison it was told, or its negation; it does not relate
`pp_size > 1` to `pp_size == 1`. Settings validation states its checks in whatever form reads
best (`assert cfg.pp_size == 1` under elastic EP) while the launcher chose the loop on another
(`if pp_size > 1`), so the implications among settings (`analysis.settings`) read both through
the bounds they put on the one value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rankguard.model.facts import UNKNOWN, Cond, evaluate, truth

_MIRRORED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def decided(cond: Cond, facts: Mapping[Cond, Any]) -> bool | None:
    """The truth of `cond` under `facts`, reading integer bounds where plain evaluation
    cannot decide (None: still unknown)."""
    found = truth(evaluate(cond, facts))
    if found is not None:
        return found
    compared = _comparison(cond)
    if compared is None:
        return None
    name, op, bound = compared
    low, high = _bounds(name, facts)
    if op == "==":
        return False if not low <= bound <= high else (True if low == high else None)
    if op == "!=":
        return True if not low <= bound <= high else (False if low == high else None)
    holds = {
        "<": (high < bound, low >= bound),
        "<=": (high <= bound, low > bound),
        ">": (low > bound, high <= bound),
        ">=": (low >= bound, high < bound),
    }.get(op)
    if holds is None:
        return None
    return True if holds[0] else (False if holds[1] else None)


def _comparison(cond: Cond) -> tuple[Cond, str, int] | None:
    """`(name, op, n)` for `name op n` (either side written first) with an integer `n`."""
    if not cond or cond[0] != "cmp" or len(cond[1]) != 1:
        return None
    op, (left, right) = cond[1][0], cond[2]
    if left[0] == "const" and right[0] == "ref":
        op, left, right = _MIRRORED.get(op, ""), right, left
    if left[0] != "ref" or right[0] != "const" or op not in _MIRRORED:
        return None
    bound = right[1]
    if not isinstance(bound, int) or isinstance(bound, bool):
        return None
    return left, op, bound


def _bounds(name: Cond, facts: Mapping[Cond, Any]) -> tuple[float, float]:
    """The tightest integer interval the true comparisons on `name` allow."""
    low, high = -math.inf, math.inf
    exact = facts.get(name, UNKNOWN)
    if isinstance(exact, int) and not isinstance(exact, bool):
        return exact, exact
    for cond, value in facts.items():
        compared = _comparison(cond)
        if compared is None or compared[0] != name or truth(value) is not True:
            continue
        _, op, n = compared
        if op in (">", ">="):
            low = max(low, n + 1 if op == ">" else n)
        elif op in ("<", "<="):
            high = min(high, n - 1 if op == "<" else n)
        elif op == "==":
            low, high = max(low, n), min(high, n)
    return low, high
