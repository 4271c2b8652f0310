"""Numeric comparisons decided through the bounds other known comparisons put on a name."""

from __future__ import annotations

import pytest

from rankguard.analysis.intervals import decided
from rankguard.model.facts import FALSY, TRUTHY

PP = ("ref", ("cfg", "pp_size"))


def _cmp(op: str, n: int, flipped: bool = False) -> tuple:
    const = ("const", n)
    return ("cmp", (op,), (const, PP) if flipped else (PP, const))


@pytest.mark.parametrize(
    ("known", "asked", "answer"),
    [
        ({_cmp(">", 1): TRUTHY}, _cmp("==", 1), False),
        ({_cmp(">", 1): TRUTHY}, _cmp("!=", 1), True),
        ({_cmp(">", 1): TRUTHY}, _cmp(">=", 2), None),  # 1.5 is allowed: no rounding
        ({_cmp(">", 1): TRUTHY}, _cmp(">", 1), True),
        ({_cmp(">", 0): TRUTHY}, _cmp(">=", 1), None),  # a fraction
        ({_cmp(">=", 2): TRUTHY}, _cmp(">", 1), True),
        ({_cmp(">", 1): TRUTHY}, _cmp("==", 2), None),  # 2, 3, ... all allowed
        ({_cmp("<=", 1): TRUTHY, _cmp(">=", 1): TRUTHY}, _cmp("==", 1), True),
        ({_cmp("<", 2, flipped=True): TRUTHY}, _cmp("<=", 2), False),  # 2 < pp_size
        ({PP: 4}, _cmp(">", 1), True),
        ({_cmp(">", 1): FALSY}, _cmp("==", 1), None),  # a false fact puts no bound
        ({}, _cmp("==", 1), None),
    ],
)
def test_bounds_decide_comparisons(known: dict, asked: tuple, answer: bool | None):
    assert decided(asked, known) is answer
