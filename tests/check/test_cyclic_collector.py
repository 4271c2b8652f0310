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
from rankguard.core.findings import Finding
from rankguard.pipelines import check, collector
from rankguard.rules.base import Rule, RuleContext
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


class _Node:
    """A cycle of these is garbage only the cyclic collector frees."""

    def __init__(self) -> None:
        self.self = self


def test_cyclic_garbage_a_rule_leaves_is_freed_before_the_next_rule_starts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """A rule's memos outlive full collections while it runs, so they are frozen
    (`pipelines.collector`); once the rule returns they are garbage, and the block releases
    them between rules: thawed, collected, the survivors frozen again. Without it each rule's
    frozen garbage is held until every rule has run (the peak of `check` on sglang)."""
    left: list[weakref.ref[_Node]] = []
    seen: list[tuple[bool, bool]] = []

    class Leaver(Rule):
        name = "test-leaver"
        description = "Leaves a frozen garbage cycle behind."

        def check(self, context: RuleContext) -> list[Finding]:
            node = _Node()
            gc.collect()  # alive at a full collection inside the rules: frozen
            assert gc.get_freeze_count() > 0
            left.append(weakref.ref(node))
            return []

    class Looker(Rule):
        name = "test-looker"
        description = "Looks whether the cycle the rule before it left is gone."

        def check(self, context: RuleContext) -> list[Finding]:
            seen.append((left[0]() is None, gc.get_freeze_count() > 0))
            return []

    run_rules = check.run_rules

    def two_rules(program: Any, config: Any, rules: Any, **kwargs: Any) -> Any:
        return run_rules(program, config, [Leaver, Looker], **kwargs)

    monkeypatch.setattr(check, "run_rules", two_rules)
    main(["check", str(EXAMPLE), "--no-cache", "--format", "json"])
    capsys.readouterr()
    assert seen == [(True, True)], "the cycle the first rule left is freed, the model refrozen"
    assert gc.get_freeze_count() == 0
