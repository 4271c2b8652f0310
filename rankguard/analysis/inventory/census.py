"""Count bare and genuine hits of every row's literal in logs, streaming, one read per log.

`bare` counts lines that contain the literal (what `grep -c` says); `genuine` counts lines that
one of the row's emitting sites could have produced (`templates.LineMatcher`). One boot log had
31 bare hits and 0 genuine ones: the literal was quoted by prose, never emitted.

Logs are read once, in blocks cut at line ends, as bytes: invalid UTF-8 costs nothing and is
never decoded. Each block is searched for every row's needle with `bytes.find` (a C substring
search far faster than a regex alternation); only lines that contain a needle are looked at in
Python. Memory is bounded by the block size plus `LONG_LINE`: a longer line is searched for
bare hits window by window, and matched against templates on its last `LONG_LINE` bytes only.
"""

from __future__ import annotations

import gzip
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from rankguard.analysis.inventory.templates import LineMatcher
from rankguard.core.errors import InputError

BLOCK = 8 << 20
LONG_LINE = 64 << 20


@dataclass
class Position:
    log: str
    line: int

    def to_json(self) -> dict[str, Any]:
        return {"log": self.log, "line": self.line}

    def __str__(self) -> str:
        return f"{self.log}:{self.line}"


@dataclass
class Tally:
    """One row's counts. `inline` matchers contain the literal, so only bare lines can match
    them; `separate` ones (a literal spanning fields) are searched by their own needle."""

    needle: bytes
    inline: list[LineMatcher]
    separate: list[LineMatcher]
    bare: int = 0
    genuine: int = 0
    first_bare: Position | None = None
    last_bare: Position | None = None
    first: Position | None = None
    last: Position | None = None

    def to_json(self) -> dict[str, Any]:
        def pos(p: Position | None) -> dict[str, Any] | None:
            return p.to_json() if p else None

        return {
            "bare": self.bare,
            "genuine": self.genuine,
            "first": pos(self.first),
            "last": pos(self.last),
            "first_bare": pos(self.first_bare),
            "last_bare": pos(self.last_bare),
        }


@dataclass
class LogStats:
    path: str
    lines: int = 0
    bytes: int = 0
    long_lines: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "lines": self.lines, "bytes": self.bytes}


@dataclass
class _LineSpan:
    """Positions (in one block) of the hits of one scan, first and last."""

    first: int = -1
    last: int = -1

    def add(self, offset: int) -> None:
        if self.first < 0:
            self.first = offset
        self.last = offset


