"""Assemble the report's sections and its one-line verdict.

The JSON form (`Report.to_json`) is the single source every renderer reads: Markdown, HTML and
JSON cannot disagree. Paths are relative to the analysed folder (the repository root unless a
sub-folder is given).
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rankguard.adapters.keyed import KeyedStore
from rankguard.analysis.inventory.table import Inventory
from rankguard.core.config import Config
from rankguard.core.errors import ErrorRecord
from rankguard.model.load import Shared
from rankguard.pipelines.report.findings import FindingDiff, diff_findings
from rankguard.pipelines.report.literals import (
    BrokenRow,
    LiteralDiff,
    broken_rows,
    diff_literals,
    side_sites,
)
from rankguard.pipelines.report.ruffparity import RuffParity, changed_files, ruff_parity
from rankguard.pipelines.report.sides import Side, commit_of, load_side
from rankguard.pipelines.report.staleness import RowSource, StalenessDiff, staleness_diff
from rankguard.rules.base import Rule
from rankguard.summary.parse import SummaryCache

FAIL_ON = ("new", "any", "none")


@dataclass
class Report:
    repo: str
    subdir: str
    base: Side
    head: Side
    findings: FindingDiff
    staleness: StalenessDiff
    literals: LiteralDiff
    ruff: RuffParity
    changed: list[str]
    inventory: Inventory | None = None
    broken: list[BrokenRow] = field(default_factory=list)
    errors: list[ErrorRecord] = field(default_factory=list)  # head's, and the report's own

    @property
    def base_errors(self) -> list[ErrorRecord]:
        return sorted(self.base.errors)

    def exit_code(self, fail_on: str) -> int:
        if self.errors:
            return 2
        if fail_on == "new":
            return 1 if self.findings.new else 0
        if fail_on == "any":
            return 1 if self.head.result.findings else 0
        return 0

    def verdict(self) -> dict[str, Any]:
        new, resolved = len(self.findings.new), len(self.findings.resolved)
        st = self.staleness
        stale = len(st.new) + len(st.changed)
        ruff_new = sum(sum(f.on_changed_lines.values()) for f in self.ruff.files)
        if self.errors:
            status = "error"
        elif new:
            status = "new-findings"
        else:
            status = "clean"
        parts = [
            f"{new} new finding{'s' if new != 1 else ''}",
            f"{resolved} resolved",
            f"{len(self.findings.moved)} moved",
        ]
        if st.available:
            parts.append(f"{stale} staleness row{'s' if stale != 1 else ''} new or changed")
        parts.append(f"{self.literals.count} emitted literal change(s)")
        if self.inventory is not None:
            parts.append(f"{len(self.broken)} inventory row(s) broken")
        parts.append(f"ruff {ruff_new} on changed lines in {len(self.ruff.files)} file(s)")
        if self.errors:
            parts.append(f"{len(self.errors)} error(s)")
        head = {"error": "ERROR", "new-findings": "FAIL", "clean": "PASS"}[status]
        return {
            "status": status,
            "text": f"{head}: " + ", ".join(parts),
            "new": new,
            "resolved": resolved,
            "moved": len(self.findings.moved),
            "staleness": stale,
            "literals": self.literals.count,
            "inventory_broken": len(self.broken) if self.inventory is not None else None,
            "ruff_on_changed_lines": ruff_new,
            "errors": len(self.errors),
        }

    def to_json(self) -> dict[str, Any]:
        inventory = None
        if self.inventory is not None:
            inventory = {
                "path": self.inventory.path,
                "rows": len(self.inventory.rows),
                "broken": [row.to_json() for row in self.broken],
            }
        return {
            "repo": self.repo,
            "repo_name": Path(self.repo).resolve().name,  # what HTML and Markdown show
            "subdir": self.subdir,
            "base": self.base.to_json(),
            "head": self.head.to_json(),
            "summary": self.verdict(),
            "changed_files": self.changed,
            "findings": self.findings.to_json(),
            "staleness": self.staleness.to_json(),
            "emitted_literals": self.literals.to_json(),
            "inventory": inventory,
            "ruff": self.ruff.to_json(),
            "errors": [e.to_json() for e in self.errors],
            "base_errors": [e.to_json() for e in self.base_errors],
        }


def _relative(path: str, subdir: str) -> str | None:
    if not subdir:
        return path
    return path[len(subdir) + 1 :] if path.startswith(subdir + "/") else None


def build_report(
    repo_path: Path,
    base_rev: str,
    head_rev: str,
    config: Config,
    cache: SummaryCache,
    rules: Sequence[type[Rule]],
    subdir: str = "",
    inventory: Inventory | None = None,
    staleness_source: RowSource | None = None,
) -> Report:
    subdir = subdir.strip("/")
    # The head re-uses the base's resolution where the modules agree, and its kept summaries
    # where the keys do; in memory only: the disk cache keeps what `check` keeps.
    shared: Shared = {}
    kept = KeyedStore(None, in_memory=True)
    base = load_side("base", repo_path, base_rev, subdir, config, cache, rules,
                     staleness_source, shared, kept)  # fmt: skip
    # The base's model is cyclic (program <-> resolver) and loading pauses the collector: free
    # it now, or it is still there while the head's model is built.
    gc.collect()
    head = load_side("head", repo_path, head_rev, subdir, config, cache, rules,
                     staleness_source, shared, kept)  # fmt: skip
    base_commit, head_commit = commit_of(repo_path, base.commit), commit_of(repo_path, head.commit)
    changes = changed_files(base_commit, head_commit, subdir)
    base_paths = {p for c in changes if c.base_path and (p := _relative(c.base_path, subdir))}
    head_paths = {p for c in changes if c.head_path and (p := _relative(c.head_path, subdir))}
    findings = diff_findings(
        base.result.findings, head.result.findings, base.local_names, head.local_names
    )
    literals = diff_literals(
        side_sites(base, config, base_paths), side_sites(head, config, head_paths)
    )
    parity = ruff_parity(base_commit, head_commit, changes, subdir)
    report = Report(
        repo=str(repo_path),
        subdir=subdir,
        base=base,
        head=head,
        findings=findings,
        staleness=staleness_diff(base.staleness, head.staleness),
        literals=literals,
        ruff=parity,
        changed=sorted(base_paths | head_paths),
        inventory=inventory,
    )
    if inventory is not None:
        report.broken = broken_rows(inventory, base, head, config)
        report.errors += inventory.errors
    report.errors += head.errors
    report.errors += base.result.failures + head.result.failures  # rules that raised
    report.errors += [ErrorRecord("<ruff>", message) for message in parity.errors]
    report.errors = sorted(set(report.errors))
    return report
