"""Rounds and the collective events each reaches.

A round is one iteration of the loop in a round function; every collective event reached from
the loop body, through calls (not callbacks), is listed with the chain from the round function to
the primitive call, one hop per call site, in the order the round executes them. The events come
from the one collective index (`rankguard.analysis.collectives`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rankguard.analysis.collectives import CollectiveReach, CollectiveSite, Event
from rankguard.analysis.reach import loop_calls, match_rounds, round_loop
from rankguard.catalogs.catalog import CollectiveCatalog
from rankguard.core.chains import Hop, chain_json
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord
from rankguard.summary.ir import Stmt


@dataclass
class ReachedCollective:
    """One row of `rankguard rounds`: one collective event (a call site that enters a function
    holding primitive calls, or a primitive call in the round itself), with the first primitive
    it reaches and that chain; every primitive below it is kept as evidence."""

    event: Event
    primitives: list[Event] = field(default_factory=list)

    @property
    def site(self) -> CollectiveSite:
        return self.event.site

    @property
    def chain(self) -> list[Hop]:
        return list(self.event.chain)

    def to_json(self) -> dict[str, object]:
        named = self.event.named_by
        return {
            **self.site.to_json(),
            "kind": self.site.kind,
            "chain": chain_json(self.event.chain),
            "event": {
                "function": named.function,
                "path": named.path,
                "line": named.line,
                "callee": self.event.entered,
            },
            "primitives": [{**e.site.to_json(), "kind": e.site.kind} for e in self.primitives],
        }


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
        rows: dict[tuple[object, ...], ReachedCollective] = {}
        for event in reach.events_of_calls(record, loop_calls(loop)):
            row = rows.setdefault(event.key[:3], ReachedCollective(event))
            row.primitives.append(event)
        rounds.append(Round(record, loop, list(rows.values())))
    return rounds
