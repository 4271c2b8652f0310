"""Output of the inventory audits: the contract's JSON, the regenerated table, census tables.

The regenerated Markdown keeps the user's columns and cells, rewrites `site` to where the
literal is now, adds (or refills) a `status` column, refreshes a `reachable` column when one
exists, and states the new pin. For a Markdown inventory the text around the table is kept, so
`--in-place` edits only what relocation knows about. Malformed rows are kept verbatim.

The regenerated table is one the reader takes back, and relocating it again at the same pin
changes nothing (regeneration is idempotent): an ambiguous row lists all its sites in one cell
(`a.py:3<br>b.py:9`, which the reader parses); a row with no emitting site (gone, prose-only)
loses its stale site (`—`) rather than point at unrelated code; where a literal survives only
as prose, a `prose` column lists each place and what it is. The `status` column is the status
of the row as regenerated (a moved row, now citing its new site, holds); what relocation found
is the JSON output and the change lines `relocate_text_changes` gives for stderr.
"""

from __future__ import annotations

from typing import Any

from rankguard.analysis.inventory.census import Position
from rankguard.analysis.inventory.relocate import Relocation
from rankguard.analysis.inventory.table import Inventory
from rankguard.core.chains import chain_json
from rankguard.pipelines.inventory import Outcome


def _site_json(rel: Relocation) -> list[dict[str, Any]]:
    out = []
    for site in rel.sites:
        item: dict[str, Any] = {
            "path": site.path,
            "line": site.line,
            "function": site.function,
            "kind": site.kind,
            "callee": site.callee,
            "template": site.template,
        }
        if rel.chains is not None:
            chain = rel.chains.get(site.location)
            item["reachable"] = chain is not None
            item["chain"] = chain_json(chain) if chain is not None else None
        out.append(item)
    return out


def row_json(rel: Relocation) -> dict[str, Any]:
    row = rel.row
    return {
        "id": row.id,
        "row": row.number,
        "literal": row.literal,
        "cited": row.cited.to_json() if row.cited else None,
        "cited_sites": [site.to_json() for site in row.sites],
        "status": rel.status,
        "sites": _site_json(rel),
        "reachable": rel.reachable,
        "prose": [p.to_json() for p in rel.prose],
    }


def relocate_json(outcome: Outcome) -> dict[str, Any]:
    return {
        "pin": outcome.pin,
        "warnings": outcome.warnings,
        "rows": [row_json(rel) for rel in outcome.relocations],
        "errors": [e.to_json() for e in outcome.errors],
    }


def _escape(cell: str) -> str:
    return cell.replace("|", "\\|").replace("\n", " ")


_NONE = "—"
_JOIN = "<br>"


def _site_cell(rel: Relocation, original: str) -> str:
    if not rel.locations:
        return _NONE
    if rel.status == "held" and len(rel.row.sites) == 1:
        return original
    code = original.strip().startswith("`")
    return _JOIN.join(f"`{p}:{n}`" if code else f"{p}:{n}" for p, n in rel.locations)


def _prose_cell(rel: Relocation) -> str:
    if rel.sites:
        return ""
    return _JOIN.join(f"`{p.path}:{p.line}` ({p.what})" for p in rel.prose)


def _reachable_cell(rel: Relocation, original: str) -> str:
    if not rel.sites:
        return _NONE
    if rel.chains is None:
        return original
    word = "yes" if rel.reachable else "no"
    return original if original.strip().lower().startswith(word) else word


def _table_lines(inv: Inventory, rels: list[Relocation]) -> list[str]:
    columns = list(inv.columns)
    headers = [inv.headers[c] for c in columns]
    for extra in ("status", "prose"):
        if extra not in columns and (extra == "status" or any(r.prose for r in rels)):
            columns.append(extra)
            headers.append(extra)
    lines = [
        "| " + " | ".join(_escape(h) for h in headers) + " |",
        "|" + "---|" * len(headers),
    ]
    by_number = {rel.row.number: rel for rel in rels}
    last = max([*by_number, *_error_rows(inv)], default=0)
    for number in range(1, last + 1):
        rel = by_number.get(number)
        if rel is None:
            if inv.format == "md" and inv.table_span is not None:
                index = inv.table_span[0] + 1 + number
                if index < inv.table_span[1]:
                    lines.append(inv.lines[index])  # malformed: kept as written
            continue
        cells = dict(rel.row.cells)
        cells["site"] = _site_cell(rel, cells.get("site", ""))
        if "reachable" in cells:
            cells["reachable"] = _reachable_cell(rel, cells["reachable"])
        cells["status"] = "held" if rel.status in ("moved", "wrong-file") else rel.status
        cells["prose"] = _prose_cell(rel)
        lines.append("| " + " | ".join(_escape(cells.get(c, "")) for c in columns) + " |")
    return lines


