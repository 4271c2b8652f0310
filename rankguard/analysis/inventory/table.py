"""Reading inventories: a Markdown table (with an optional `pin: <rev>` line), CSV or JSON.

Audit tables are written by hand and rot by hand, so one bad row must not cost the others: a
malformed row becomes an `ErrorRecord` naming its row number (1-based, data rows only) and its
line, and every other row is still relocated. A file the command cannot use at all (unreadable,
no table, a required column missing, no rows) is an `InputError`.

Every column is kept (other than `id`, `site` and `literal`, which relocation reads) so the
regenerated table has the same columns as the one the user wrote.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rankguard.core.errors import ErrorRecord, InputError

REQUIRED = ("id", "site", "literal")
# A site cell that says "no site": prose rows are often written this way.
_NO_SITE = frozenset({"", "-", "\u2014", "\u2013", "n/a", "none"})  # em and en dashes too
_PIN = re.compile(
    r"^\s*(?:[-*]\s+)?(?:\*\*|__)?pin(?:\*\*|__)?\s*:\s*(?:\*\*)?\s*`?([^`\s*]+)`?", re.I
)
_SITE = re.compile(r"^(?P<path>[^:]+?):(?P<line>\d+)$")
# Between the sites of one cell (an ambiguous row regenerated): a Markdown line break, `,`, `;`.
_SITES_SPLIT = re.compile(r"\s*(?:<br\s*/?>|[,;])\s*", re.I)
_SEPARATOR = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")


@dataclass(frozen=True, order=True)
class Cited:
    path: str
    line: int

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line}

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass
class Row:
    number: int  # 1-based among data rows
    id: str
    literal: str
    cited: Cited | None  # the first site the row cites
    cells: dict[str, str]  # every column by its normalised name, as written
    sites: tuple[Cited, ...] = ()  # every site the row cites (an ambiguous row cites several)


@dataclass
class Inventory:
    path: str
    format: str  # md | csv | json
    pin: str | None
    columns: list[str]  # normalised names, in the input's order
    headers: dict[str, str]  # normalised name -> header as written
    rows: list[Row] = field(default_factory=list)
    errors: list[ErrorRecord] = field(default_factory=list)
    # Markdown only: the file's lines and where the pin line and the table sit, so a
    # regeneration can replace them and keep the surrounding prose.
    lines: list[str] = field(default_factory=list)
    pin_line: int | None = None
    table_span: tuple[int, int] | None = None


def normalise(header: str) -> str:
    """`Site (file:line)` -> `site`: case, emphasis and a parenthesised hint do not matter."""
    name = re.sub(r"\s*\(.*\)\s*$", "", header.strip())
    return name.strip("`*_ ").strip().lower()


def unquote(cell: str) -> str:
    """A Markdown cell's text: outer whitespace and one level of code backticks removed."""
    text = cell.strip()
    match = re.fullmatch(r"(`+)\s?(.*?)\s?\1", text, re.S)
    return match.group(2) if match else text


def parse_sites(text: str) -> tuple[Cited, ...]:
    """A site cell: one `path:line`, several (`a.py:3<br>b.py:9`, or with `,` or `;`, each
    maybe in backticks), or a "no site" marker (none); anything else -> ValueError."""
    whole = unquote(text)
    if whole.lower() in _NO_SITE:
        return ()
    out: list[Cited] = []
    for piece in _SITES_SPLIT.split(text.strip()):
        site = unquote(piece)
        match = _SITE.match(site)
        if not match or int(match.group("line")) < 1:
            raise ValueError(f"site '{whole}' is not path:line")
        out.append(Cited(match.group("path").strip().removeprefix("./"), int(match.group("line"))))
    return tuple(out)


def _make_row(
    inv: Inventory, number: int, where: str, cells: dict[str, str], seen: set[str]
) -> None:
    """Validate one row's cells; append it, or an error naming it."""

    def fail(message: str) -> None:
        inv.errors.append(ErrorRecord(inv.path, f"row {number}{where}: {message}"))

    row_id = unquote(cells.get("id", ""))
    literal = unquote(cells.get("literal", ""))
    if not row_id:
        return fail("empty id")
    if not literal:
        return fail(f"'{row_id}': empty literal")
    if row_id in seen:
        return fail(f"duplicate id '{row_id}'")
    try:
        sites = parse_sites(cells.get("site", ""))
    except ValueError as exc:
        return fail(f"'{row_id}': {exc}")
    seen.add(row_id)
    inv.rows.append(Row(number, row_id, literal, sites[0] if sites else None, cells, sites))


def _check_columns(path: str, columns: list[str]) -> None:
    missing = [c for c in REQUIRED if c not in columns]
    if missing:
        raise InputError(
            f"{path}: the inventory table has no {', '.join(missing)} column "
            f"(needs {', '.join(REQUIRED)})"
        )


def _split_cells(line: str) -> list[str]:
    text = line.strip()
    if text.startswith("|"):
        text = text[1:]
    if text.endswith("|") and not text.endswith("\\|"):
        text = text[:-1]
    return [cell.replace("\\|", "|").strip() for cell in _CELL_SPLIT.split(text)]


