"""Build a program from inline fixture files and reduce its staleness rows to short tuples."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from rankguard.adapters.sources import read_directory
from rankguard.analysis.staleness import StalenessReport, staleness
from rankguard.core.config import Config
from rankguard.model import load_program

Short = tuple[str, str, int, str, str, str, str]


def short(report: StalenessReport) -> list[Short]:
    """(term, consumer's last name, line, operation, stale_larger, cache kind or "", verdict)."""
    return [
        (
            row.term.rsplit(".", 1)[-1] if row.term.startswith("pkg.") else row.term,
            row.function.rsplit(".", 1)[-1],
            row.line,
            row.operation,
            row.stale_larger,
            row.cache.kind if row.cache else "",
            row.verdict,
        )
        for row in report.rows
    ]


@pytest.fixture
def analyse(tmp_path: Path) -> Callable[..., StalenessReport]:
    def run(files: dict[str, str], **config: object) -> StalenessReport:
        root = tmp_path / "src"
        for name, text in {"pkg/__init__.py": "", **files}.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text).lstrip("\n"))
        cfg = Config(**{k: tuple(v) for k, v in config.items()})  # type: ignore[arg-type]
        program = load_program(read_directory(root))
        return staleness(program, cfg)

    return run
