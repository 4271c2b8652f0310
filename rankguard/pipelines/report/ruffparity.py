"""ruff parity per changed Python file: counts by code at base and head, and the codes found on
the lines the change touched.

Changed files come from git's own tree diff (renames found), restricted to the analysed folder;
changed lines from difflib over the two contents (head line numbers). ruff runs once per side
on that side's copies of the changed files (adapters.ruff), never on the working tree.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rankguard.adapters.ruff import Diagnostic, RuffRun, config_paths, run_ruff
from rankguard.adapters.sources import PY_SUFFIXES


@dataclass(frozen=True)
class Change:
    """One changed Python file; paths are repository-relative, None when absent on a side."""

    base_path: str | None
    head_path: str | None
    base_data: bytes = field(repr=False, default=b"")
    head_data: bytes = field(repr=False, default=b"")

    @property
    def status(self) -> str:
        if self.base_path is None:
            return "added"
        if self.head_path is None:
            return "deleted"
        return "renamed" if self.base_path != self.head_path else "modified"


def _inside(path: str | None, subdir: str) -> bool:
    return path is not None and (not subdir or path.startswith(subdir + "/"))


def changed_files(base_commit: Any, head_commit: Any, subdir: str = "") -> list[Change]:
    """Python files that differ between two commits (gitpython's tree diff, no checkout)."""
    subdir = subdir.strip("/")
    out: list[Change] = []
    for item in base_commit.diff(head_commit, find_renames=True):
        a = item.a_path if item.a_blob is not None and not item.new_file else None
        b = item.b_path if item.b_blob is not None and not item.deleted_file else None
        if not any(p is not None and p.endswith(PY_SUFFIXES) for p in (a, b)):
            continue
        if not (_inside(a, subdir) or _inside(b, subdir)):
            continue
        a_data = item.a_blob.data_stream.read() if a is not None else b""
        b_data = item.b_blob.data_stream.read() if b is not None else b""
        if a is not None and b is not None and a_data == b_data and a == b:
            continue
        out.append(Change(a, b, a_data, b_data))
    return sorted(out, key=lambda c: c.head_path or c.base_path or "")


def changed_lines(before: bytes, after: bytes) -> list[int]:
    """Head line numbers (1-based) that the change inserted or replaced."""
    a, b = before.splitlines(), after.splitlines()
    lines: set[int] = set()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            lines.update(range(j1 + 1, j2 + 1))
    return sorted(lines)


def _configs(commit: Any, paths: Sequence[str]) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for rel in config_paths(list(paths)):
        try:
            blob = commit.tree / rel
        except KeyError:
            continue
        if blob.type == "blob":
            found[rel] = blob.data_stream.read()
    return found


@dataclass
class FileParity:
    path: str  # head path (base path when deleted), relative to the analysed root
    status: str
    base_path: str | None
    base: dict[str, int]
    head: dict[str, int]
    changed_lines: int
    on_changed_lines: dict[str, int]

    @property
    def delta(self) -> int:
        return sum(self.head.values()) - sum(self.base.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "status": self.status,
            "base_path": self.base_path,
            "base": dict(sorted(self.base.items())),
            "head": dict(sorted(self.head.items())),
            "base_total": sum(self.base.values()),
            "head_total": sum(self.head.values()),
            "delta": self.delta,
            "changed_lines": self.changed_lines,
            "on_changed_lines": dict(sorted(self.on_changed_lines.items())),
        }


@dataclass
class RuffParity:
    files: list[FileParity] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "files": [f.to_json() for f in self.files],
            "base_total": sum(sum(f.base.values()) for f in self.files),
            "head_total": sum(sum(f.head.values()) for f in self.files),
            "on_changed_lines": sum(sum(f.on_changed_lines.values()) for f in self.files),
            "notes": self.notes,
            "errors": self.errors,
        }


def _relative(path: str, subdir: str) -> str:
    return path[len(subdir) + 1 :] if subdir and path.startswith(subdir + "/") else path


def _by_path(run: RuffRun) -> dict[str, list[Diagnostic]]:
    out: dict[str, list[Diagnostic]] = {}
    for diag in run.diagnostics:
        out.setdefault(diag.path, []).append(diag)
    return out


def ruff_parity(
    base_commit: Any, head_commit: Any, changes: Sequence[Change], subdir: str = ""
) -> RuffParity:
    subdir = subdir.strip("/")
    base_files = {c.base_path: c.base_data for c in changes if c.base_path is not None}
    head_files = {c.head_path: c.head_data for c in changes if c.head_path is not None}
    runs = {
        "base": run_ruff(base_files, _configs(base_commit, list(base_files))),
        "head": run_ruff(head_files, _configs(head_commit, list(head_files))),
    }
    out = RuffParity()
    for label, run in runs.items():
        out.notes += [f"{label}: {note}" for note in run.notes]
        if run.error:
            out.errors.append(f"{label}: {run.error}")
    base_diags, head_diags = _by_path(runs["base"]), _by_path(runs["head"])
    for change in changes:
        before = base_diags.get(change.base_path or "", [])
        after = head_diags.get(change.head_path or "", [])
        touched = set(changed_lines(change.base_data, change.head_data))
        on_changed = Counter(d.code for d in after if d.line in touched)
        shown = change.head_path or change.base_path or ""
        out.files.append(
            FileParity(
                _relative(shown, subdir),
                change.status,
                _relative(change.base_path, subdir) if change.base_path else None,
                dict(Counter(d.code for d in before)),
                dict(Counter(d.code for d in after)),
                len(touched),
                dict(on_changed),
            )
        )
    return out
