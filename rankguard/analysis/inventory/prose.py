"""Where a literal survives outside emitting calls, and what each place is.

A row is `prose-only` when its literal is found in no emitting call but still in the source.
"Prose" is too vague to act on: an auditor reading "prose-only" for a warning that is in fact
emitted by a call the tool did not recognise concludes that it was commented out. So each hit
says what it is: a `comment`, a `docstring` (a string standing alone as a statement), a `string
argument` of some call, another `string`, or a `call` nothing recognises as an emitter, naming
its callee so that the user can add it to `emitters`.

The search is one byte search per file (and the literal's words across line breaks, as a
comment or docstring wraps them); only files with a hit are tokenised and parsed to tell the
kinds apart, and only for rows that found no emitting site.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from rankguard.adapters.sources import SourceFile
from rankguard.analysis.inventory.sites import EmitSite
from rankguard.analysis.inventory.templates import contains_literal
from rankguard.summary.parse import decode

KINDS = ("call", "comment", "docstring", "string argument", "string")


@dataclass(frozen=True, order=True)
class Prose:
    path: str
    line: int
    kind: str  # one of KINDS
    callee: str = ""  # the call's callee (kind `call`, `string argument`)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "line": self.line, "kind": self.kind}
        if self.callee:
            out["callee"] = self.callee
        return out

    @property
    def what(self) -> str:
        r"""`comment`, `call \`parser.error\``: the kind, naming the callee when there is one."""
        return f"{self.kind} `{self.callee}`" if self.callee else self.kind

    def __str__(self) -> str:
        return f"{self.path}:{self.line} ({self.what})"


def _prose_pattern(literal: str) -> re.Pattern[bytes] | None:
    """The literal as it may be wrapped in a comment or docstring: spaces may become a line
    break followed by `#` or quotes; None when the literal has no inner whitespace."""
    words = literal.split()
    if len(words) < 2:
        return None
    return re.compile(rb"[\s#\"']+".join(re.escape(w.encode("utf-8")) for w in words))


def _hits(literal: str, data: bytes) -> list[int]:
    """Byte offsets where the literal (or its words wrapped over lines) starts."""
    needle = literal.encode("utf-8")
    found: set[int] = set()
    pos = data.find(needle)
    while pos >= 0:
        found.add(pos)
        pos = data.find(needle, pos + 1)
    pattern = _prose_pattern(literal)
    first_word = literal.split()[0].encode("utf-8") if literal.split() else needle
    if pattern is not None and first_word in data:  # cheap prefilter before the regex
        found.update(match.start() for match in pattern.finditer(data))
    return sorted(found)


Span = tuple[tuple[int, int], tuple[int, int]]  # (line, byte column) start and end


class _Kinds:
    """What lies at a position of one file: comments (from tokens), and strings with their
    role (from the tree): standing alone as a statement, argument of a call, or other."""

    def __init__(self, data: bytes) -> None:
        text = decode(data)
        lines = text.splitlines(keepends=True)

        def byte_column(line: int, column: int) -> int:
            return len(lines[line - 1][:column].encode("utf-8")) if line <= len(lines) else column

        self.comments: list[Span] = []
        try:
            for tok in tokenize.generate_tokens(io.StringIO(text).readline):
                if tok.type == tokenize.COMMENT:
                    (sl, sc), (el, ec) = tok.start, tok.end
                    self.comments.append(((sl, byte_column(sl, sc)), (el, byte_column(el, ec))))
        except (tokenize.TokenError, SyntaxError):
            pass  # a truncated file: what was tokenised still counts
        self.strings: list[tuple[Span, str, str]] = []  # span, kind, callee
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError):
            return
        roles: dict[int, tuple[str, str]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Expr):
                roles.setdefault(id(node.value), ("docstring", ""))
            elif isinstance(node, ast.Call):
                callee = ast.unparse(node.func)
                for arg in [*node.args, *(k.value for k in node.keywords)]:
                    for inner in ast.walk(arg):
                        roles.setdefault(id(inner), ("string argument", callee))
            is_text = isinstance(node, ast.Constant) and isinstance(node.value, str)
            if is_text or isinstance(node, ast.JoinedStr):
                kind, callee = roles.get(id(node), ("string", ""))
                end = (node.end_lineno or node.lineno, node.end_col_offset or 0)
                self.strings.append((((node.lineno, node.col_offset), end), kind, callee))

    def kind_at(self, where: tuple[int, int]) -> tuple[str, str]:
        """The kind (and callee) of what lies at (line, byte column)."""
        for start, end in self.comments:
            if start <= where <= end:
                return "comment", ""
        inside = [s for s in self.strings if s[0][0] <= where <= s[0][1]]
        if not inside:
            return "string", ""
        (_, kind, callee) = min(inside, key=lambda s: (s[0][1][0] - s[0][0][0], s[0][1][1]))
        return kind, callee


def _position(data: bytes, offset: int) -> tuple[int, int]:
    """(line, byte column) of a byte offset."""
    return data.count(b"\n", 0, offset) + 1, offset - (data.rfind(b"\n", 0, offset) + 1)


@lru_cache(maxsize=64)
def _kinds_of(data: bytes) -> _Kinds:
    """One tokenise-and-parse per file content however many rows search it (bytes keep their
    hash, so the key costs one pass per file)."""
    return _Kinds(data)


def find_prose(
    literal: str, files: Iterable[SourceFile], non_emitting: Iterable[EmitSite]
) -> list[Prose]:
    """Every place the literal survives outside emitting calls, with what it is."""
    found: dict[tuple[str, int], Prose] = {}
    spans: dict[str, list[tuple[int, int]]] = {}  # lines of the calls found, by path
    for site in non_emitting:
        if contains_literal(site.parts, literal):
            found[site.location] = Prose(site.path, site.line, "call", site.callee)
            spans.setdefault(site.path, []).append((site.line, site.end_line))
    for src in files:
        offsets = _hits(literal, src.data)
        if not offsets:
            continue
        kinds = _kinds_of(src.data)
        for offset in offsets:
            line, column = _position(src.data, offset)
            if any(first <= line <= last for first, last in spans.get(src.path, ())):
                continue  # the argument of a call already listed
            kind, callee = kinds.kind_at((line, column))
            found.setdefault((src.path, line), Prose(src.path, line, kind, callee))
    return sorted(found.values())
