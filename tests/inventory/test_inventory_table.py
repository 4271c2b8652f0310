"""Reading inventories: Markdown (with pin), CSV, JSON; malformed rows; unusable files."""

from __future__ import annotations

import json

import pytest

from rankguard.analysis.inventory.table import Cited, read_inventory
from rankguard.core.errors import InputError

MD = """\
# Audit of emitted literals

- **pin:** `abc123`

| ID | site (file:line) | Literal | note |
|---|---|---|---|
| E1 | `a/b.py:19` | `x \\| y` | keep me |
| E2 | a/c.py | `no line` | |
| E3 | a/c.py:4 | `` | |
| E1 | a/c.py:5 | `dup` | |
| E5 | — | `prose row` | |
| E6 | a/c.py:7 | `too` | many | cells |
| E7 | ./a/d.py:8 | plain literal | last |

After the table.
"""


def test_markdown(tmp_path):
    path = tmp_path / "inv.md"
    path.write_text(MD)
    inv = read_inventory(path)
    assert inv.pin == "abc123"
    assert inv.columns == ["id", "site", "literal", "note"]
    assert inv.headers["site"] == "site (file:line)"
    assert [r.id for r in inv.rows] == ["E1", "E5", "E7"]
    e1, e5, e7 = inv.rows
    assert e1.literal == "x | y" and e1.cited == Cited("a/b.py", 19)
    assert e1.cells["note"] == "keep me"
    assert e5.cited is None
    assert e7.cited == Cited("a/d.py", 8) and e7.literal == "plain literal" and e7.number == 7
    messages = [e.message for e in inv.errors]
    assert messages == [
        "row 2 (line 8): 'E2': site 'a/c.py' is not path:line",
        "row 3 (line 9): 'E3': empty literal",
        "row 4 (line 10): duplicate id 'E1'",
        "row 6 (line 12): 5 cells, the header has 4",
    ]
    assert all(e.path == str(path) for e in inv.errors)


def test_markdown_site_column_name(tmp_path):
    path = tmp_path / "inv.md"
    path.write_text("| id | site | literal |\n|:--|--:|---|\n| 1 | a.py:1 | `x` |\n")
    inv = read_inventory(path)
    assert inv.pin is None and inv.rows[0].cited == Cited("a.py", 1)


def test_csv(tmp_path):
    path = tmp_path / "inv.csv"
    path.write_text('# pin: v1.0\nid,site,literal,note\nA,x.py:3,"hello, world",n\nB,x.py,bad,\n\n')
    inv = read_inventory(path)
    assert inv.pin == "v1.0" and inv.format == "csv"
    assert [(r.id, r.literal) for r in inv.rows] == [("A", "hello, world")]
    assert inv.errors[0].message.startswith("row 2 (line 4): 'B': site")


def test_json_list_object_and_roundtrip(tmp_path):
    path = tmp_path / "inv.json"
    path.write_text(json.dumps([{"id": 1, "site": "a.py:2", "literal": "hi", "owner": "me"}]))
    inv = read_inventory(path)
    assert inv.rows[0].id == "1" and inv.rows[0].cells["owner"] == "me" and inv.pin is None
    relocated = {
        "pin": "abc",
        "rows": [
            {
                "id": "R",
                "literal": "hi",
                "cited": {"path": "a.py", "line": 3},
                "status": "held",
                "sites": [],
                "reachable": True,
            },
            "not an object",
        ],
    }
    path.write_text(json.dumps(relocated))
    inv = read_inventory(path)
    assert inv.pin == "abc" and inv.rows[0].cited == Cited("a.py", 3)
    assert "status" not in inv.columns and "reachable" in inv.columns
    assert inv.errors[0].message == "row 2: not an object"


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("e.md", "| id | site | literal |\n|---|---|---|\n", "empty inventory"),
        ("e.md", "no table at all\n", "no Markdown table"),
        ("e.md", "| id | literal |\n|---|---|\n| a | b |\n", "no site column"),
        ("e.csv", "", "empty inventory"),
        ("e.json", "{", "invalid JSON"),
        ("e.json", "[]", "empty inventory"),
    ],
)
def test_unusable(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        read_inventory(path)


def test_unreadable(tmp_path):
    with pytest.raises(InputError, match="cannot read inventory"):
        read_inventory(tmp_path / "missing.md")
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"| id | site | literal |\n\xff\n")
    with pytest.raises(InputError, match="not valid UTF-8"):
        read_inventory(bad)


@pytest.mark.parametrize(
    "cell",
    ["a.py:3<br>b/c.py:9", "`a.py:3`<br>`b/c.py:9`", "a.py:3<br/>b/c.py:9", "a.py:3, b/c.py:9"],
)
def test_a_cell_citing_several_sites(tmp_path, cell):
    # What regeneration writes for an ambiguous row is read back as all its sites.
    path = tmp_path / "inv.md"
    path.write_text(f"| id | site | literal |\n|---|---|---|\n| R1 | {cell} | `x` |\n")
    (row,) = read_inventory(path).rows
    assert row.sites == (Cited("a.py", 3), Cited("b/c.py", 9))
    assert row.cited == Cited("a.py", 3)


def test_a_bad_piece_in_a_several_sites_cell_names_the_row(tmp_path):
    path = tmp_path / "inv.md"
    path.write_text("| id | site | literal |\n|---|---|---|\n| R1 | a.py:3<br>junk | `x` |\n")
    inv = read_inventory(path)
    assert inv.rows == []
    assert "row 1 (line 3): 'R1': site 'a.py:3<br>junk' is not path:line" in inv.errors[0].message
