"""Matching literals and log lines against emitting calls' templates.

A template is a tuple of parts `(is_field, text)` (see `rankguard.summary.emissions`). Two
questions are asked of it:

- does an inventory's *literal* belong to it?  By default the literal must lie inside one
  constant piece: a literal that spans a format field was copied from a rendered log line, and
  matching it would need a guess of the field's value. With `across_fields` the fields become
  wildcards, and the literal matches when it is a substring of some rendering of the template.
- could a *log line* have been produced by it (a *genuine* hit)?  The template's constant pieces
  must occur in order, fields matching anything, and the template must end at the line's end
  (a log prefix before it is allowed). This is what separates a real emission from prose that
  merely quotes the literal: a bare `grep -c` cannot tell them apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

Part = tuple[bool, str]

# With `across_fields`, at least this share of the literal must be template constant text:
# otherwise wildcards alone would let almost anything "match".
_MIN_CONSTANT_SHARE = 0.5
_TRAILING = b" \t\r"


def contains_literal(parts: Sequence[Part], literal: str, across_fields: bool = False) -> bool:
    """Whether `literal` is text this template emits (see the module docstring)."""
    if any(not is_field and literal in text for is_field, text in parts):
        return True
    if not across_fields or not any(is_field for is_field, _ in parts):
        return False
    return _spans_fields(parts, literal)


def _spans_fields(parts: Sequence[Part], literal: str) -> bool:
    """Substring of a rendering where fields are wildcards, mostly made of constant text."""
    n = len(literal)
    needed = _MIN_CONSTANT_SHARE * n
    # best[j]: most constant characters used to match literal[:j] ending right after a part;
    # starting anywhere is allowed, so every start is tried per part (templates are short).
    for start_index in range(len(parts)):
        # States: (position in literal, constant chars matched), before part `i`.
        states: dict[int, int] = {}
        is_field, text = parts[start_index]
        if is_field:
            # The literal starts inside this field: the field absorbs literal[:k] for any k.
            for k in range(n + 1):
                states[k] = 0
        else:
            for offset in range(len(text)):
                tail = text[offset:]
                if literal.startswith(tail):
                    states[len(tail)] = max(states.get(len(tail), 0), len(tail))
                elif tail.startswith(literal):
                    return n >= needed  # contained in one constant piece
        for is_field, text in parts[start_index + 1 :]:
            if n in states and states[n] >= needed:
                return True
            nxt: dict[int, int] = {}
            for pos, used in states.items():
                if is_field:
                    for k in range(pos, n + 1):
                        nxt[k] = max(nxt.get(k, -1), used)
                else:
                    rest = literal[pos:]
                    if text.startswith(rest):
                        nxt[n] = max(nxt.get(n, -1), used + len(rest))
                    elif rest.startswith(text):
                        end = pos + len(text)
                        nxt[end] = max(nxt.get(end, -1), used + len(text))
            states = nxt
            if not states:
                break
        if n in states and states[n] >= needed:
            return True
    return False


@dataclass(frozen=True)
class LineMatcher:
    """One line-sized segment of a template, compiled to byte pieces for log scanning."""

    pieces: tuple[bytes, ...]  # constant pieces in order; fields sit between them
    starts_with_field: bool
    ends_with_field: bool
    anchored: bool  # the segment follows a newline in the message: it starts the log line

    @property
    def needle(self) -> bytes:
        """The longest piece: a line without it cannot match (cheap prefilter)."""
        return max(self.pieces, key=len)

    def matches(self, line: bytes) -> bool:
        """Pieces in order with anything between, the last one ending the line."""
        line = line.rstrip(_TRAILING)
        pieces = list(self.pieces)
        end = len(line)
        if not self.ends_with_field:
            last = pieces.pop()
            if not line.endswith(last):
                return False
            end -= len(last)
            if not pieces:
                return not self.anchored or self.starts_with_field or end == 0
        first = b""
        if self.anchored and not self.starts_with_field:
            first = pieces.pop(0)
        for piece in reversed(pieces):
            end = line.rfind(piece, len(first), end)
            if end < 0:
                return False
        return not first or (line.startswith(first) and len(first) <= end)


def _segments(parts: Sequence[Part]) -> list[list[Part]]:
    """The template split at newlines inside constant pieces: one segment per log line."""
    segments: list[list[Part]] = [[]]
    for is_field, text in parts:
        if is_field:
            segments[-1].append((True, text))
            continue
        lines = text.split("\n")
        for i, piece in enumerate(lines):
            if i:
                segments.append([])
            if piece:
                segments[-1].append((False, piece))
    return segments


def line_matchers(
    parts: Sequence[Part], literal: str, across_fields: bool = False
) -> list[LineMatcher]:
    """Matchers for the segments of a template that can carry `literal` on a log line."""
    out: list[LineMatcher] = []
    for index, segment in enumerate(_segments(parts)):
        if not contains_literal(segment, literal, across_fields):
            continue
        pieces: list[bytes] = []
        for is_field, text in segment:
            if not is_field:
                pieces.append(text.encode("utf-8", "surrogateescape"))
        ends_with_field = bool(segment) and segment[-1][0]
        if not ends_with_field:
            pieces[-1] = pieces[-1].rstrip(_TRAILING)
            if not pieces[-1]:
                pieces.pop()
                ends_with_field = True
        pieces = [p for p in pieces if p]
        if not pieces:
            continue
        out.append(LineMatcher(tuple(pieces), segment[0][0], ends_with_field, index > 0))
    return out
