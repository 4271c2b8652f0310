"""Emitting sites of a source tree, from the cached per-file `emissions` facts.

Which candidate calls count as emitters is decided here, at query time, from the config's
`emitters` patterns (fnmatch on the callee text as written), for a level method called on an
imported name from the loggers the module it comes from binds, and for a call of a project
function that emits its parameter (a logging helper such as `print_warning_once(msg)`) from
that function's facts: the cached facts stay independent of configuration and of other files.
A summary cached before the extractor was registered (another command filled the cache) lacks
the fact; it is recomputed from the file's bytes rather than trusted.
"""

from __future__ import annotations

import ast
import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from rankguard.adapters.sources import SourceFile
from rankguard.summary.emissions import FACT, FACT_VERSION, Emission, Part, extract_emissions
from rankguard.summary.ir import FileSummary
from rankguard.summary.parse import decode

_NO_FACT: dict[str, Any] = {"sites": (), "loggers": frozenset(), "wrappers": {}}


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


def file_emissions(src: SourceFile, summary: FileSummary | None) -> dict[str, Any]:
    """The file's emission fact: cached when current, else recomputed from its bytes."""
    fact = summary.facts.get(FACT) if summary is not None else None
    if isinstance(fact, dict) and fact.get("version") == FACT_VERSION:
        return fact
    if summary is None:
        return _NO_FACT  # the file did not parse: its error is already reported
    try:
        source = decode(src.data)
        return extract_emissions(ast.parse(source), source)
    except (ValueError, SyntaxError, RecursionError):
        return _NO_FACT


def is_emitter(emission: Emission, patterns: Sequence[str]) -> bool:
    """Built-in kinds always emit; a plain call only when a configured pattern names it."""
    return emission.kind != "call" or any(
        fnmatch.fnmatchcase(emission.callee, pat) for pat in patterns
    )


def _origin_module(src: SourceFile, origin: str) -> tuple[str, str]:
    """`..log:logger` imported in `src` -> ("pkg.log", "logger"), relative levels resolved."""
    module, name = origin.rsplit(":", 1)
    level = len(module) - len(module.lstrip("."))
    if level:
        package = src.module.split(".")
        if PurePosixPath(src.path).stem != "__init__":
            package = package[:-1]
        package = package[: len(package) - (level - 1)]
        module = ".".join([*package, module[level:]] if module[level:] else package)
    return module, name


def _calls_wrapper(emission: Emission, wrappers: dict[str, set[int]]) -> bool:
    """A call by name (`helper(...)`, `module.helper(...)`) of a project function that emits
    the parameter at the message argument's position."""
    *owner, name = emission.callee.split(".")
    plain = all(part.isidentifier() and part not in ("self", "cls") for part in owner)
    return plain and len(owner) <= 1 and emission.arg in wrappers.get(name, ())


def collect_sites(
    files: Iterable[SourceFile],
    summaries: dict[str, FileSummary],
    emitters: Sequence[str],
) -> tuple[list[EmitSite], list[EmitSite]]:
    """(emitting sites, candidate calls no pattern selects), each sorted."""
    facts = [(src, file_emissions(src, summaries.get(src.path))) for src in files]
    loggers = {src.module: fact["loggers"] for src, fact in facts}
    wrappers: dict[str, set[int]] = {}  # helper name -> positions of the parameter it emits
    for _, fact in facts:
        for name, position in fact["wrappers"].items():
            wrappers.setdefault(name, set()).add(position)
    emitting: list[EmitSite] = []
    others: list[EmitSite] = []
    for src, fact in facts:
        for e in fact["sites"]:
            kind = e.kind
            if e.origin:
                module, name = _origin_module(src, e.origin)
                kind = "logging" if name in loggers.get(module, ()) else kind
            if kind == "call" and _calls_wrapper(e, wrappers):
                kind = "wrapper"
            function = f"{src.module}.{e.function}" if e.function else src.module
            site = EmitSite(src.path, e.line, function, kind, e.callee, e.parts, e.end_line)
            (emitting if kind != "call" or is_emitter(e, emitters) else others).append(site)
    return sorted(emitting), sorted(others)
