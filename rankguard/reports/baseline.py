"""Baseline files: the fingerprints of accepted findings, so `check` reports only new ones.

The file is text, one finding per line (`fingerprint rule path`), sorted by fingerprint, with
no line numbers: regenerating it after unrelated edits changes nothing, and a real change is a
one-line diff. Only the fingerprint is matched; rule and path are there for readers (and the
rule lets `--strict-baseline` ignore entries of rules that did not run). A `check --format
json` output is accepted as a baseline too.

A rule whose fingerprints change meaning raises its `fingerprint_version`; the file records
the versions that are not 1 (`# fingerprint versions: rule=2`, `fingerprint_versions` in JSON),
and a file that recorded another version (or none) for a rule that ran is named in a warning
with the count of its entries of that rule: they can match nothing, so the run says "regenerate
once" rather than turning them into silent new findings, and `--strict-baseline` does not call
them fixed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rankguard.core.errors import ErrorRecord, InputError
from rankguard.core.findings import Finding
from rankguard.pipelines.check import CheckRun
from rankguard.rules.base import Rule
from rankguard.rules.codes import aliases

HEADER = (
    "# rankguard baseline: accepted findings, one per line as `fingerprint rule path`,\n"
    "# sorted by fingerprint; only the fingerprint is matched. Regenerate with\n"
    "# `rankguard check --write-baseline FILE`.\n"
)
VERSIONS = "# fingerprint versions:"


@dataclass(frozen=True, order=True)
class Entry:
    fingerprint: str
    rule: str = ""
    path: str = ""

    def to_json(self) -> dict[str, str]:
        return {"fingerprint": self.fingerprint, "rule": self.rule, "path": self.path}


def fingerprint_versions(rules: Iterable[type[Rule]]) -> dict[str, int]:
    """The rules' fingerprint versions other than 1, by rule name."""
    return {r.name: r.fingerprint_version for r in rules if r.fingerprint_version != 1}


def format_baseline(findings: Iterable[Finding], versions: dict[str, int] | None = None) -> str:
    entries = sorted({Entry(f.fingerprint, f.rule, f.path) for f in findings})
    marks = " ".join(f"{name}={number}" for name, number in sorted((versions or {}).items()))
    head = HEADER + (f"{VERSIONS} {marks}\n" if marks else "")
    return head + "".join(f"{e.fingerprint} {e.rule} {e.path}\n" for e in entries)


def write_baseline(
    path: Path, findings: Iterable[Finding], versions: dict[str, int] | None = None
) -> int:
    text = format_baseline(findings, versions)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot write baseline: {exc.strerror or exc}") from exc
    return sum(1 for line in text.splitlines() if not line.startswith("#"))


def _from_json(data: object, path: Path) -> list[Entry]:
    items = data.get("findings") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise InputError(f"{path}: a JSON baseline must hold a `findings` list")
    out: list[Entry] = []
    for index, item in enumerate(items, start=1):
        if not isinstance(item, dict) or not isinstance(item.get("fingerprint"), str):
            raise InputError(f"{path}: finding {index} has no fingerprint")
        out.append(Entry(item["fingerprint"], str(item.get("rule", "")), str(item.get("path", ""))))
    return out


def _versions(marks: object, path: Path) -> dict[str, int]:
    """`{"rule": 2}` from JSON, or the text after `# fingerprint versions:`."""
    if isinstance(marks, str):
        pairs = [m.partition("=") for m in marks.split()]
        marks = {name: number for name, _, number in pairs}
    if not isinstance(marks, dict):
        raise InputError(f"{path}: fingerprint versions must map rule names to numbers")
    try:
        return {str(name): int(number) for name, number in marks.items()}
    except (TypeError, ValueError) as exc:
        raise InputError(f"{path}: fingerprint versions must map rule names to numbers") from exc


def read_baseline(path: Path) -> list[Entry]:
    return load_baseline(path)[0]


def load_baseline(path: Path) -> tuple[list[Entry], dict[str, int]]:
    """The entries, and the fingerprint versions the file records (absent: all 1)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot read baseline: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: baseline is not UTF-8 text") from exc
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: baseline JSON does not parse: {exc}") from exc
        marks = data.get("fingerprint_versions", {}) if isinstance(data, dict) else {}
        return sorted(set(_from_json(data, path))), _versions(marks, path)
    entries: set[Entry] = set()
    versions: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if line.startswith(VERSIONS):
            versions.update(_versions(line[len(VERSIONS) :], path))
        if not line or line.startswith("#"):
            continue
        fields = line.split(maxsplit=2)
        if not all(c in "0123456789abcdef" for c in fields[0]):
            raise InputError(f"{path}:{number}: not a fingerprint: {fields[0]!r}")
        entries.add(Entry(*fields))
    return sorted(entries), versions


def apply_baseline(findings: list[Finding], entries: Iterable[Entry]) -> tuple[list[Finding], int]:
    """(findings not in the baseline, how many were in it)."""
    accepted = {e.fingerprint for e in entries}
    kept = [f for f in findings if f.fingerprint not in accepted]
    return kept, len(findings) - len(kept)


def stale_entries(
    entries: Iterable[Entry], current: Iterable[Finding], judged: set[str]
) -> list[Entry]:
    """Entries whose finding no longer occurs, among the rules that ran (`judged`); an entry
    without a rule (a bare fingerprint) is always judged."""
    found = {f.fingerprint for f in current}
    return [e for e in entries if e.fingerprint not in found and (not e.rule or e.rule in judged)]


def outdated(
    entries: Iterable[Entry], recorded: dict[str, int], rules: Iterable[type[Rule]], path: Path
) -> tuple[list[ErrorRecord], set[str]]:
    """Warnings for the rules (of those that ran) whose fingerprints changed since the file was
    written and that it holds entries of, and those rules' spellings (never judged stale)."""
    entries = list(entries)
    warnings: list[ErrorRecord] = []
    spellings: set[str] = set()
    for rule in rules:
        names = aliases(rule)
        then = next((recorded[n] for n in sorted(names) if n in recorded), 1)
        count = sum(1 for e in entries if e.rule in names)
        if then == rule.fingerprint_version or not count:
            continue
        spellings |= names
        change = f" ({rule.fingerprint_change})" if rule.fingerprint_change else ""
        label = f"{rule.name} ({rule.code})" if rule.code else rule.name
        warnings.append(
            ErrorRecord(
                str(path),
                f"{count} {'entry' if count == 1 else 'entries'} of {label} "
                f"{'carries' if count == 1 else 'carry'} fingerprint "
                f"version {then}; this rankguard writes version {rule.fingerprint_version}"
                f"{change}, so {'it matches' if count == 1 else 'they match'} no finding and the "
                f"rule's findings show as new. Regenerate "
                f"the baseline once: rankguard check --write-baseline {path}",
            )
        )
    return warnings, spellings


def judge(run: CheckRun, path: Path, strict: bool) -> list[ErrorRecord]:
    """Hide `run`'s baselined findings; with `strict`, record the entries that are gone. An
    entry's rule may be a name, a code or a renamed rule's old name (`registry.aliases`).
    Returns warnings about entries written under an older fingerprint version (also added to
    `run.warnings`); those entries are not judged stale."""
    entries, recorded = load_baseline(path)
    run.baseline = path
    run.result.findings, run.baselined = apply_baseline(run.result.findings, entries)
    warnings, old = outdated(entries, recorded, run.rules, path)
    run.warnings += warnings
    if strict:
        judged = {alias for rule in run.rules for alias in aliases(rule)} - old
        run.stale = stale_entries(entries, run.everything, judged)
    return warnings
