"""The rules run with room for deep recursion (`core.stack`): the model's lazy questions and
the walks recurse with the code analysed, and on sglang a check came within a few dozen frames
of Python's default limit (inside pytest one function's rule failed). The caller's limit is
back afterwards."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from rankguard.core.findings import Finding
from rankguard.core.stack import DEEP
from rankguard.rules.base import Rule, RuleContext
from tests.check.helpers import check_files


class _Deep(Rule):
    """A rule that recurses deeper than Python's default limit allows."""

    name = "test-deep"
    description = "recurses"

    def check(self, context: RuleContext) -> Iterable[Finding]:
        def down(n: int) -> int:
            return 0 if n == 0 else 1 + down(n - 1)

        assert down(5_000) == 5_000
        return ()


def test_rules_run_with_room_for_deep_recursion(tmp_path: Path):
    before = sys.getrecursionlimit()
    result = check_files(tmp_path, {"mod.py": "x = 1\n"}, [_Deep])
    assert result.failures == [], result.failures
    assert sys.getrecursionlimit() == before
    assert DEEP > 5_000
