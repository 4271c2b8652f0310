"""The cyclic collector while the rules run: the loaded model, and then whatever outlives a full
collection, left out of its scans until the rules are done.

Loading pauses the collector (`model.load.paused_gc`) and leaves millions of objects that the
analyses only read; with the collector on for the analyses (they make cyclic garbage), every
full collection scanned them all again: 59 s of CPU on a warm sglang check, 18 s of which
freezing them wins back (`benchmarks/README`, sixth and seventh sessions).

The analyses' own memos and summaries are the same kind of object, made by the million while
the rules run: CPython starts a full collection each time the objects promoted to the oldest
generation grow by a quarter, and each one scanned everything the analyses had kept so far
(~27 full collections, ~15 s of a ~140 s warm edit run on sglang). So the survivors of each
full collection are frozen too (a `gc.callbacks` hook): the next full collection scans only what
was promoted since. What dies after being frozen would be held until the block ends: a rule's
memos die when it returns, so the block's caller releases them between rules (thaw, one full
collection, freeze the survivors again): held to the end, the rules' frozen garbage raised a
cold sglang check's peak by ~300 MiB (`benchmarks/README`, issue #14). The cost is one full
collection of everything alive per rule.

Frozen objects are never collected, so everything is thawed when the block ends: a report frees
its base's model before the head's is built (`pipelines.report.build`). `gc.unfreeze` thaws
everything, so a caller that froze objects of its own (a server that freezes after its imports)
keeps its collector untouched: nothing is frozen or thawed for it.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator
from typing import Any

Release = Callable[[], None]


def _freeze_survivors(phase: str, info: dict[str, Any]) -> None:
    if phase == "stop" and info["generation"] == 2:
        gc.freeze()


def _release() -> None:
    """Free what died since it was frozen: thaw, collect, freeze what is still alive."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def _nothing() -> None:
    pass


@contextlib.contextmanager
def frozen() -> Iterator[Release]:
    """Everything alive now, and whatever survives a full collection meanwhile, is left out of
    collections until the block ends (unless the caller had frozen objects of its own).

    Yields a release to call once a unit of work has dropped its frozen objects (between
    rules); it does nothing when the caller's own frozen objects left the collector alone."""
    if gc.get_freeze_count():  # thawing at the end would thaw the caller's too
        yield _nothing
        return
    gc.freeze()
    gc.callbacks.append(_freeze_survivors)
    try:
        yield _release
    finally:
        gc.callbacks.remove(_freeze_survivors)
        gc.unfreeze()
