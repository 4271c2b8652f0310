"""`rankguard inventory census`: bare vs genuine counts, streamed, bytes-safe."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest

from rankguard.analysis.inventory import census as census_mod
from rankguard.analysis.inventory.census import Tally, scan_log
from rankguard.analysis.inventory.templates import line_matchers
from rankguard.cli import main
from rankguard.summary.emissions import percent_parts
from tests.inventory.conftest import History, inventory_md, line_of

TOOLS = "pkg/tools/util.py"

LOG = b"".join(
    [
        b"[2024-01-01 00:00:00 TP0] cache flushed 12 entries\n",  # 1 genuine
        b"[2024-01-01 00:00:01 TP0] TODO: why was cache flushed 3 entries twice?\n",  # 2 prose
        b"docs: the message 'cache flushed %d entries' means the cache was flushed\n",  # 3 prose
        b"\xff\xfe\x00 binary junk then cache flushed 7 entries  \r\n",  # 4 genuine, bad UTF-8
        b"[TP1] helper fired: 3\n",  # 5
        b"[TP1] step done for batch 1\n",  # 6 (a line of another row)
        b"[TP1] cache flushed 99 entries\n",  # 7 genuine
        b"cache flushed",  # 8 prose, no newline at the end of the log
    ]
)


def run_census(tmp_path: Path, h: History, logs: list[Path], *extra: str):
    rows = [
        ("F1", f"{TOOLS}:{line_of(h.util_b, 'cache flushed')}", "cache flushed"),
        ("F2", f"{TOOLS}:{line_of(h.util_b, 'helper fired')}", "helper fired"),
        ("F3", "pkg/util.py:1", "the pool is exhausted"),
    ]
    inv = tmp_path / "inv.md"
    inv.write_text(inventory_md(rows, h.b))
    return main(
        [
            "inventory",
            "census",
            str(inv),
            *map(str, logs),
            "--repo",
            str(h.root),
            "--pin",
            h.b,
            "--no-cache",
            *extra,
        ]
    )


def test_census_counts_prose_beside_genuine(tmp_path, history, capsys):
    log = tmp_path / "boot.log"
    log.write_bytes(LOG)
    code = run_census(tmp_path, history, [log], "--format", "json")
    payload = json.loads(capsys.readouterr().out)
    rows = {r["id"]: r for r in payload["rows"]}
    assert code == 1  # F3 is prose-only
    f1 = rows["F1"]
    assert (f1["bare"], f1["genuine"]) == (6, 3)
    assert f1["first"] == {"log": str(log), "line": 1}
    assert f1["last"] == {"log": str(log), "line": 7}
    assert f1["first_bare"]["line"] == 1 and f1["last_bare"]["line"] == 8
    assert f1["templates"] == ["cache flushed %d entries"]
    assert (rows["F2"]["bare"], rows["F2"]["genuine"]) == (1, 1)
    assert rows["F3"]["status"] == "prose-only"
    assert (rows["F3"]["bare"], rows["F3"]["genuine"]) == (0, 0)
    assert payload["logs"] == [{"path": str(log), "lines": 8, "bytes": len(LOG)}]
    assert payload["pin"] == history.b


def test_census_several_logs_text_and_md(tmp_path, history, capsys):
    first, second = tmp_path / "a.log", tmp_path / "b.log.gz"
    first.write_bytes(b"nothing here\n")
    with gzip.open(second, "wb") as handle:
        handle.write(LOG)
    run_census(tmp_path, history, [first, second], "--format", "json")
    f1 = json.loads(capsys.readouterr().out)["rows"][0]
    assert f1["first"] == {"log": str(second), "line": 1}
    assert (f1["bare"], f1["genuine"]) == (6, 3)
    run_census(tmp_path, history, [first, second])
    text = capsys.readouterr().out
    assert "F1  held" in text and f"{second}:7" in text
    run_census(tmp_path, history, [first, second], "--format", "md")
    md = capsys.readouterr().out
    assert md.splitlines()[2].startswith("| id | status | bare | genuine |")


def test_census_unreadable_log(tmp_path, history, capsys):
    code = run_census(tmp_path, history, [tmp_path / "missing.log"])
    assert code == 2
    assert "cannot read log" in capsys.readouterr().err
    code = run_census(tmp_path, history, [tmp_path])
    assert code == 2


def _tallies(across: bool = False) -> list[Tally]:
    templates = {
        "cache flushed": "cache flushed %d entries",
        "helper fired": "helper fired: %s",
        "multi": "first line\nmulti line %s end",
    }
    out = []
    for literal, template in templates.items():
        parts = tuple(percent_parts(template))
        matchers = line_matchers(parts, literal, across)
        out.append(Tally(literal.encode(), matchers, []))
    return out


def _naive(data: bytes, tallies: list[Tally]) -> list[tuple[int, int]]:
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return [
        (
            sum(t.needle in line for line in lines),
            sum(t.needle in line and any(m.matches(line) for m in t.inline) for line in lines),
        )
        for t in tallies
    ]


@pytest.mark.parametrize("seed", range(6))
def test_block_boundaries_match_naive_count(tmp_path, monkeypatch, seed):
    """Tiny blocks put every line across a boundary; counts must not change."""
    rng = random.Random(seed)
    pieces = [
        b"cache flushed 1 entries",
        b"x cache flushed entries y",
        b"helper fired: ",
        b"helper fired: 3",
        b"multi line 4 end",
        b"\xff\xfe",
        b"",
        b"noise " * 20,
    ]
    lines = [b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 3))) for _ in range(300)]
    data = b"\n".join(lines) + (b"\n" if seed % 2 else b"")
    log = tmp_path / "r.log"
    log.write_bytes(data)
    monkeypatch.setattr(census_mod, "BLOCK", rng.choice([1, 7, 64, 1000]))
    tallies = _tallies()
    stats = scan_log(log, tallies)
    assert [(t.bare, t.genuine) for t in tallies] == _naive(data, _tallies())
    assert stats.lines == len(data.split(b"\n")) - (1 if data.endswith(b"\n") else 0)


def test_long_lines_are_windowed(tmp_path, monkeypatch):
    monkeypatch.setattr(census_mod, "BLOCK", 64)
    monkeypatch.setattr(census_mod, "LONG_LINE", 256)
    long_genuine = b"cache flushed " + b"9" * 5000 + b" entries"  # literal at the start only
    long_prose = b"z" * 3000 + b"helper fired" + b"z" * 3000
    data = b"short cache flushed 1 entries\n" + long_genuine + b"\n" + long_prose + b"\nend\n"
    log = tmp_path / "long.log"
    log.write_bytes(data)
    tallies = _tallies()
    stats = scan_log(log, tallies)
    flushed, fired, _ = tallies
    assert (flushed.bare, flushed.genuine) == (2, 1)  # long line: template start out of window
    assert flushed.last_bare.line == 2
    assert (fired.bare, fired.genuine) == (1, 0)
    assert fired.first_bare.line == 3
    assert stats.lines == 4
    assert stats.long_lines == 2


def test_long_line_genuine_within_window(tmp_path, monkeypatch):
    monkeypatch.setattr(census_mod, "BLOCK", 64)
    monkeypatch.setattr(census_mod, "LONG_LINE", 256)
    data = b"p" * 2000 + b" helper fired: 12\nnext\n"
    log = tmp_path / "long.log"
    log.write_bytes(data)
    tallies = _tallies()
    scan_log(log, tallies)
    assert (tallies[1].bare, tallies[1].genuine) == (1, 1)


def test_across_fields_census(tmp_path):
    parts = tuple(percent_parts("cache flushed %d entries"))
    literal = "flushed 12 entries"
    matchers = line_matchers(parts, literal, across_fields=True)
    assert matchers and not line_matchers(parts, literal)
    tally = Tally(literal.encode(), [], matchers)
    log = tmp_path / "a.log"
    log.write_bytes(b"cache flushed 12 entries\ncache flushed 3 entries\nflushed 12 entries x\n")
    scan_log(log, [tally])
    assert (tally.bare, tally.genuine) == (2, 2)
    assert tally.first.line == 1 and tally.last.line == 2
