"""Run rules over one program: selection, suppressions, unique fingerprints, stable order.

Kept apart from the command so `rankguard report` can run the same checks on a PR's base and
head and compare fingerprints.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rankguard.config import Config
from rankguard.errors import InputError
from rankguard.model.program import Program
from rankguard.rules.base import Finding, Rule, RuleContext, fingerprint


@dataclass
class Suppressed:
    finding: Finding
    path: str
    line: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            **self.finding.to_json(),
            "suppressed_at": {"path": self.path, "line": self.line},
            "reason": self.reason,
        }


@dataclass
class CheckResult:
    findings: list[Finding] = field(default_factory=list)
    suppressed: list[Suppressed] = field(default_factory=list)


def choose(
    rules: dict[str, type[Rule]], select: Sequence[str] = (), ignore: Sequence[str] = ()
) -> list[type[Rule]]:
    """`--select` / `--ignore` by rule name; an unknown name is a usage error naming it."""
    for name in [*select, *ignore]:
        if name not in rules:
            known = ", ".join(sorted(rules))
            raise InputError(f"unknown rule '{name}' (known rules: {known})")
    chosen = [rules[n] for n in sorted(rules) if (not select or n in select) and n not in ignore]
    return chosen


def _locations(finding: Finding) -> list[tuple[str, int]]:
    """Where an inline suppression may sit: the finding's line and every call line of its
    chain (and, for a blocking call, the blocking line itself)."""
    out = [(finding.path, finding.line)]
    for hop in finding.extra.get("chain", ()) or ():
        out.append((hop["path"], hop["line"]))
    blocking = finding.extra.get("blocking")
    if isinstance(blocking, dict) and "path" in blocking:
        out.append((blocking["path"], blocking["line"]))
    return out


def _suppression(program: Program, finding: Finding) -> tuple[str, int, str] | None:
    by_path = {m.path: m.summary for m in program.modules.values()}
    for path, line in _locations(finding):
        summary = by_path.get(path)
        if summary is None:
            continue
        entry = summary.suppressions.get(line)
        if entry is None:
            continue
        rules, reason = entry
        if not rules or finding.rule in rules:
            return path, line, reason
    return None


def unique_fingerprints(findings: Iterable[Finding]) -> list[Finding]:
    """Findings with equal line-free identity (the same call twice in one function) are told
    apart by their order, which line drift above them does not change."""
    ordered = sorted(findings)
    seen: dict[str, int] = {}
    out: list[Finding] = []
    for finding in ordered:
        count = seen.get(finding.fingerprint, 0)
        seen[finding.fingerprint] = count + 1
        if count:
            finding = replace(finding, fingerprint=fingerprint(finding.fingerprint, str(count)))
        out.append(finding)
    return out


def run_rules(
    program: Program,
    config: Config,
    rules: Sequence[type[Rule]],
    options: dict[str, Any] | None = None,
) -> CheckResult:
    context = RuleContext(program, config, dict(options or {}))
    found: list[Finding] = []
    for rule_class in rules:
        found.extend(rule_class().check(context))
    result = CheckResult()
    for finding in unique_fingerprints(found):
        hit = _suppression(program, finding)
        if hit is None:
            result.findings.append(finding)
        else:
            result.suppressed.append(Suppressed(finding, *hit))
    return result
