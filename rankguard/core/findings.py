"""Findings as immutable records with a line-free identity.

Every layer above needs the same record: analyses build findings, pipelines compare them by
fingerprint across revisions, reports render them, baselines store the fingerprint alone. A
fingerprint is built from parts that survive line drift (bandit's baseline key), so moving code
never makes an old finding look new.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any


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
