"""The analysis session a rule reads: the program, the config, and every shared analysis.

Rules share expensive analyses (the collective index, the blocking regions, the staleness table)
and must not compute them twice or pass them around under string keys. Each is a typed property
computed once, on first use, so a run that selects one rule pays only for what that rule reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import libcst

from rankguard.adapters.keyed import KeyedStore
from rankguard.analysis.blocking import BlockingAnalysis
from rankguard.analysis.collectives import CollectiveReach
from rankguard.analysis.discovery import Discovery, discover_rounds
from rankguard.analysis.rounds import Round, find_rounds, round_warnings
from rankguard.analysis.staleness import StalenessReport, staleness
from rankguard.analysis.watchdog import Unwatched, find_unwatched
from rankguard.catalogs.catalog import CollectiveCatalog, blocking_catalog, collective_catalog
from rankguard.catalogs.platforms import platform_catalog
from rankguard.core.config import Config
from rankguard.core.errors import ErrorRecord
from rankguard.model.program import Program

SourceReader = Callable[[str], str]


@dataclass
class AnalysisSession:
    """`options` holds command-line switches (`{"include_round_tail": True}`); `read_source`
    reads an analysed file's text by its root-relative path (for `cst`); `kept` is where
    analyses keep per-function summaries across runs (`adapters.keyed`: its path must name
    this code and configuration), None to keep nothing."""

    program: Program
    config: Config
    options: dict[str, Any] = field(default_factory=dict)
    read_source: SourceReader | None = None
    kept: KeyedStore | None = None

    @cached_property
    def collectives(self) -> CollectiveCatalog:
        return collective_catalog(self.config.collectives)

    @cached_property
    def reach(self) -> CollectiveReach:
        """The one index of the collectives each function reaches."""
        return CollectiveReach(self.program, self.collectives)

    @cached_property
    def discovery(self) -> Discovery:
        """Round candidates, for when the config names no rounds (`analysis.discovery`)."""
        return discover_rounds(self.program, self.reach)

    @property
    def round_patterns(self) -> tuple[str, ...]:
        """The configured round patterns, else the discovered rounds' names."""
        return self.config.rounds or self.discovery.patterns

    @cached_property
    def rounds(self) -> list[Round]:
        """Configured rounds without a `while` loop are their whole body; discovered ones are
        loops (`reach.round_scope`)."""
        configured = bool(self.config.rounds)
        return find_rounds(
            self.program, self.round_patterns, self.collectives, self.reach, configured
        )

    def round_warnings(self) -> list[ErrorRecord]:
        """The rounds a rule read that reach no collective (`rounds.round_warnings`); none when
        no rule read the rounds (a run of the staleness rule alone)."""
        if "rounds" not in self.__dict__:  # cached_property: computed only if a rule asked
            return []
        configured = bool(self.config.rounds)
        return round_warnings(self.program, self.rounds, self.round_patterns, configured)

    @cached_property
    def blocking(self) -> BlockingAnalysis:
        config = self.config
        return BlockingAnalysis(
            self.program,
            self.collectives,
            blocking_catalog(config.blocking, config.non_blocking),
            config.cadence_helpers,
            platform_catalog(config.platforms),
            self.kept,
            self.config.digest(),
            self.rounds,
        )

    @cached_property
    def unwatched(self) -> list[Unwatched]:
        """Waits outside the watchdog stamp (the rule and `fix stamp-watchdog` share it)."""
        hooks = self.config.watchdog_hooks
        return find_unwatched(self.program, self.rounds, self.blocking, hooks)

    @cached_property
    def staleness(self) -> StalenessReport:
        """The staleness table (the rule and the pull-request report share it)."""
        return staleness(self.program, self.config)

    @cached_property
    def _cst_modules(self) -> dict[str, libcst.Module]:
        return {}

    def cst(self, path: str) -> libcst.Module:
        """The concrete syntax tree of one analysed file, parsed on demand with libcst."""
        modules = self._cst_modules
        if path not in modules:
            if self.read_source is None:
                raise LookupError(f"{path}: this session was given no source reader")
            modules[path] = libcst.parse_module(self.read_source(path))
        return modules[path]
