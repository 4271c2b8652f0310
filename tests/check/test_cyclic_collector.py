"""The analyses run with the cyclic collector on; only loading pauses it.

Loading makes millions of acyclic objects, and the collector would re-scan them for nothing
(`model.load.paused_gc`). The analyses do make cyclic garbage: with the collector off for the
whole run, a warm `check` on sglang peaked at 1.92 GB, and at 1.52 GB with it on after
loading, same findings (`benchmarks/README`, sixth session).
"""

from __future__ import annotations

import gc
from typing import Any

import pytest

from rankguard.cli import main
from rankguard.pipelines import check
from tests.conftest import EXAMPLE


def test_rules_run_with_the_collector_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    seen: list[bool] = []
    run_rules = check.run_rules

    def recording(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return run_rules(*args, **kwargs)

    monkeypatch.setattr(check, "run_rules", recording)
    was = gc.isenabled()
    try:
        gc.enable()
        main(["check", str(EXAMPLE), "--no-cache", "--format", "json"])
    finally:
        (gc.enable if was else gc.disable)()
    capsys.readouterr()
    assert seen == [True]