def _error_rows(inv: Inventory) -> list[int]:
    if inv.table_span is None:
        return []
    return list(range(1, inv.table_span[1] - inv.table_span[0] - 1))


def regenerate_markdown(inv: Inventory, outcome: Outcome) -> str:
    """The inventory as Markdown at the new pin (the whole document for a Markdown input)."""
    table = _table_lines(inv, outcome.relocations)
    pin_line = f"pin: {outcome.pin}"
    if inv.format != "md" or inv.table_span is None:
        return "\n".join([pin_line, "", *table]) + "\n"
    lines = list(inv.lines)
    start, end = inv.table_span
    lines[start:end] = table
    if inv.pin_line is not None:
        lines[inv.pin_line] = pin_line
    else:
        lines[start:start] = [pin_line, ""]
    return "\n".join(lines) + "\n"


def _pos(position: Position | None) -> str:
    return str(position) if position else "—"


def census_json(outcome: Outcome) -> dict[str, Any]:
    rows = []
    for rel, tally in zip(outcome.relocations, outcome.tallies, strict=True):
        rows.append(
            {
                "id": rel.row.id,
                "literal": rel.row.literal,
                "status": rel.status,
                "templates": sorted({site.template for site in rel.sites}),
                **tally.to_json(),
            }
        )
    return {
        "pin": outcome.pin,
        "logs": [log.to_json() for log in outcome.logs],
        "warnings": outcome.warnings,
        "rows": rows,
        "errors": [e.to_json() for e in outcome.errors],
    }


def _census_cells(outcome: Outcome) -> list[list[str]]:
    return [
        [
            rel.row.id,
            rel.status,
            str(tally.bare),
            str(tally.genuine),
            _pos(tally.first),
            _pos(tally.last),
            rel.row.literal,
        ]
        for rel, tally in zip(outcome.relocations, outcome.tallies, strict=True)
    ]


_CENSUS_HEADERS = ["id", "status", "bare", "genuine", "first genuine", "last genuine", "literal"]


def census_markdown(outcome: Outcome) -> str:
    lines = [
        f"pin: {outcome.pin}",
        "",
        "| " + " | ".join(_CENSUS_HEADERS) + " |",
        "|" + "---|" * len(_CENSUS_HEADERS),
    ]
    for cells in _census_cells(outcome):
        cells[-1] = f"`{cells[-1]}`"
        lines.append("| " + " | ".join(_escape(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def census_text(outcome: Outcome) -> str:
    rows = [_CENSUS_HEADERS, *_census_cells(outcome)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_CENSUS_HEADERS) - 1)]
    out = [f"pin {outcome.pin}"]
    for log in outcome.logs:
        out.append(f"log {log.path}: {log.lines} lines")
    for cells in rows:
        padded = [c.ljust(w) for c, w in zip(cells[:-1], widths, strict=True)]
        out.append("  ".join([*padded, cells[-1]]))
    for item in outcome.warnings:
        out.append(f"warning: {item['message']}")
    return "\n".join(out) + "\n"


def relocate_text_warnings(outcome: Outcome) -> list[str]:
    return [f"warning: {item['message']}" for item in outcome.warnings]


def relocate_text_changes(outcome: Outcome) -> list[str]:
    """One line per row not held: what relocation found, for the reader of a regeneration."""
    out: list[str] = []
    for rel in outcome.relocations:
        if rel.status == "held":
            continue
        cited = ", ".join(str(site) for site in rel.row.sites) or "no site"
        if rel.sites:
            now = ", ".join(f"{p}:{n}" for p, n in rel.locations)
        elif rel.prose:
            now = "only as prose: " + ", ".join(str(p) for p in rel.prose)
        else:
            now = "nowhere"
        out.append(f"{rel.row.id}: {rel.status}: cited {cited}; now {now}")
    return out
