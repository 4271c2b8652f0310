"""`check`'s text output, for people at a terminal.

Paths are relative to the current folder (so a terminal or editor can open them; JSON and
SARIF keep paths relative to the analysed root). Blocking findings are grouped by round and by
the collective they delay, each with its chain innermost first, as a stack dump reads; other
findings are one line each. A summary by rule, kind and confidence ends the output;
`statistics` replaces the findings by one count per rule (ruff's `--statistics`), `quiet`
drops everything but the findings. Colour only on a terminal, never with `NO_COLOR` set.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from rankguard.core.findings import Finding
from rankguard.pipelines.check import CheckRun
from rankguard.rules.engine import CheckResult

BLOCKING = "blocking-before-collective"


@dataclass(frozen=True)
class Style:
    """ANSI styles, or none at all."""

    on: bool = False

    def _wrap(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.on else text

    def path(self, text: str) -> str:
        return self._wrap("1", text)

    def rule(self, text: str) -> str:
        return self._wrap("31", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)


def use_colour(stream: TextIO, env: Mapping[str, str]) -> bool:
    """On a terminal, unless NO_COLOR is set to anything (https://no-color.org)."""
    if env.get("NO_COLOR", "") != "":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _short(qualname: str) -> str:
    """`pkg.mod.Cls.meth` -> `Cls.meth` when a class is in it, else the last two parts."""
    parts = qualname.split(".")
    for i, part in enumerate(parts):
        if part[:1].isupper():
            return ".".join(parts[i:])
    return ".".join(parts[-2:])


def from_here(base: Path) -> Callable[[str], str]:
    """A root-relative path -> the path from the current folder."""
    return lambda path: os.path.relpath(base / path)


def _blocking_lines(
    findings: list[Finding], where: Callable[[str], str], style: Style
) -> list[str]:
    lines: list[str] = []
    groups: dict[str, dict[tuple[str, str, int], list[Finding]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for finding in findings:
        c = finding.extra["collective"]
        groups[finding.extra["round"]][(c["callee"], c["path"], c["line"])].append(finding)

    # Collectives in the order the round reaches them (its call site in the round first).
    def order(item: tuple[tuple[str, str, int], list[Finding]]) -> tuple[int, str, int]:
        chain = item[1][0].extra["collective"].get("chain") or [{"line": 0}]
        return (chain[0]["line"], item[0][1], item[0][2])

    for round_name in sorted(groups):
        lines.append(f"round {round_name}")
        for (callee, path, line), found in sorted(groups[round_name].items(), key=order):
            lines.append(f"  before {callee}  ({style.path(f'{where(path)}:{line}')})")
            for finding in sorted(found):
                lines += _one_blocking(finding, where, style)
        lines.append("")
    return lines


def _one_blocking(finding: Finding, where: Callable[[str], str], style: Style) -> list[str]:
    b = finding.extra["blocking"]
    flags = [b["kind"]]
    if finding.extra.get("cadenced"):
        flags.append("cadenced")
    if finding.extra.get("confidence") != "high":
        flags.append(f"confidence {finding.extra.get('confidence')}")
    lines = [f"    {style.rule(b['callee'])}  [{', '.join(flags)}]  `{b['text']}`"]
    for hop in reversed(finding.extra["chain"]):  # innermost first, as a stack reads
        lines.append(f"        at {_short(hop['function'])} ({where(hop['path'])}:{hop['line']})")
    lines.append(f"      why: {b['reason']}")
    if finding.extra.get("cadence"):
        lines.append(f"      cadence: {finding.extra['cadence']}")
    if finding.extra.get("confidence_note"):
        lines.append(f"      note: {finding.extra['confidence_note']}")
    more = len(finding.extra.get("collectives", ())) - 1
    if more > 0:
        lines.append(f"      also delays {more} other collective(s) (see --format json)")
    lines.append(style.dim(f"      fingerprint {finding.fingerprint}"))
    return lines


def _label(rule: str, codes: Mapping[str, str]) -> str:
    return f"{codes[rule]} {rule}" if codes.get(rule) else rule


def _counts(counter: Counter[str]) -> str:
    return ", ".join(
        f"{key} {n}" for key, n in sorted(counter.items(), key=lambda i: (-i[1], i[0]))
    )


def summary_lines(findings: list[Finding], codes: Mapping[str, str]) -> list[str]:
    """The findings by rule, by kind of blocking call and by confidence."""
    if not findings:
        return []
    by_rule = Counter(_label(f.rule, codes) for f in findings)
    kinds = Counter(f.extra["blocking"]["kind"] for f in findings if f.rule == BLOCKING)
    confidence = Counter(str(f.extra["confidence"]) for f in findings if "confidence" in f.extra)
    out = [f"  by rule: {_counts(by_rule)}"]
    if kinds:
        out.append(f"  by kind: {_counts(kinds)}")
    if confidence:
        out.append(f"  by confidence: {_counts(confidence)}")
    return out


def statistics_lines(findings: list[Finding], codes: Mapping[str, str]) -> list[str]:
    """One row per rule, most frequent first: count, code, name (ruff's `--statistics`)."""
    counts = Counter(f.rule for f in findings)
    width = max((len(str(n)) for n in counts.values()), default=1)
    return [
        f"{n:>{width}}  {codes.get(rule) or '-':<6} {rule}"
        for rule, n in sorted(counts.items(), key=lambda i: (-i[1], i[0]))
    ]


def render_text(
    run: CheckRun,
    show_suppressed: bool = False,
    *,
    statistics: bool = False,
    quiet: bool = False,
    style: Style | None = None,
) -> str:
    style = style or Style()
    where = from_here(run.text_base)
    codes = {rule.name: rule.code for rule in run.rules}
    result: CheckResult = run.result
    if statistics:
        lines = statistics_lines(result.findings, codes)
    else:
        blocking = [f for f in result.findings if f.rule == BLOCKING]
        lines = _blocking_lines(blocking, where, style)
        for f in sorted(f for f in result.findings if f.rule != BLOCKING):
            place = style.path(f"{where(f.path)}:{f.line}")
            lines.append(f"{place}: {style.rule(_label(f.rule, codes))}: {f.message}")
    if show_suppressed and result.suppressed and not statistics:
        lines.append("suppressed:")
        for item in sorted(result.suppressed, key=lambda s: s.finding):
            f = item.finding
            reason = item.reason or "no reason given"
            at = f"{where(item.path)}:{item.line}"
            lines.append(f"  {where(f.path)}:{f.line}: {f.rule} (at {at}: {reason})")
    if not quiet:
        count = len(result.findings)
        lines.append(
            f"{count} finding{'s' if count != 1 else ''}"
            f", {len(result.suppressed)} suppressed"
            + (f", {len(run.errors)} file error(s)" if run.errors else "")
        )
        if not statistics:
            lines += summary_lines(result.findings, codes)
        if run.baseline is not None:
            lines.append(f"{run.baselined} finding(s) in the baseline {run.baseline}")
    lines += _stale_lines(run)  # failures: shown even when quiet
    return "\n".join(lines) + "\n" if lines else ""


def _stale_lines(run: CheckRun) -> list[str]:
    return [
        f"stale baseline entry {entry.fingerprint} {entry.rule} {entry.path}: "
        "no longer found (remove it, or rewrite the baseline)"
        for entry in run.stale
    ]