@dataclass
class _Scanner:
    tallies: Sequence[Tally]
    log: str = ""
    stats: LogStats = field(default_factory=lambda: LogStats(""))
    base: int = 0  # lines before the current block

    # -- complete lines -----------------------------------------------------------------
    def block(self, data: bytes) -> None:
        """`data` holds whole lines (the last may lack its newline at the end of a log)."""
        wanted: list[tuple[int, Tally, str]] = []  # (offset, tally, attribute) to number
        for tally in self.tallies:
            self._tally_block(tally, data, wanted)
        # One counting pass over the block numbers every wanted line, then the block's end.
        wanted.sort(key=lambda item: item[0])
        line, at = self.base + 1, 0
        for offset, tally, attr in wanted:
            line += data.count(b"\n", at, offset)
            at = offset
            setattr(tally, attr, Position(self.log, line))
        self.base = line - 1 + data.count(b"\n", at)

    def _tally_block(self, tally: Tally, data: bytes, wanted: list) -> None:
        bare, genuine = _LineSpan(), _LineSpan()
        counted: set[int] = set()
        find, rfind = data.find, data.rfind
        needle = tally.needle
        matchers = [m.matches for m in tally.inline]
        keep = bool(tally.separate)
        hits = good = 0
        pos = find(needle)
        while pos >= 0:
            start = rfind(b"\n", 0, pos) + 1
            end = find(b"\n", pos)
            if end < 0:
                end = len(data)
            hits += 1
            if bare.first < 0:
                bare.first = start
            bare.last = start
            if matchers:
                line = data[start:end]
                for matches in matchers:
                    if matches(line):
                        good += 1
                        genuine.add(start)
                        if keep:
                            counted.add(start)
                        break
            pos = find(needle, end + 1)
        tally.bare += hits
        tally.genuine += good
        for matcher in tally.separate:
            pos = find(matcher.needle)
            while pos >= 0:
                start = rfind(b"\n", 0, pos) + 1
                end = find(b"\n", pos)
                if end < 0:
                    end = len(data)
                if start not in counted and matcher.matches(data[start:end]):
                    counted.add(start)
                    tally.genuine += 1
                    genuine.add(start)
                pos = find(matcher.needle, end + 1)
        if counted:
            genuine = _LineSpan(min(counted), max(counted))
        for span, first, last in ((bare, "first_bare", "last_bare"), (genuine, "first", "last")):
            if span.first >= 0:
                if getattr(tally, first) is None:
                    wanted.append((span.first, tally, first))
                wanted.append((span.last, tally, last))

    # -- one line longer than LONG_LINE ---------------------------------------------------
    def long_line(self, windows: IO[bytes], head: bytes) -> bytes:
        """Scan a long line from `head` on, window by window; return the bytes after it."""
        self.stats.long_lines += 1
        where = Position(self.log, self.base + 1)
        overlap = max((len(t.needle) for t in self.tallies), default=1) - 1
        seen = [False] * len(self.tallies)
        kept: deque[bytes] = deque()  # the line's last LONG_LINE bytes (or a little more)
        size = 0
        previous = b""
        window = head
        while True:
            cut = window.find(b"\n")
            part = window if cut < 0 else window[:cut]
            searched = previous[len(previous) - overlap :] + part if overlap else part
            for i, tally in enumerate(self.tallies):
                if not seen[i] and tally.needle in searched:
                    seen[i] = True
            kept.append(part)
            size += len(part)
            while size - len(kept[0]) >= LONG_LINE:
                size -= len(kept.popleft())
            previous = part
            more = b"" if cut >= 0 else windows.read(BLOCK)
            self.stats.bytes += len(more)
            if cut >= 0 or not more:
                self._finish_long(b"".join(kept)[-LONG_LINE:], seen, where)
                return window[cut + 1 :] if cut >= 0 else b""
            window = more

    def _finish_long(self, tail: bytes, seen: list[bool], where: Position) -> None:
        for i, tally in enumerate(self.tallies):
            if seen[i]:
                tally.bare += 1
                tally.first_bare = tally.first_bare or where
                tally.last_bare = where
            if any(m.matches(tail) for m in (*tally.inline, *tally.separate)):
                tally.genuine += 1
                tally.first = tally.first or where
                tally.last = where
        self.base += 1


def _open(path: Path) -> IO[bytes]:
    try:
        handle: IO[bytes] = path.open("rb")
        if handle.read(2) == b"\x1f\x8b":
            handle.close()
            return gzip.open(path, "rb")
        handle.seek(0)
        return handle
    except OSError as exc:
        raise InputError(f"{path}: cannot read log: {exc.strerror or exc}") from exc


def check_logs(paths: Sequence[Path]) -> None:
    """Fail before any scanning when a log cannot be opened."""
    for path in paths:
        if path.is_dir():
            raise InputError(f"{path}: is a folder, not a log")
        _open(path).close()


def scan_log(path: Path, tallies: Sequence[Tally], label: str | None = None) -> LogStats:
    """Stream one log (plain or gzip) through every row's tally."""
    stats = LogStats(label or str(path))
    scanner = _Scanner(tallies, stats.path, stats)
    with _open(path) as handle:
        carry = b""
        while True:
            try:
                block = handle.read(BLOCK)
            except (OSError, EOFError) as exc:
                raise InputError(f"{path}: cannot read log: {exc}") from exc
            stats.bytes += len(block)
            if not block:
                if carry:
                    scanner.block(carry)
                    if not carry.endswith(b"\n"):
                        scanner.base += 1  # the last line had no newline
                break
            data = carry + block if carry else block
            cut = data.rfind(b"\n")
            if cut < 0:
                if len(data) > LONG_LINE:
                    carry = scanner.long_line(handle, data)
                    continue
                carry = data
                continue
            scanner.block(data[: cut + 1])
            carry = data[cut + 1 :]
    stats.lines = scanner.base
    return stats
