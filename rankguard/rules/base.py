"""Rules as plugins, in the spirit of Fixit: a small class with a name, a description and
example programs that the test suite turns into tests.

A rule sees the whole-program model through a `RuleContext` and yields immutable `Finding`s.
Each finding carries its evidence in `extra` (chain, site, reason) and a fingerprint built from
line-free parts, so moving code does not make an old finding look new (bandit's baseline key).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

from rankguard.config import Config
from rankguard.model.program import Program

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


def fingerprint(*parts: str) -> str:
    """A stable identity from line-free parts (rule, function names, callee texts)."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()
    return digest[:20]


@dataclass(frozen=True, order=True)
class Finding:
    path: str
    line: int
    rule: str
    message: str
    fingerprint: str
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def to_json(self) -> dict[str, Any]:
        return {
            **self.extra,
            "rule": self.rule,
            "path": self.path,
            "line": self.line,
            "message": self.message,
            "fingerprint": self.fingerprint,
        }


@dataclass
class RuleContext:
    """What a rule may read. Expensive shared results are computed once, on first use."""

    program: Program
    config: Config
    options: dict[str, Any] = field(default_factory=dict)  # command-line switches, e.g.
    # {"include_round_tail": True}

    @cached_property
    def collectives(self):  # -> CollectiveCatalog
        from rankguard.rules.catalog import collective_catalog

        return collective_catalog(self.config.collectives)

    @cached_property
    def rounds(self):  # -> list[Round]
        from rankguard.audits.rounds import find_rounds

        return find_rounds(self.program, self.config.rounds, self.collectives, self.reach)

    @cached_property
    def reach(self):  # -> CollectiveReach
        from rankguard.audits.rounds import CollectiveReach

        return CollectiveReach(self.program, self.collectives)

    def cst(self, path: str):  # -> libcst.Module
        """The concrete syntax tree of one analysed file, parsed on demand with libcst."""
        import libcst

        cache = self.__dict__.setdefault("_cst", {})
        if path not in cache:
            source = self.options["read_source"](path)
            cache[path] = libcst.parse_module(source)
        return cache[path]


class Rule:
    """Subclass, set the class attributes, implement `check`."""

    name: ClassVar[str]
    description: ClassVar[str]  # one line
    help: ClassVar[str] = ""  # what to do about it, for `rankguard rules NAME` and SARIF
    VALID: ClassVar[list[Example]] = []
    INVALID: ClassVar[list[Example]] = []

    def check(self, context: RuleContext) -> Iterable[Finding]:
        raise NotImplementedError
