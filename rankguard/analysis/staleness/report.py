"""From composed flows to the contract's rows (DESIGN.md §4 `staleness`).

`operation` is the sign of the term in the consumer's value (`compared` when the term sits on
one side of an admitting comparison); `stale_larger` what a stale, too-large value does there
(added, or on the permissive side of a comparison: widens; subtracted: narrows); `stale_error`
which way a stale reading of the term errs (catalog `errs`). The verdict composes both: unsafe
when the way it errs widens the budget, safe when it narrows it, flipped for consumers declared
`smaller-is-risky`. The verdict is about cached terms: an uncached row's verdict is `n/a`.
`stale-widening-term` reports the rows that are cached *and* unsafe.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any

from rankguard.analysis.staleness.algebra import NEG, POS, CacheInfo, Composite
from rankguard.analysis.staleness.flow import Flows, Row
from rankguard.catalogs.driver_terms import term_catalog
from rankguard.core.chains import Hop, chain_json
from rankguard.core.config import Config
from rankguard.core.errors import ErrorRecord
from rankguard.core.stack import deep_recursion
from rankguard.model.program import Program

_OPERATION = {POS: "added", NEG: "subtracted"}
_STALE = {POS: "widens", NEG: "narrows"}


@dataclass(frozen=True)
class TermRow:
    term: str
    term_path: str
    term_line: int
    cache: CacheInfo | None
    function: str
    path: str
    line: int
    operation: str
    stale_larger: str
    verdict: str
    chain: tuple[Hop, ...]
    smaller_is_risky: bool = False
    composite: Composite | None = None
    stale_error: str = "large"

    @property
    def cached(self) -> bool:
        return self.cache is not None

    def sort_key(self) -> tuple[Any, ...]:
        cache = self.cache or CacheInfo("", "", "", 0)
        return (
            self.term,
            self.term_path,
            self.term_line,
            self.path,
            self.line,
            self.function,
            cache,
            self.operation,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "term": self.term,
            "term_site": {"path": self.term_path, "line": self.term_line},
            "cached": self.cached,
            "cache": None,
            "consumer": {"function": self.function, "path": self.path, "line": self.line},
            "operation": self.operation,
            "stale_larger": self.stale_larger,
            "verdict": self.verdict,
            "stale_error": self.stale_error,
            "chain": chain_json(self.chain),
        }
        if self.cache is not None:
            out["cache"] = {
                "kind": self.cache.kind,
                "where": self.cache.where,
                "path": self.cache.path,
                "line": self.cache.line,
                "detail": self.cache.detail,
            }
        if self.smaller_is_risky:
            out["smaller_is_risky"] = True
        if self.composite is not None:
            out["expression"] = self.composite.expression
            out["contains"] = [
                {"term": name, "sign": _OPERATION.get(sign, "unknown")}
                for name, sign in self.composite.members
            ]
        return out


@dataclass
class StalenessReport:
    rows: list[TermRow] = field(default_factory=list)
    errors: list[ErrorRecord] = field(default_factory=list)
    rounds: int = 0
    evaluated: int = 0

    @property
    def unsafe_cached(self) -> list[TermRow]:
        return [r for r in self.rows if r.cached and r.verdict == "unsafe"]

    def to_json(self) -> dict[str, Any]:
        return {
            "terms": [row.to_json() for row in self.rows],
            "errors": [e.to_json() for e in self.errors],
        }


def _verdict(sign: int, errs: str, flipped: bool, cached: bool) -> str:
    """Unsafe when a stale reading, erring the way the term errs, moves the consumer the risky
    way (larger, or smaller for a `smaller-is-risky` consumer)."""
    if not cached:
        return "n/a"
    if sign not in (POS, NEG):
        return "unknown"
    if errs == "either":
        return "unsafe"
    moves = sign if errs == "large" else -sign  # +1: the consumer comes out larger
    return "unsafe" if (moves == NEG) == flipped else "safe"


def _row(raw: Row, composites: dict, risky: tuple[str, ...]) -> TermRow:
    flipped = any(fnmatch.fnmatchcase(raw.function, pat) for pat in risky)
    return TermRow(
        term=raw.src.name,
        term_path=raw.src.path,
        term_line=raw.src.line,
        cache=raw.cache,
        function=raw.function,
        path=raw.path,
        line=raw.line,
        operation="compared" if raw.compared else _OPERATION.get(raw.sign, "unknown"),
        stale_larger=_STALE.get(raw.sign, "unknown"),
        verdict=_verdict(raw.sign, raw.src.errs, flipped, raw.cache is not None),
        chain=raw.chain,
        smaller_is_risky=flipped,
        composite=composites.get(raw.src),
        stale_error=raw.src.errs,
    )


def staleness(program: Program, config: Config) -> StalenessReport:
    """Every (term, consumer) row of the program, sorted."""
    with deep_recursion():
        analysis = Flows(program, term_catalog(config.driver_terms), config).run()
    rows = sorted(
        {_row(r, analysis.composites, config.smaller_is_risky) for r in analysis.rows},
        key=TermRow.sort_key,
    )
    return StalenessReport(rows, sorted(analysis.errors), analysis.rounds, analysis.evaluated)
