"""Relocate inventory rows by their emitted literal, and classify what became of each row.

A row is found again by its literal inside *emitting* calls at the pin, never by its line
number (DESIGN.md §1). The status follows the contract (§4):

- held: one emitting site, at the cited file and line (a line of the call; one of the sites,
  when a row cites several);
- moved: one emitting site in the cited file, at another line;
- wrong-file: one emitting site in another file (also when the row cites no site at all);
- ambiguous: several emitting sites;
- prose-only: no emitting site, but the literal survives in comments, docstrings, strings
  nothing emits or calls not recognised as emitters (each place says which, see `prose`);
- gone: nowhere.

Several calls on one line count as one site (one place to cite). Reachability is per site:
the enclosing function is reachable from a round through call and fallback edges; the chain
runs from the round to the emitting call.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rankguard.adapters.sources import SourceFile
from rankguard.analysis.inventory.prose import Prose, find_prose
from rankguard.analysis.inventory.sites import EmitSite
from rankguard.analysis.inventory.table import Cited, Row
from rankguard.analysis.inventory.templates import contains_literal
from rankguard.core.chains import Hop

STATUSES = ("held", "moved", "wrong-file", "ambiguous", "gone", "prose-only")


@dataclass
class Relocation:
    row: Row
    status: str
    sites: list[EmitSite]
    prose: list[Prose] = field(default_factory=list)
    # Per site location: the chain from a round (None: not reachable); absent: not computed.
    chains: dict[tuple[str, int], list[Hop] | None] | None = None

    @property
    def locations(self) -> list[tuple[str, int]]:
        return sorted({site.location for site in self.sites})

    @property
    def reachable(self) -> bool | None:
        """Any site reachable from a round; None when unknown or there is no site."""
        if self.chains is None or not self.sites:
            return None
        return any(chain is not None for chain in self.chains.values())


def classify(cited: Sequence[Cited], sites: Sequence[EmitSite], prose: bool) -> str:
    """The row's status. A site is cited by any line of its call (an auditor may cite the
    literal's own line inside a call spanning several); a row citing several sites (a
    regenerated ambiguous row) holds when its literal is now at one of them."""
    locations = sorted({site.location for site in sites})
    if not locations:
        return "prose-only" if prose else "gone"
    if len(locations) > 1:
        return "ambiguous"
    path = locations[0][0]
    if any(c.path == path and s.line <= c.line <= s.end_line for c in cited for s in sites):
        return "held"
    return "moved" if path in {c.path for c in cited} else "wrong-file"


def relocate_rows(
    rows: Sequence[Row],
    emitting: Sequence[EmitSite],
    non_emitting: Sequence[EmitSite],
    files: Sequence[SourceFile],
    across_fields: bool = False,
) -> list[Relocation]:
    """Find and classify every row (prose is searched only for rows with no site)."""
    out: list[Relocation] = []
    for row in rows:
        sites = [s for s in emitting if contains_literal(s.parts, row.literal, across_fields)]
        prose = [] if sites else find_prose(row.literal, files, non_emitting)
        out.append(Relocation(row, classify(row.sites, sites, bool(prose)), sites, prose))
    return out


def attach_reachability(relocations: Iterable[Relocation], reach: dict[str, list[Hop]]) -> None:
    """Per site: the chain from a round to the emitting call, or None when unreachable."""
    for rel in relocations:
        chains: dict[tuple[str, int], list[Hop] | None] = {}
        for site in rel.sites:
            prefix = reach.get(site.function)
            chain = None if prefix is None else [*prefix, Hop(site.function, *site.location)]
            if chains.get(site.location) is None:
                chains[site.location] = chain
        rel.chains = chains
