"""The analyses run with the cyclic collector on; only loading pauses it, and the loaded
model is frozen out of its scans while the rules run.

Loading makes millions of acyclic objects, and the collector would re-scan them for nothing
(`model.load.paused_gc`). The analyses do make cyclic garbage: with the collector off for the
whole run, a warm `check` on sglang peaked at 1.92 GB, and at 1.52 GB with it on after
loading, same findings; scanning the loaded model again cost 59 s of CPU, 18 of which
freezing it wins back (`benchmarks/README`, sixth and seventh sessions). Frozen objects are
never collected, so the model is thawed once its rules have run.
"""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

from rankguard.cli import main
from rankguard.pipelines import check, collector
from tests.conftest import EXAMPLE


def test_rules_run_with_the_collector_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    seen: list[tuple[bool, bool]] = []
    run_rules = check.run_rules

    def recording(*args: Any, **kwargs: Any) -> Any:
        seen.append((gc.isenabled(), gc.get_freeze_count() > 0))
        return run_rules(*args, **kwargs)

    monkeypatch.setattr(check, "run_rules", recording)
    was = gc.isenabled()
    try:
        gc.enable()
        main(["check", str(EXAMPLE), "--no-cache", "--format", "json"])
    finally:
        (gc.enable if was else gc.disable)()
    capsys.readouterr()
    assert seen == [(True, True)]
    assert gc.get_freeze_count() == 0  # thawed: a later program can free this one


def test_what_outlives_a_full_collection_is_frozen_until_the_rules_end(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """The analyses' memos are long-lived like the model: once they survive a full collection
    they are frozen too, so the next full collection does not scan them again
    (`pipelines.collector`). Afterwards the caller's callbacks are as they were, nothing stays
    frozen, and what was frozen meanwhile is collectable again."""
    seen: list[tuple[int, int]] = []
    run_rules = check.run_rules

    def recording(*args: Any, **kwargs: Any) -> Any:
        made = [[]]
        made[0].append(made)  # cyclic, alive: survives the full collection below
        before = gc.get_freeze_count()
        gc.collect()
        seen.append((before, gc.get_freeze_count()))
        return run_rules(*args, **kwargs)

    monkeypatch.setattr(check, "run_rules", recording)
    callbacks = list(gc.callbacks)
    main(["check", str(EXAMPLE), "--no-cache", "--format", "json"])
    capsys.readouterr()
    ((before, after),) = seen
    assert after > before > 0
    assert gc.callbacks == callbacks
    assert gc.get_freeze_count() == 0


def test_a_caller_that_froze_objects_keeps_them_frozen(capsys: pytest.CaptureFixture[str]):
    """`gc.unfreeze` thaws everything, the caller's too (a server that freezes after its
    imports), so a caller with frozen objects gets its collector back untouched: a frozen
    cycle that is garbage is still not collected after the run."""

    class Node:
        pass

    node = Node()
    node.self = node  # type: ignore[attr-defined]
    alive = weakref.ref(node)
    gc.freeze()
    try:
        del node
        main(["check", str(EXAMPLE), "--no-cache", "--format", "json"])
        gc.collect()
        assert alive() is not None
    finally:
        gc.unfreeze()
        gc.collect()
    assert alive() is None
    capsys.readouterr()


def test_the_collector_is_restored_when_a_rule_raises():
    callbacks = list(gc.callbacks)
    with pytest.raises(RuntimeError), collector.frozen():
        raise RuntimeError
    assert (gc.callbacks, gc.get_freeze_count()) == (callbacks, 0)
