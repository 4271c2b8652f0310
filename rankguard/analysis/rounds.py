"""Rounds and the collective events each reaches.

A round is one iteration of the loop in a round function, or, for a configured round function
without a `while` loop, one run of its whole body (its caller runs it once per round:
`reach.round_scope`); every collective event reached from the round, through calls (not
callbacks), is listed with the chain from the round function to the primitive call, one hop per
call site, in the order the round executes them. The events come from the one collective index
(`rankguard.analysis.collectives`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, field

from rankguard.analysis.collectives import CollectiveReach, CollectiveSite, Event
from rankguard.analysis.reach import (
    enclosing_match,
    loop_calls,
    match_rounds,
    matched_functions,
    round_loop,
    round_scope,
)
from rankguard.catalogs.catalog import CollectiveCatalog
from rankguard.core.chains import Hop, chain_json
from rankguard.core.errors import ErrorRecord
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
    """`loop` is the loop whose iteration is the round, or with `whole` a stand-in loop over
    the function's body (`reach.whole_body`, at the def line): the JSON says which (`scope`).
    `loop_line` keeps the meaning it had before body rounds (DESIGN 4): the line of the loop
    `reach.round_loop` picks (for a body round, its first loop), null only for a function
    with no loop at all."""

    function: FunctionRecord
    loop: Stmt
    collectives: list[ReachedCollective] = field(default_factory=list)
    whole: bool = False

    @property
    def loop_line(self) -> int | None:
        if not self.whole:
            return self.loop.line
        loop = round_loop(self.function)
        return loop.line if loop is not None else None

    def to_json(self) -> dict[str, object]:
        return {
            "round": self.function.qualname,
            "path": self.function.path,
            "line": self.function.info.line,
            "scope": "body" if self.whole else "loop",
            "loop_line": self.loop_line,
            "collectives": [c.to_json() for c in self.collectives],
        }


def find_rounds(
    program: Program,
    patterns: Sequence[str],
    catalog: CollectiveCatalog,
    reach: CollectiveReach | None = None,
    configured: bool = False,
) -> list[Round]:
    """Rounds and their collectives; pass the `reach` other analyses share to reuse its memo.
    `configured`: the patterns are the user's, so a function without a `while` loop is a round
    by its whole body (`reach.round_scope`); discovered names keep their loops."""
    reach = reach or CollectiveReach(program, catalog)
    rounds: list[Round] = []
    for record in match_rounds(program, patterns, configured):
        scope = round_scope(
            record,
            configured,
            lambda loop, r=record: bool(reach.events_of_calls(r, loop_calls(loop))),
        )
        assert scope is not None  # match_rounds keeps only functions with a round
        loop, whole = scope
        rows: dict[tuple[object, ...], ReachedCollective] = {}
        for event in reach.events_of_calls(record, loop_calls(loop)):
            row = rows.setdefault(event.key[:3], ReachedCollective(event))
            row.primitives.append(event)
        rounds.append(Round(record, loop, list(rows.values()), whole))
    return rounds


def round_warnings(
    program: Program, rounds: Sequence[Round], patterns: Sequence[str], configured: bool
) -> list[ErrorRecord]:
    """What the patterns matched and no rule can report on, so a gate on it would pass
    silently: configured matches that are no round of their own (defined inside another
    round, `reach.match_rounds`), one line per enclosing round; and each round that reaches
    no collective (a pattern that also matched a helper, or collectives reached through
    wrappers or callbacks the analysis does not resolve). Warnings, not errors: the run is
    still good for the other rounds."""
    out: list[ErrorRecord] = []
    if configured:
        matched = matched_functions(program, patterns)
        taken = {r.function.qualname for r in rounds}
        inside: dict[str, list[FunctionRecord]] = {}
        for record in matched:
            outer = enclosing_match(record, {r.qualname for r in matched})
            if record.qualname not in taken and outer is not None:
                inside.setdefault(outer, []).append(record)
        for outer, records in sorted(inside.items()):
            tails = [r.qualname.rsplit(".<locals>.", 1)[1] for r in records]
            shown = ", ".join(tails[:4]) + (f" and {len(tails) - 4} more" if tails[4:] else "")
            by = _pattern(outer, patterns)
            out.append(
                ErrorRecord(
                    records[0].path,
                    f"round {outer}{by}: the pattern also matches {len(records)} function(s) "
                    f"defined inside it ({shown}); they are not rounds of their own and are "
                    "analysed only where the round calls them",
                )
            )
    for rnd in rounds:
        if rnd.collectives:
            continue
        name = rnd.function.qualname
        out.append(
            ErrorRecord(
                rnd.function.path,
                f"round {name}{_pattern(name, patterns)} reaches no collective, so nothing "
                "can be reported for it; if it is not a round, narrow the pattern; if it "
                "calls the project's collectives through wrappers the analysis does not "
                "resolve, name them in `collectives`",
            )
        )
    return out


def _pattern(name: str, patterns: Sequence[str]) -> str:
    matched = [p for p in patterns if fnmatch.fnmatchcase(name, p)]
    return f" (pattern '{matched[0]}')" if matched else ""
