"""Shared fixtures: tiny programs written to a temporary tree and analysed statically."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from rankguard.adapters.sources import read_directory
from rankguard.core.config import Config
from rankguard.model import Program, load_program

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "toysched"


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


@pytest.fixture
def program_of(tmp_path: Path) -> Callable[..., Program]:
    """`program_of({"pkg/__init__.py": "", "pkg/m.py": "..."})` -> the analysed Program."""

    def build(files: dict[str, str], config: Config | None = None) -> Program:
        write_tree(tmp_path, files)
        config = config or Config()
        return load_program(read_directory(tmp_path, config.exclude))

    return build


def callees(program: Program, caller: str, kind: str | None = None) -> set[str]:
    return {
        callee
        for _, callee, data in program.graph.out_edges(caller, data=True)
        if kind is None or data["kind"] == kind
    }


@pytest.fixture(scope="session")
def sglang_srt() -> Path:
    """sglang 0.5.23's `sglang/srt`, for the opt-in acceptance tests.

    Set RANKGUARD_CORPUS to the folder ../shared/corpus/get-corpus.sh prints; without it these
    tests are skipped, so the suite never depends on a corpus being present.
    """
    import os

    root = os.environ.get("RANKGUARD_CORPUS")
    if not root:
        pytest.skip("set RANKGUARD_CORPUS to run acceptance tests on sglang 0.5.23")
    path = Path(root) / "sglang" / "srt"
    if not path.is_dir():
        pytest.skip(f"{path}: no sglang/srt there")
    return path


@pytest.fixture(scope="session")
def sglang_rounds_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    config = tmp_path_factory.mktemp("sglang") / "rankguard.toml"
    config.write_text('[tool.rankguard]\nrounds = ["*.event_loop_normal", "*.event_loop_pp"]\n')
    return config


def cli_json(*argv: str) -> tuple[int, dict]:
    """Run `rankguard ARGV` in-process and parse what it printed as JSON."""
    import contextlib
    import io
    import json

    from rankguard.cli import main

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(list(argv))
    return code, json.loads(buffer.getvalue())


def expected_section(title: str) -> str:
    """One `## ...` section of examples/toysched/EXPECTED.md."""
    text = (EXAMPLE / "EXPECTED.md").read_text()
    return text.split(title)[1].split("\n## ")[0]
