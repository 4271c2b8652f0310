"""Every registered rule's VALID and INVALID examples, as tests (Fixit's convention).

A VALID example must produce no finding; an INVALID one must produce findings on exactly the
lines marked `# expect` (or at least one finding when nothing is marked).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rankguard.rules.base import Example, Rule
from rankguard.rules.registry import all_rules
from tests.check.helpers import check_example


def _cases(valid: bool) -> list:
    cases = []
    for name, rule in all_rules().items():
        examples = rule.VALID if valid else rule.INVALID
        for index, example in enumerate(examples, start=1):
            cases.append(pytest.param(rule, example, id=f"{name}-{index}"))
    return cases


def test_every_rule_has_examples():
    for name, rule in all_rules().items():
        assert rule.VALID and rule.INVALID, f"{name} needs VALID and INVALID examples"
        assert rule.description, f"{name} needs a description"


@pytest.mark.parametrize(("rule", "example"), _cases(valid=True))
def test_valid_example(tmp_path: Path, rule: type[Rule], example: Example):
    findings = check_example(tmp_path, rule, example)
    assert findings == [], "\n".join(f"{f.line}: {f.message}" for f in findings)


@pytest.mark.parametrize(("rule", "example"), _cases(valid=False))
def test_invalid_example(tmp_path: Path, rule: type[Rule], example: Example):
    findings = check_example(tmp_path, rule, example)
    expected = example.expected_lines()
    got = sorted({f.line for f in findings if f.path == "example.py"})
    if expected:
        assert got == sorted(expected), "\n".join(f"{f.line}: {f.message}" for f in findings)
    else:
        assert findings
