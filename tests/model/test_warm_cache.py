"""A warm run (summaries and resolution from the cache) answers exactly as a cold one."""

from __future__ import annotations

from pathlib import Path

import pytest

from rankguard.cli import main
from tests.conftest import EXAMPLE


@pytest.mark.parametrize("command", ["rounds", "check", "staleness", "graph"])
def test_warm_run_equals_cold_run(capsys, tmp_path: Path, command: str):
    argv = [command, str(EXAMPLE), "--format", "json", "--cache-dir", str(tmp_path)]
    cold_code = main(argv)
    cold = capsys.readouterr().out
    assert list((tmp_path / "programs").glob("*.pickle")), "resolution was not cached"
    warm_code = main(argv)
    assert (warm_code, capsys.readouterr().out) == (cold_code, cold)
