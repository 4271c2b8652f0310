"""Values by content key, many to a file: where analyses keep per-function summaries.

One SQLite file (the standard library's) holds every entry, so a run reads only the rows it
asks for (a warm run touches a few hundred summaries of the tens of thousands a cold run
made) and writes its new ones a batch to a transaction, where a folder of small pickles would
cost a file per entry. A batch is written once it holds `BATCH` bytes, the rest at `flush`
(held to the end of the run, a cold sglang check's 200 k entries were 140 MiB of its peak).
As with `store`, anything that goes wrong is a miss: an unreadable, locked or corrupt file
costs speed, never a result.

`store.COUNTS` tallies what the callers report (summaries computed, reused), beside the
store's own hits and misses.
"""

from __future__ import annotations

import contextlib
import pickle
import sqlite3
from pathlib import Path
from typing import Any

from rankguard.adapters.store import COUNTS

BATCH = 8 << 20  # bytes of pickled entries held before they are written
_TABLE = "CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, value BLOB NOT NULL)"


class KeyedStore:
    """`path` None: a store that keeps nothing (the cache is off), or, `in_memory`, one that
    keeps what is put for its own life only (a report's base and head share one, whether the
    disk cache is on or not)."""

    def __init__(self, path: Path | None, in_memory: bool = False) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._pending: dict[str, bytes] = {}
        self._held = 0  # bytes in `_pending`
        self._broken = path is None and not in_memory

    @property
    def keeps(self) -> bool:
        """Whether what is put may be got back (no: the cache is off, or the file is broken)."""
        return not self._broken

    def _connect(self) -> sqlite3.Connection | None:
        if self._broken:
            return None
        if self._db is None:
            assert self.path is not None
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(self.path, timeout=30)
                self._db.execute(_TABLE)
            except (OSError, sqlite3.Error):
                self._broken = True
                return None
        return self._db

    def get(self, key: str) -> Any | None:
        if self._broken:
            return None
        data = self._pending.get(key)
        db = self._connect() if data is None and self.path is not None else None
        if db is not None:
            try:
                row = db.execute("SELECT value FROM entries WHERE key = ?", (key,)).fetchone()
            except sqlite3.Error:
                row = None
            data = row[0] if row else None
        if data is None:
            COUNTS["keyed miss"] += 1
            return None
        try:
            value = pickle.loads(data)
        except Exception:  # from another version, truncated: a miss
            COUNTS["keyed miss"] += 1
            return None
        COUNTS["keyed hit"] += 1
        return value

    def put(self, key: str, value: Any) -> None:
        if self._broken:
            return
        with contextlib.suppress(pickle.PicklingError, TypeError, AttributeError):
            data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            self._pending[key] = data
            self._held += len(data)
        if self._held >= BATCH and self.path is not None:
            self.flush()

    def flush(self) -> None:
        """Write what was put since the last flush, in one transaction (in memory: keep it)."""
        if self.path is None:
            return
        pending, self._pending = self._pending, {}
        self._held = 0
        db = self._connect() if pending else None
        if db is None:
            return
        try:
            with db:
                db.executemany("INSERT OR REPLACE INTO entries VALUES (?, ?)", pending.items())
            COUNTS["keyed write"] += len(pending)
        except sqlite3.Error:
            pass

    def close(self) -> None:
        self.flush()
        if self._db is not None:
            self._db.close()
            self._db = None
