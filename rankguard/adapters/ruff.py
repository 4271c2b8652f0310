"""ruff as a subprocess on files taken from a git revision, never on the working tree.

A per-PR report compares ruff at the base and at the head of a change; the working tree may be
neither (a CI checkout of a merge commit, a bare repository). So the revision's files are written
to a temporary folder together with the revision's own ruff configuration files, and ruff runs
there with `--force-exclude`, as the project's own `ruff check` would. A configuration that ruff
rejects (an `extend` pointing at a file that was not copied) is retried with `--isolated`, and
the retry is noted rather than hidden.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

CONFIG_NAMES = ("pyproject.toml", "ruff.toml", ".ruff.toml")
SYNTAX_ERROR = "syntax-error"  # ruff reports unparsable files with no code


@dataclass(frozen=True, order=True)
class Diagnostic:
    path: str  # relative to the folder ruff ran in (the revision's root)
    line: int
    code: str
    message: str


@dataclass
class RuffRun:
    diagnostics: list[Diagnostic] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None  # ruff could not run at all


def ruff_command() -> list[str]:
    """The ruff of this interpreter's environment when installed there, else the one on PATH."""
    try:
        from ruff.__main__ import find_ruff_bin  # type: ignore[import-not-found]

        return [os.fsdecode(find_ruff_bin())]
    except (ImportError, FileNotFoundError):
        found = shutil.which("ruff")
        return [found] if found else [sys.executable, "-m", "ruff"]


def config_paths(files: list[str]) -> list[str]:
    """Where ruff may look for configuration above `files`: every ancestor folder's names."""
    folders = {"."}
    for rel in files:
        for parent in PurePosixPath(rel).parents:
            folders.add(str(parent))
    return sorted(
        name if folder == "." else f"{folder}/{name}" for folder in folders for name in CONFIG_NAMES
    )


def parse_output(text: str, root: Path) -> list[Diagnostic]:
    """ruff's `--output-format json`: a list of diagnostics with absolute file names."""
    out: list[Diagnostic] = []
    for item in json.loads(text or "[]"):
        filename = Path(item.get("filename") or "")
        try:
            rel = filename.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            rel = filename.as_posix()
        location = item.get("location") or {}
        out.append(
            Diagnostic(
                rel,
                int(location.get("row") or 1),
                item.get("code") or SYNTAX_ERROR,
                str(item.get("message") or ""),
            )
        )
    return sorted(out)


def _invoke(root: Path, rels: list[str], isolated: bool) -> subprocess.CompletedProcess[str]:
    argv = [
        *ruff_command(),
        "check",
        "--output-format",
        "json",
        "--no-cache",
        "--exit-zero",
        "--force-exclude",
    ]
    if isolated:
        argv.append("--isolated")
    return subprocess.run(
        [*argv, "--", *rels], cwd=root, capture_output=True, text=True, check=False
    )


def run_ruff(files: Mapping[str, bytes], configs: Mapping[str, bytes]) -> RuffRun:
    """ruff's diagnostics for `files` (posix path -> content), with `configs` beside them."""
    if not files:
        return RuffRun()
    with tempfile.TemporaryDirectory(prefix="rankguard-ruff-") as tmp:
        root = Path(tmp)
        for rel, data in [*configs.items(), *files.items()]:
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        rels = sorted(files)
        run = RuffRun()
        try:
            proc = _invoke(root, rels, isolated=False)
            if proc.returncode != 0 and configs:
                first = (proc.stderr.strip().splitlines() or ["no message"])[0]
                run.notes.append(f"ruff rejected the revision's configuration ({first}); "
                                 "ran with --isolated")  # fmt: skip
                proc = _invoke(root, rels, isolated=True)
        except OSError as exc:
            return RuffRun(error=f"cannot run ruff: {exc.strerror or exc}")
        if proc.returncode != 0:
            message = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[0]
            return RuffRun(notes=run.notes, error=f"ruff failed: {message}")
        try:
            run.diagnostics = parse_output(proc.stdout, root)
        except (ValueError, TypeError) as exc:
            return RuffRun(notes=run.notes, error=f"ruff's JSON output did not parse: {exc}")
        return run
