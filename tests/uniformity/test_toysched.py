"""The bundled example's rank-divergence findings are exactly EXPECTED.md §4 (H1, no NH row)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import EXAMPLE, cli_json, expected_section


def _rows(prefix: str) -> list[list[str]]:
    rows = []
    for line in expected_section("## 4. rank-divergent-collective").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and re.fullmatch(rf"{prefix}\d+", cells[0]):
            rows.append(cells)
    return rows


@pytest.fixture(scope="module")
def findings() -> list[dict]:
    code, result = cli_json(
        "check",
        str(EXAMPLE),
        "--select",
        "rank-divergent-collective",
        "--format",
        "json",
        "--no-cache",
    )
    assert code == 1
    return result["findings"]


def test_exactly_the_hazard_rows(findings: list[dict]) -> None:
    hazards = _rows("H")
    assert len(findings) == len(hazards) == 1
    row, got = hazards[0], findings[0]
    assert got["function"] == row[1].strip("`")
    assert got["condition"]["text"] == row[2].strip("`")
    path, line = row[3].rsplit(":", 1)
    assert (got["condition"]["path"], got["condition"]["line"]) == (path, int(line))
    site = re.match(r"(\S+):(\d+) \(`([^`]+)`\)", row[4])
    assert site
    assert (got["path"], got["line"]) == (site.group(1), int(site.group(2)))
    assert got["collective"] == {
        "callee": site.group(3),
        "path": site.group(1),
        "line": int(site.group(2)),
    }
    primitives = re.findall(r"[NP]\d+ (\S+):(\d+)", row[5])
    assert [(p["path"], p["line"]) for p in got["primitives"]] == [
        (p, int(n)) for p, n in primitives
    ]


def test_source_and_chain_match_the_row(findings: list[dict]) -> None:
    row = _rows("H")[0]
    source = findings[0]["source"]
    assert source["kind"] == "driver"
    assert source["text"] == "self.tree_cache.available_size()"
    assert f"{source['path']}:{source['line']}" in row[6]
    chain = source["chain"]
    assert chain[0]["text"] == "limit = self._local_admit_limit()" and chain[0]["line"] == 160
    functions = [hop["function"].rsplit(".", 1)[-1] for hop in chain]
    # limit (get_next_batch_to_run) <- _local_admit_limit <- get_num_allocatable_reqs
    assert functions.index("_local_admit_limit") < functions.index("get_num_allocatable_reqs")
    for name in re.findall(r"`toysched\.[\w.]+\.(\w+)`", row[6])[:-1]:
        assert name in functions


def test_no_finding_at_any_non_hazard_row(findings: list[dict]) -> None:
    reported = {(f["condition"]["path"], f["condition"]["line"]) for f in findings}
    non_hazards = _rows("NH")
    assert len(non_hazards) == 10
    for row in non_hazards:
        path, line = row[3].rsplit(":", 1)
        assert (path, int(line)) not in reported, row


def test_message_names_collective_condition_and_source(findings: list[dict]) -> None:
    message = findings[0]["message"]
    for part in ("torch.distributed.broadcast", "limit > 0", "line 163", "available_size"):
        assert part in message
