"""Baseline files: the fingerprints of accepted findings, so `check` reports only new ones.

The file is text, one finding per line (`fingerprint rule path`), sorted by fingerprint, with
no line numbers: regenerating it after unrelated edits changes nothing, and a real change is a
one-line diff. Only the fingerprint is matched; rule and path are there for readers (and the
rule lets `--strict-baseline` ignore entries of rules that did not run). A `check --format
json` output is accepted as a baseline too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rankguard.core.errors import InputError
from rankguard.core.findings import Finding
from rankguard.pipelines.check import CheckRun
from rankguard.rules.codes import aliases

HEADER = (
    "# rankguard baseline: accepted findings, one per line as `fingerprint rule path`,\n"
    "# sorted by fingerprint; only the fingerprint is matched. Regenerate with\n"
    "# `rankguard check --write-baseline FILE`.\n"
)


@dataclass(frozen=True, order=True)
class Entry:
    fingerprint: str
    rule: str = ""
    path: str = ""

    def to_json(self) -> dict[str, str]:
        return {"fingerprint": self.fingerprint, "rule": self.rule, "path": self.path}


def format_baseline(findings: Iterable[Finding]) -> str:
    entries = sorted({Entry(f.fingerprint, f.rule, f.path) for f in findings})
    return HEADER + "".join(f"{e.fingerprint} {e.rule} {e.path}\n" for e in entries)


def write_baseline(path: Path, findings: Iterable[Finding]) -> int:
    text = format_baseline(findings)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot write baseline: {exc.strerror or exc}") from exc
    return text.count("\n") - HEADER.count("\n")


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


def read_baseline(path: Path) -> list[Entry]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot read baseline: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: baseline is not UTF-8 text") from exc
    if text.lstrip().startswith("{"):
        try:
            return sorted(set(_from_json(json.loads(text), path)))
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: baseline JSON does not parse: {exc}") from exc
    entries: set[Entry] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split(maxsplit=2)
        if not all(c in "0123456789abcdef" for c in fields[0]):
            raise InputError(f"{path}:{number}: not a fingerprint: {fields[0]!r}")
        entries.add(Entry(*fields))
    return sorted(entries)


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


def judge(run: CheckRun, path: Path, strict: bool) -> None:
    """Hide `run`'s baselined findings; with `strict`, record the entries that are gone. An
    entry's rule may be a name, a code or a renamed rule's old name (`registry.aliases`)."""
    entries = read_baseline(path)
    run.baseline = path
    run.result.findings, run.baselined = apply_baseline(run.result.findings, entries)
    if strict:
        judged = {alias for rule in run.rules for alias in aliases(rule)}
        run.stale = stale_entries(entries, run.everything, judged)
