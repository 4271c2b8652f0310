"""The loaded model, out of the cyclic collector's scans while the rules run.

Loading pauses the collector (`model.load.paused_gc`) and leaves millions of objects that the
analyses only read; with the collector on for the analyses (they make cyclic garbage), every
full collection scanned them all again: 59 s of CPU on a warm sglang check, 18 s of which
freezing them wins back (`benchmarks/README`, sixth and seventh sessions). Frozen objects are
never collected, so they are thawed when the block ends: a report frees its base's model
before the head's is built (`pipelines.report.build`).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def frozen() -> Iterator[None]:
    """Everything alive now is left out of collections until the block ends."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
