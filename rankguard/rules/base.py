"""Rules as plugins, in the spirit of Fixit: a small class with a name, a description and
example programs that the test suite turns into tests.

A rule sees the whole-program model through a `RuleContext` and yields immutable `Finding`s.
Each finding carries its evidence in `extra` (chain, site, reason) and a fingerprint built from
line-free parts, so moving code does not make an old finding look new (bandit's baseline key).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rankguard.core.findings import Finding, fingerprint
from rankguard.rules.session import AnalysisSession

# The plugin face: a rule author imports everything from here (README, "Writing a rule").
__all__ = [
    "Example",
    "Finding",
    "Invalid",
    "Rule",
    "RuleContext",
    "Valid",
    "example",
    "fingerprint",
]

EXPECT_MARK = re.compile(r"#\s*expect\b")


@dataclass(frozen=True)
class Example:
    """A one-module program (`example.py`), optionally with `[tool.rankguard]` settings.

    In an INVALID example, lines ending in `# expect` are exactly the lines findings must name;
    without such marks it must simply produce at least one finding.
    """

    code: str
    config: dict[str, Any] = field(default_factory=dict)

    def expected_lines(self) -> list[int]:
        return [
            number
            for number, text in enumerate(self.code.splitlines(), start=1)
            if EXPECT_MARK.search(text)
        ]


def example(code: str, **config: Any) -> Example:
    """`example(code, rounds=[...])`: config keys in snake_case, as kebab-case keys."""
    return Example(code, {k.replace("_", "-"): v for k, v in config.items()})


# Read like Fixit's: `VALID = [Valid("...")]`, `INVALID = [Invalid("...")]`.
Valid = Invalid = example


# Rules were written against `RuleContext`; it is the analysis session.
RuleContext = AnalysisSession


class Rule:
    """Subclass, set the class attributes, implement `check`."""

    name: ClassVar[str]
    code: ClassVar[str] = ""  # stable, never reused: `RG101` (rules.codes)
    description: ClassVar[str]  # one line
    help: ClassVar[str] = ""  # what to do about it, for `rankguard rules NAME` and SARIF
    # The documentation's sections, ruff-style (`rankguard rules NAME`, SARIF `help`):
    what: ClassVar[str] = ""  # what it does: what it looks for, and where
    why: ClassVar[str] = ""  # why it is bad: the failure it predicts
    instead: ClassVar[str] = ""  # use instead: the INVALID[0] example, repaired
    options: ClassVar[tuple[str, ...] | None] = None  # config keys and switches it reads
    fix: ClassVar[str | None] = None  # how `rankguard fix` repairs it; "" when it does not
    # Raised when the rule's fingerprints change meaning (baselines written before it are
    # named, not silently unmatched: `reports.baseline`); `fingerprint_change` says what changed.
    fingerprint_version: ClassVar[int] = 1
    fingerprint_change: ClassVar[str] = ""
    VALID: ClassVar[list[Example]] = []
    INVALID: ClassVar[list[Example]] = []

    def check(self, context: RuleContext) -> Iterable[Finding]:
        raise NotImplementedError
