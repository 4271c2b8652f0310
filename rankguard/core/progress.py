"""Progress on stderr for long runs at a terminal: phase, files, rounds; silent otherwise.

A cold run on a big tree takes tens of seconds; a pre-commit run takes about one. So a line
shows only when the stream is a terminal *and* the run has lasted `delay` seconds, is redrawn
in place at most every `interval` seconds, and is wiped when the run ends, leaving the output
as it would be without it. Piped or redirected, nothing is ever written.

Code in any layer reports through `current()`, which is a silent reporter unless the command
line installed one with `reporting(...)`; so libraries and tests pay nothing.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO


class Progress:
    """One status line: `rankguard: PHASE DONE/TOTAL UNIT  NOTE  (SECONDS s)`."""

    def __init__(
        self,
        stream: TextIO | None,
        delay: float = 2.0,
        interval: float = 0.1,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.stream = stream if stream is not None and _is_terminal(stream) else None
        self.delay = delay
        self.interval = interval
        self.clock = clock or time.monotonic
        self.start = self.clock()
        self.drawn_at: float | None = None
        self.width = 0
        self.label = ""
        self.done = 0
        self.total: int | None = None
        self.unit = ""
        self.note = ""

    def phase(self, label: str, total: int | None = None, unit: str = "") -> None:
        """A new phase (`parse`, `resolve`, `rules: blocking-before-collective`)."""
        self.label, self.total, self.unit, self.done, self.note = label, total, unit, 0, ""
        self._draw(force=True)

    def advance(self, count: int = 1, note: str | None = None) -> None:
        """`count` more done; `note` says what is being done now (a rule, a round)."""
        self.done += count
        if note is not None:
            self.note = note
        self._draw(force=note is not None)

    def close(self) -> None:
        """Wipe the line, so what follows starts at column 0 of a clean line."""
        if self.stream is not None and self.drawn_at is not None:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
        self.drawn_at = None

    def _draw(self, force: bool = False) -> None:
        if self.stream is None:
            return
        now = self.clock()
        if now - self.start < self.delay:
            return
        if not force and self.drawn_at is not None and now - self.drawn_at < self.interval:
            return
        text = f"rankguard: {self.label}"
        if self.total is not None:
            text += f" {self.done}/{self.total} {self.unit}".rstrip()
        if self.note:
            text += f"  {self.note}"
        text += f"  ({now - self.start:.0f} s)"
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()
        self.width = len(text)
        self.drawn_at = now


def _is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or not a real stream
        return False


_SILENT = Progress(None)
_active: Progress = _SILENT


def current() -> Progress:
    return _active


@contextlib.contextmanager
def reporting(stream: TextIO | None, **options: Any) -> Iterator[Progress]:
    """Install a reporter for the duration of a command (a silent one unless `stream` is a
    terminal) and wipe its line at the end, whatever happens."""
    global _active
    previous, _active = _active, Progress(stream, **options)
    try:
        yield _active
    finally:
        _active.close()
        _active = previous
