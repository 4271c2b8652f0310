"""The bundled example's unwatched waits are exactly EXPECTED.md §5 (U1), the rest covered."""

from __future__ import annotations

import re

import pytest

from tests.conftest import EXAMPLE, cli_json, expected_section


def _section() -> str:
    return expected_section("## 5. unwatched-collective")


@pytest.fixture(scope="module")
def findings() -> list[dict]:
    code, result = cli_json(
        "check", str(EXAMPLE), "--select", "unwatched-collective", "--format", "json", "--no-cache"
    )
    assert code == 1
    return result["findings"]


def test_exactly_u1(findings: list[dict]) -> None:
    rows = [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in _section().splitlines()
        if re.match(r"\|\s*U\d+", line)
    ]
    assert len(rows) == len(findings) == 1
    row, got = rows[0], findings[0]
    assert got["round"] == row[1].strip("`")
    assert got["function"] == row[2].strip("`")
    site = re.match(r"(\S+):(\d+) \(`([^`]+)`\)", row[3])
    assert site
    assert (got["path"], got["line"]) == (site.group(1), int(site.group(2)))
    assert got["collective"]["callee"] == site.group(3)
    primitive = re.match(r"P\d+ `([^`]+)` (\S+):(\d+)", row[4])
    assert primitive
    wait = got["waits"][0]
    assert (wait["callee"], wait["path"], wait["line"]) == (
        primitive.group(1),
        primitive.group(2),
        int(primitive.group(3)),
    )
    assert got["stamp"] == "broadcast_pyobj"


def test_every_stamped_with_covers_its_waits(findings: list[dict]) -> None:
    stamps = re.findall(r"\| `(\w+)` \| (\S+):(\d+) \|", _section())
    assert len(stamps) == 8
    lines = {(f["path"], f["line"]) for f in findings}
    for _name, path, line in stamps:
        # The stamped call sits on the line after its `with`.
        assert (path, int(line) + 1) not in lines
