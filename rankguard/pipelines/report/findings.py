"""Findings new and resolved between base and head, matched by line-free fingerprint.

A fingerprint names functions by their module-qualified names, so a blocking call that merely
moved lines keeps its fingerprint. Code moved to another module changes those names; such
pairs (one finding gone, one come, identical once module prefixes, paths and lines are
dropped) are reported as *moved*, not as new: they need no reviewer's attention as findings.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rankguard.core.findings import Finding
from rankguard.model.program import Program

_POSITIONAL = frozenset({"path", "line", "col", "end_line", "message"})


@dataclass
class FindingDiff:
    new: list[Finding] = field(default_factory=list)
    resolved: list[Finding] = field(default_factory=list)
    moved: list[tuple[Finding, Finding]] = field(default_factory=list)  # (base, head)
    unchanged: list[Finding] = field(default_factory=list)  # as found at head

    def to_json(self) -> dict[str, Any]:
        return {
            "new": [f.to_json() for f in self.new],
            "resolved": [f.to_json() for f in self.resolved],
            "moved": [{"base": b.to_json(), "head": h.to_json()} for b, h in self.moved],
            "unchanged": len(self.unchanged),
        }


def local_names(program: Program) -> dict[str, str]:
    """Module-qualified function name -> the name inside its module (`Cls.meth`)."""
    return {
        name: ("<module>" if record.is_module_body else record.local_name)
        for name, record in program.functions.items()
    }


def _strip(value: Any, local: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return tuple(
            sorted((k, _strip(v, local)) for k, v in value.items() if k not in _POSITIONAL)
        )
    if isinstance(value, (list, tuple)):
        return tuple(_strip(v, local) for v in value)
    if isinstance(value, str):
        return local.get(value, value)
    return repr(value)


def loose_key(finding: Finding, local: dict[str, str]) -> tuple[Any, ...]:
    """A finding's identity with module prefixes, paths and lines removed."""
    return (finding.rule, _strip(finding.extra, local))


def diff_findings(
    base: Sequence[Finding],
    head: Sequence[Finding],
    base_local: dict[str, str] | None = None,
    head_local: dict[str, str] | None = None,
) -> FindingDiff:
    """`base_local` / `head_local`: each side's `local_names` (without them nothing is paired
    as moved)."""
    out = FindingDiff()
    base_prints = {f.fingerprint for f in base}
    head_prints = {f.fingerprint for f in head}
    out.unchanged = sorted(f for f in head if f.fingerprint in base_prints)
    gone = sorted(f for f in base if f.fingerprint not in head_prints)
    came = sorted(f for f in head if f.fingerprint not in base_prints)
    if base_local is None or head_local is None:
        out.new, out.resolved = came, gone
        return out
    waiting: dict[tuple[Any, ...], list[Finding]] = defaultdict(list)
    for finding in gone:
        waiting[loose_key(finding, base_local)].append(finding)
    paired: set[int] = set()
    for finding in came:
        candidates = waiting.get(loose_key(finding, head_local))
        if candidates:
            before = candidates.pop(0)
            paired.add(id(before))
            out.moved.append((before, finding))
        else:
            out.new.append(finding)
    out.resolved = [f for f in gone if id(f) not in paired]
    out.moved.sort(key=lambda pair: pair[1])
    return out
