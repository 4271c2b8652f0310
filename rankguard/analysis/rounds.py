"""Rounds and the collectives each reaches.

A round is one iteration of the loop in a round function; every collective reached from the
loop body, through calls (not callbacks), is listed with the chain from the round function to
the primitive call, one hop per call site, in the order the round executes them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from rankguard.analysis.reach import FOLLOWED, loop_calls, match_rounds, round_loop
from rankguard.catalogs.catalog import CollectiveCatalog
from rankguard.core.chains import Hop, chain_json
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord
from rankguard.summary.ir import CallSite, Stmt, walk_calls


@dataclass(frozen=True)
class CollectiveSite:
    callee: str  # the primitive's qualified name
    kind: str  # collective | p2p
    path: str
    line: int
    function: str  # the function whose body holds the primitive call

    def to_json(self) -> dict[str, object]:
        return {"callee": self.callee, "path": self.path, "line": self.line}


@dataclass
class ReachedCollective:
    site: CollectiveSite
    chain: list[Hop]

    def to_json(self) -> dict[str, object]:
        return {**self.site.to_json(), "kind": self.site.kind, "chain": chain_json(self.chain)}


@dataclass
class Round:
    function: FunctionRecord
    loop: Stmt
    collectives: list[ReachedCollective] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {
            "round": self.function.qualname,
            "path": self.function.path,
            "line": self.function.info.line,
            "loop_line": self.loop.line,
            "collectives": [c.to_json() for c in self.collectives],
        }


class CollectiveReach:
    """Memoised: the collective sites under each function, in execution order."""

    def __init__(self, program: Program, catalog: CollectiveCatalog) -> None:
        self.program = program
        self.catalog = catalog
        self._memo: dict[str, list[tuple[CollectiveSite, list[Hop]]]] = {}

    def under(self, name: str) -> list[tuple[CollectiveSite, list[Hop]]]:
        return self._under(name, frozenset())[0]

    def sites_of_calls(
        self, record: FunctionRecord, calls: Sequence[CallSite], stack: frozenset[str]
    ) -> tuple[list[tuple[CollectiveSite, list[Hop]]], bool]:
        out: list[tuple[CollectiveSite, list[Hop]]] = []
        seen: set[CollectiveSite] = set()
        cut = False
        for call in calls:
            for target in self.program.targets_of(record.qualname, call):
                if target.kind not in FOLLOWED:
                    continue
                edge = "fallback" if target.kind == "fallback" else target.via
                hop = Hop(record.qualname, record.path, call.line, edge)
                kind = self.catalog.kind(target.name)
                if kind is not None:
                    site = CollectiveSite(
                        target.name, kind, record.path, call.line, record.qualname
                    )
                    if site not in seen:
                        seen.add(site)
                        out.append((site, [hop]))
                elif target.name in self.program.functions:
                    if target.name in stack:
                        cut = True
                        continue
                    below, below_cut = self._under(target.name, stack | {record.qualname})
                    cut |= below_cut
                    for site, chain in below:
                        if site not in seen:
                            seen.add(site)
                            out.append((site, [hop, *chain]))
        return out, cut

    def _under(
        self, name: str, stack: frozenset[str]
    ) -> tuple[list[tuple[CollectiveSite, list[Hop]]], bool]:
        if name in self._memo:
            return self._memo[name], False
        record = self.program.functions[name]
        out, cut = self.sites_of_calls(record, list(walk_calls(record.info.body)), stack)
        if not cut:  # a result cut short by recursion is not the function's whole answer
            self._memo[name] = out
        return out, cut


def find_rounds(
    program: Program,
    patterns: Sequence[str],
    catalog: CollectiveCatalog,
    reach: CollectiveReach | None = None,
) -> list[Round]:
    """Rounds and their collectives; pass the `reach` other analyses share to reuse its memo."""
    reach = reach or CollectiveReach(program, catalog)
    rounds: list[Round] = []
    for record in match_rounds(program, patterns):
        loop = round_loop(record)
        assert loop is not None  # match_rounds keeps only functions with a loop
        # One row per (primitive site, call in the round) so a wrapper reached twice shows twice.
        rows: list[ReachedCollective] = []
        keys: set[tuple[CollectiveSite, int]] = set()
        for site, chain in _per_round_call(reach, record, loop):
            key = (site, chain[0].line)
            if key not in keys:
                keys.add(key)
                rows.append(ReachedCollective(site, chain))
        rounds.append(Round(record, loop, rows))
    return rounds


def _per_round_call(
    reach: CollectiveReach, record: FunctionRecord, loop: Stmt
) -> Iterator[tuple[CollectiveSite, list[Hop]]]:
    for call in loop_calls(loop):
        found, _ = reach.sites_of_calls(record, [call], frozenset())
        yield from found