def read_markdown(path: str, text: str) -> Inventory:
    lines = text.splitlines()
    start = next(
        (
            i
            for i in range(len(lines) - 1)
            if lines[i].lstrip().startswith("|") and _SEPARATOR.match(lines[i + 1])
        ),
        None,
    )
    if start is None:
        raise InputError(f"{path}: no Markdown table found (needs columns {', '.join(REQUIRED)})")
    headers = _split_cells(lines[start])
    columns = [normalise(h) for h in headers]
    _check_columns(path, columns)
    inv = Inventory(path, "md", None, columns, dict(zip(columns, headers, strict=True)))
    inv.lines = lines
    for i in range(start):
        match = _PIN.match(lines[i])
        if match:
            inv.pin, inv.pin_line = match.group(1), i
    seen: set[str] = set()
    end = start + 2
    while end < len(lines) and lines[end].lstrip().startswith("|"):
        number = end - start - 1
        cells = _split_cells(lines[end])
        where = f" (line {end + 1})"
        if len(cells) != len(columns):
            inv.errors.append(
                ErrorRecord(
                    path, f"row {number}{where}: {len(cells)} cells, the header has {len(columns)}"
                )
            )
        else:
            _make_row(inv, number, where, dict(zip(columns, cells, strict=True)), seen)
        end += 1
    inv.table_span = (start, end)
    return inv


def read_csv(path: str, text: str) -> Inventory:
    lines = text.splitlines(keepends=True)
    pin = None
    skip = 0
    while skip < len(lines) and (not lines[skip].strip() or _PIN.match(lines[skip].lstrip("# "))):
        match = _PIN.match(lines[skip].lstrip("# "))
        if match:
            pin = match.group(1)
        skip += 1
    reader = csv.reader(io.StringIO("".join(lines[skip:])))
    try:
        headers = next(reader)
    except StopIteration:
        raise InputError(f"{path}: empty inventory (no header row)") from None
    except csv.Error as exc:
        raise InputError(f"{path}: CSV error in the header: {exc}") from exc
    columns = [normalise(h) for h in headers]
    _check_columns(path, columns)
    inv = Inventory(path, "csv", pin, columns, dict(zip(columns, headers, strict=True)))
    seen: set[str] = set()
    number = 0
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            number += 1
            inv.errors.append(ErrorRecord(path, f"row {number}: CSV error: {exc}"))
            continue
        if not any(c.strip() for c in cells):
            continue
        number += 1
        where = f" (line {reader.line_num + skip})"
        if len(cells) != len(columns):
            inv.errors.append(
                ErrorRecord(
                    path, f"row {number}{where}: {len(cells)} cells, the header has {len(columns)}"
                )
            )
            continue
        _make_row(inv, number, where, dict(zip(columns, cells, strict=True)), seen)
    return inv


def _json_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (str, int, float)):
        return str(value)
    return json.dumps(value, sort_keys=True)


def read_json(path: str, text: str) -> Inventory:
    """A list of row objects, or `{"pin": ..., "rows": [...]}` (relocate's own output too)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: invalid JSON: {exc}") from exc
    pin = None
    if isinstance(data, dict):
        pin = data.get("pin")
        data = data.get("rows")
    if not isinstance(data, list):
        raise InputError(f"{path}: expected a list of rows or an object with 'rows'")
    columns = list(REQUIRED)
    for item in data:
        if isinstance(item, dict):
            for key, value in item.items():
                name = normalise(str(key))
                skip = name in ("cited", "sites", "chain", "prose", "status")
                if not skip and name not in columns and not isinstance(value, (dict, list)):
                    columns.append(name)
    inv = Inventory(path, "json", str(pin) if pin else None, columns, {c: c for c in columns})
    seen: set[str] = set()
    for number, item in enumerate(data, start=1):
        if not isinstance(item, dict):
            inv.errors.append(ErrorRecord(path, f"row {number}: not an object"))
            continue
        item = {normalise(str(k)): v for k, v in item.items()}
        cited = item.get("cited")
        if "site" not in item and isinstance(cited, dict):
            item["site"] = f"{cited.get('path')}:{cited.get('line')}"
        cells = {c: _json_cell(item.get(c)) for c in columns}
        _make_row(inv, number, "", cells, seen)
    return inv


def read_inventory(path: Path) -> Inventory:
    """Read an inventory file; the format comes from the suffix, else from the content."""
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise InputError(f"{path}: cannot read inventory: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: inventory is not valid UTF-8 (offset {exc.start})") from exc
    name = str(path)
    suffix = path.suffix.lower()
    if suffix == ".json" or (
        suffix not in (".md", ".markdown", ".csv") and text.lstrip()[:1] in ("[", "{")
    ):
        inv = read_json(name, text)
    elif suffix == ".csv":
        inv = read_csv(name, text)
    elif suffix in (".md", ".markdown") or "|" in text:
        inv = read_markdown(name, text)
    else:
        inv = read_csv(name, text)
    if not inv.rows and not inv.errors:
        raise InputError(f"{path}: empty inventory: the table has no rows")
    return inv
