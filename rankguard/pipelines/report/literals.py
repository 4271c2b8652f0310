"""Emitted literals added, removed, changed or moved to another function, and the inventory
rows a change breaks.

Inventories and log censuses find their rows by emitted literal (DESIGN.md §1), so a change
that edits a log message, deletes it or moves it into another function silently breaks them.
A literal is the emitting call's template (constant text, fields as written); only templates
with some constant text count. Only changed files are compared: an unchanged file emits the
same literals on both sides.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rankguard.analysis.inventory.relocate import Relocation, relocate_rows
from rankguard.analysis.inventory.sites import EmitSite, collect_sites
from rankguard.analysis.inventory.table import Inventory
from rankguard.core.config import Config
from rankguard.pipelines.report.sides import Side

SIMILAR = 0.6  # difflib ratio above which a removed and an added literal are one edit


def site_json(site: EmitSite) -> dict[str, Any]:
    return {
        "literal": site.template,
        "path": site.path,
        "line": site.line,
        "function": site.function,
        "kind": site.kind,
        "callee": site.callee,
    }


def has_text(site: EmitSite) -> bool:
    return any(not is_field and text.strip() for is_field, text in site.parts)


def side_sites(side: Side, config: Config, paths: Iterable[str] | None = None) -> list[EmitSite]:
    """Emitting sites of `side` (only in `paths` when given) that carry a literal."""
    wanted = None if paths is None else set(paths)
    files = [f for f in side.tree.files if wanted is None or f.path in wanted]
    emitting, _ = collect_sites(files, side.summaries, config.emitters)
    return [s for s in emitting if has_text(s)]


@dataclass
class LiteralDiff:
    added: list[EmitSite] = field(default_factory=list)
    removed: list[EmitSite] = field(default_factory=list)
    changed: list[tuple[EmitSite, EmitSite]] = field(default_factory=list)
    moved: list[tuple[EmitSite, EmitSite]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        pair = lambda b, h: {"base": site_json(b), "head": site_json(h)}  # noqa: E731
        return {
            "added": [site_json(s) for s in self.added],
            "removed": [site_json(s) for s in self.removed],
            "changed": [pair(b, h) for b, h in self.changed],
            "moved": [pair(b, h) for b, h in self.moved],
        }

    @property
    def count(self) -> int:
        return len(self.added) + len(self.removed) + len(self.changed) + len(self.moved)


def _by_template(sites: Sequence[EmitSite]) -> dict[str, list[EmitSite]]:
    out: dict[str, list[EmitSite]] = defaultdict(list)
    for site in sorted(sites):
        out[site.template].append(site)
    return out


def _match_functions(
    before: list[EmitSite], after: list[EmitSite]
) -> tuple[list[EmitSite], list[EmitSite]]:
    """Drop pairs in the same function (a line shift is no change); return what is left."""
    left = list(after)
    rest: list[EmitSite] = []
    for site in before:
        same = next((s for s in left if s.function == site.function), None)
        if same is None:
            rest.append(site)
        else:
            left.remove(same)
    return rest, left


def _pair_edits(
    removed: list[EmitSite], added: list[EmitSite]
) -> tuple[list[tuple[EmitSite, EmitSite]], list[EmitSite], list[EmitSite]]:
    """A removed and an added literal in the same function with the same callee and similar
    text are one edited literal; best ratio first, deterministic on ties."""
    scored = sorted(
        (
            -difflib.SequenceMatcher(None, b.template, h.template).ratio(),
            i,
            j,
        )
        for i, b in enumerate(removed)
        for j, h in enumerate(added)
        if b.function == h.function and b.callee == h.callee
    )
    used_b: set[int] = set()
    used_h: set[int] = set()
    pairs: list[tuple[EmitSite, EmitSite]] = []
    for score, i, j in scored:
        if -score < SIMILAR or i in used_b or j in used_h:
            continue
        used_b.add(i)
        used_h.add(j)
        pairs.append((removed[i], added[j]))
    left_b = [s for i, s in enumerate(removed) if i not in used_b]
    left_h = [s for j, s in enumerate(added) if j not in used_h]
    return sorted(pairs), left_b, left_h


def diff_literals(base: Sequence[EmitSite], head: Sequence[EmitSite]) -> LiteralDiff:
    out = LiteralDiff()
    by_base, by_head = _by_template(base), _by_template(head)
    removed: list[EmitSite] = []
    added: list[EmitSite] = []
    for template in sorted(set(by_base) | set(by_head)):
        before, after = _match_functions(by_base.get(template, []), by_head.get(template, []))
        while before and after:  # same text, another function
            out.moved.append((before.pop(0), after.pop(0)))
        removed += before
        added += after
    out.changed, out.removed, out.added = _pair_edits(removed, added)
    out.removed.sort()
    out.added.sort()
    out.moved.sort()
    return out


@dataclass
class BrokenRow:
    id: str
    literal: str
    cited: str | None
    base: Relocation
    head: Relocation

    def to_json(self) -> dict[str, Any]:
        def state(rel: Relocation) -> dict[str, Any]:
            return {
                "status": rel.status,
                "sites": [
                    {"path": s.path, "line": s.line, "function": s.function} for s in rel.sites
                ],
            }

        return {
            "id": self.id,
            "literal": self.literal,
            "cited": self.cited,
            "base": state(self.base),
            "head": state(self.head),
        }


def _state(rel: Relocation) -> tuple[str, list[tuple[str, int]]]:
    return rel.status, rel.locations


def broken_rows(inventory: Inventory, base: Side, head: Side, config: Config) -> list[BrokenRow]:
    """Rows whose relocation (status or sites) differs between base and head."""

    def relocate(side: Side) -> list[Relocation]:
        emitting, others = collect_sites(side.tree.files, side.summaries, config.emitters)
        return relocate_rows(inventory.rows, emitting, others, side.tree.files)

    out: list[BrokenRow] = []
    for before, after in zip(relocate(base), relocate(head), strict=True):
        if _state(before) != _state(after):
            row = after.row
            cited = str(row.cited) if row.cited is not None else None
            out.append(BrokenRow(row.id, row.literal, cited, before, after))
    return out
