"""The blocking rule's per-function summaries do not outlive it: the other rules read only the
analysis's facts (`entry_facts`, `infeasible`), and on sglang the summaries held 429 MiB
through the divergence analysis that came after, the run's peak (`benchmarks/README`, sixth
and seventh sessions)."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from rankguard.analysis.blocking_types import Summary
from rankguard.cli import main
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
