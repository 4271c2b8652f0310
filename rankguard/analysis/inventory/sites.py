"""Emitting sites of a source tree, from the cached per-file `emissions` facts.

Which candidate calls count as emitters is decided here, at query time, from the config's
`emitters` patterns (fnmatch on the callee text as written): the cached facts stay independent
of configuration. A summary cached before the extractor was registered (another command filled
the cache) lacks the fact; it is recomputed from the file's bytes rather than trusted.
"""

from __future__ import annotations

import ast
import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rankguard.adapters.sources import SourceFile
from rankguard.summary.emissions import FACT, FACT_VERSION, Emission, Part, extract_emissions
from rankguard.summary.ir import FileSummary
from rankguard.summary.parse import decode


@dataclass(frozen=True, order=True)
class EmitSite:
    """An emitting call, placed in the tree: `function` is module-qualified."""

    path: str
    line: int
    function: str
    kind: str
    callee: str
    parts: tuple[Part, ...]
    end_line: int

    @property
    def template(self) -> str:
        return "".join(text for _, text in self.parts)

    @property
    def location(self) -> tuple[str, int]:
        return self.path, self.line


def file_emissions(src: SourceFile, summary: FileSummary | None) -> tuple[Emission, ...]:
    """The file's emission facts: cached when current, else recomputed from its bytes."""
    fact = summary.facts.get(FACT) if summary is not None else None
    if isinstance(fact, dict) and fact.get("version") == FACT_VERSION:
        return tuple(fact["sites"])
    if summary is None:
        return ()  # the file did not parse: its error is already reported
    try:
        source = decode(src.data)
        return tuple(extract_emissions(ast.parse(source), source)["sites"])
    except (ValueError, SyntaxError, RecursionError):
        return ()


def is_emitter(emission: Emission, patterns: Sequence[str]) -> bool:
    """Built-in kinds always emit; a plain call only when a configured pattern names it."""
    return emission.kind != "call" or any(
        fnmatch.fnmatchcase(emission.callee, pat) for pat in patterns
    )


def collect_sites(
    files: Iterable[SourceFile],
    summaries: dict[str, FileSummary],
    emitters: Sequence[str],
) -> tuple[list[EmitSite], list[EmitSite]]:
    """(emitting sites, candidate calls no pattern selects), each sorted."""
    emitting: list[EmitSite] = []
    others: list[EmitSite] = []
    for src in files:
        for e in file_emissions(src, summaries.get(src.path)):
            function = f"{src.module}.{e.function}" if e.function else src.module
            site = EmitSite(src.path, e.line, function, e.kind, e.callee, e.parts, e.end_line)
            (emitting if is_emitter(e, emitters) else others).append(site)
    return sorted(emitting), sorted(others)
