"""What the rules do not read is not held while they run: the blocking rule's per-function
summaries do not outlive it (the other rules read only the analysis's facts, `entry_facts` and
`infeasible`; on sglang the summaries held 429 MiB through the divergence analysis after them,
the run's peak), and the files' bytes are dropped once the program is loaded (35 MiB on
sglang; the rules read sources from disk). `benchmarks/README`, sixth and seventh sessions."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

from rankguard.adapters.sources import SourceFile
from rankguard.analysis.blocking_types import Summary
from rankguard.cli import main
from rankguard.pipelines import check
from rankguard.rules import rank_divergent_collective
from tests.conftest import EXAMPLE


def _summaries() -> int:
    return sum(isinstance(o, Summary) for o in gc.get_objects())


def test_no_blocking_summary_is_alive_when_the_next_rule_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    alive: list[int] = []
    find = rank_divergent_collective.find_divergent_calls

    def counting(*args: Any, **kwargs: Any) -> Any:
        gc.collect()
        alive.append(_summaries())
        return find(*args, **kwargs)

    monkeypatch.setattr(rank_divergent_collective, "find_divergent_calls", counting)
    main(["check", str(EXAMPLE), "--no-cache", "--format", "json"])
    out = capsys.readouterr().out
    assert '"blocking-before-collective"' in out  # the rule ran, and found
    assert alive == [0]


def test_no_source_file_is_alive_while_the_rules_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    files: list[weakref.ref[SourceFile]] = []
    read = check.read_directory

    def reading(*args: Any) -> Any:
        tree = read(*args)
        files.extend(weakref.ref(f) for f in tree.files)
        return tree

    alive: list[int] = []
    run_rules = check.run_rules

    def counting(*args: Any, **kwargs: Any) -> Any:
        alive.append(sum(ref() is not None for ref in files))
        return run_rules(*args, **kwargs)

    monkeypatch.setattr(check, "read_directory", reading)
    monkeypatch.setattr(check, "run_rules", counting)
    main(["check", str(EXAMPLE), "--no-cache", "--format", "json"])
    capsys.readouterr()
    assert files and alive == [0]
