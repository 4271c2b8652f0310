"""What one function's walk (`transfer.Walker`) needs from the program-wide analysis
(`flow.UniformityFlow`): the program, its collectives, the sources catalog, and the summaries
of the functions walked before it (callees first)."""

from __future__ import annotations

from typing import Any, Protocol

from rankguard.analysis.collectives import CollectiveReach
from rankguard.analysis.uniformity.collectives import CollectiveCalls
from rankguard.analysis.uniformity.lattice import FunctionFlow, Step
from rankguard.catalogs.rank_sources import RankSourceCatalog
from rankguard.model.program import Program


class ProgramFacts(Protocol):
    """What a walk needs from the program-wide analysis (`flow.UniformityFlow`)."""

    program: Program
    reach: CollectiveReach
    calls: CollectiveCalls
    sources_catalog: RankSourceCatalog
    resolver: Any
    stores: dict[str, frozenset[str]]
    reached: frozenset[str]
    flows: dict[str, FunctionFlow]  # the functions walked so far (callees first)
    flags: dict[str, tuple[str, ...]]  # `roots.size_flags`

    def ret_params(self, function: str) -> dict[str, tuple[Step, ...]]: ...

    def ret_calls(self, function: str) -> dict[str, tuple[Step, ...]]: ...

    def is_global(self, module: str, name: str) -> bool: ...

    def none_only(self, function: str) -> bool: ...

    def returned_items(self, function: str) -> list[dict[str, tuple[Step, ...]]] | None: ...

    def unpacks(self, function: str) -> dict[str, int] | None: ...
