"""Divergent collective calls: the analysis's answer, one per call under a hazardous guard."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rankguard.adapters.keyed import KeyedStore
from rankguard.analysis.blocking import BlockingAnalysis
from rankguard.analysis.collectives import CollectiveReach, CollectiveSite
from rankguard.analysis.uniformity.feasible import FeasibleReach, PathFacts
from rankguard.analysis.uniformity.flow import Sourced, UniformityFlow
from rankguard.analysis.uniformity.guards import Guard, GuardWalker, tail_after
from rankguard.analysis.uniformity.modes import other_modes_only
from rankguard.catalogs.catalog import blocking_catalog
from rankguard.catalogs.rank_sources import rank_source_catalog
from rankguard.core.chains import Hop, chain_json
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord
from rankguard.summary.ir import CallSite, Stmt


@dataclass
class DivergentCall:
    """A call that enters a collective under a guard that varies over the collective's group."""

    function: FunctionRecord
    call: CallSite
    callee: str
    groups: tuple[str, ...]  # the groups' dimensions (`tp`, `world`), () when one is unknown
    guard: Guard
    guards: list[Guard]
    primitives: list[CollectiveSite]
    sources: Sourced
    why: str  # one line: what the nearest varying source is
    reached_by: list[Hop]

    @property
    def group(self) -> str | None:
        """The one group's dimension; None when there are several or one cannot be named."""
        return self.groups[0] if len(self.groups) == 1 else None

    def to_json(self) -> dict[str, Any]:
        source, chain = self.sources[0]
        return {
            "function": self.function.qualname,
            "collective": {
                "callee": self.callee,
                "path": self.function.path,
                "line": self.call.line,
            },
            "group": self.group,
            "groups": list(self.groups),
            "primitives": [p.to_json() for p in self.primitives],
            "condition": {
                "text": self.guard.stmt.text,
                "path": self.function.path,
                "line": self.guard.stmt.line,
                "kind": self.guard.kind,
            },
            "source": {**source.to_json(), "why": self.why, "chain": [s.to_json() for s in chain]},
            "other_sources": [s.to_json() for s, _ in self.sources[1:]],
            "reached_by": chain_json(self.reached_by),
        }


def find_divergent_calls(
    program: Program,
    round_functions: Sequence[str],
    reach: CollectiveReach,
    driver_terms: Iterable[Any] = (),
    facts: PathFacts | None = None,
    store: KeyedStore | None = None,
    salt: str = "",
) -> list[DivergentCall]:
    """Every collective call, in a function the round functions reach on a path their facts
    allow, under a guard that varies over its group (the caller has matched the rounds
    already: `RuleContext.rounds`; `facts`: the blocking analysis's, shared when given; with
    a `store`, walks are kept across runs under the configuration's `salt`: `keep.py`)."""
    facts = facts or BlockingAnalysis(program, reach.catalog, blocking_catalog())
    feasible = FeasibleReach(program, facts, round_functions)
    reached = feasible.chains
    if not reached:
        return []
    catalog = rank_source_catalog(tuple(driver_terms))
    # What runs only in another mode, or only on hardware the run does not analyse (the
    # platforms catalog's rule, which the blocking walk follows too), stores nothing the
    # rounds read.
    elsewhere = other_modes_only(program, round_functions) | {
        name for name, r in program.functions.items() if facts.platforms.foreign(r.module)
    }
    flow = UniformityFlow(program, reach, catalog, reached, elsewhere, store, salt)
    out: list[DivergentCall] = []
    for name in sorted(reached):
        record = program.functions[name]
        outer: list[tuple[Stmt, ...]] = []
        for hop in reversed(reached[name]):
            caller = program.functions.get(hop.function)
            outer.extend(tail_after(caller.info.body, hop.line) or () if caller else ())
        for call, groups, guards in GuardWalker(flow, record, tuple(outer)).run():
            if id(call) not in feasible.calls:
                continue  # only on a side the round's facts exclude
            guard = guards[-1]  # the innermost decides last
            sources = flow.varying(name, guard.stmt, groups)
            entered = flow.calls.entered(record, call)
            callee = entered[0][1][1].function if len(entered[0][1]) > 1 else entered[0][0].callee
            source = sources[0][0]
            why = catalog.why(source.kind)
            if source.kind == "rank-id":
                why += f" in the {source.dimension or 'any'} dimension"
            if source.over:
                over = source.over.replace(",", ", ")
                why += f", agreed only over the {over} group, not this one"
            out.append(
                DivergentCall(
                    record,
                    call,
                    callee,
                    groups,
                    guard,
                    guards,
                    list(dict.fromkeys(site for site, _chain in entered)),
                    sources,
                    why,
                    reached[name],
                )
            )
    out.sort(key=lambda d: (d.function.path, d.call.line, d.call.col, d.guard.stmt.line))
    return out
