"""The on-disk cache's one way to read and write an entry.

Writes are atomic (a temporary file renamed into place), so runs sharing a cache never see half
an entry; a read that fails for any reason (missing, truncated, from another version) is a
miss, and an unwritable cache only costs speed.

`COUNTS` tallies hits, misses and writes for the whole process (and the callers' units of work
redone, such as modules resolved): how tests see what a run took from the cache and what it
had to compute, without timing anything.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

COUNTS: Counter[str] = Counter()


def write_atomic(path: Path, payload: bytes) -> None:
    COUNTS["write"] += 1
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        os.replace(tmp, path)
    except OSError:
        pass


def store(path: Path | None, value: object) -> None:
    if path is None:
        return
    try:
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        return
    write_atomic(path, payload)


def load(
    path: Path | None, kind: type[T], loads: Callable[[bytes], object] = pickle.loads
) -> T | None:
    """The entry at `path` if it is a `kind` (`loads`: how it was written), else None."""
    if path is None:
        return None
    try:
        value = loads(path.read_bytes())
    except Exception:  # a miss, whatever the reason
        value = None
    found = isinstance(value, kind)
    COUNTS["hit" if found else "miss"] += 1
    return value if found else None
