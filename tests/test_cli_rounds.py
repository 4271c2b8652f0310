"""`rankguard rounds` and `rankguard graph` on the bundled example, and exit codes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rankguard.cli import main
from tests.conftest import EXAMPLE, write_tree

Row = tuple[str, str, list[str], list[str]]


def _expected_rows() -> dict[str, list[Row]]:
    """Section 1 of examples/toysched/EXPECTED.md: round -> [(callee, site, chain hops,
    primitive sites below the event)], one row per collective event."""
    text = (EXAMPLE / "EXPECTED.md").read_text()
    section = text.split("## 1.")[1].split("\n## 2.")[0]
    rows: dict[str, list[Row]] = {}
    current = None
    for line in section.splitlines():
        heading = re.match(r"### 1[ab]\. `([^`]+)`", line)
        if heading:
            current = heading.group(1)
            rows[current] = []
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if current and len(cells) == 5 and re.fullmatch(r"[NP]\d+", cells[0]):
            hops = [h.replace("`", "").replace(" @ ", "@") for h in cells[3].split(" → ")]
            primitives = cells[4].split(", ")
            rows[current].append((cells[1].strip("`"), cells[2], hops, primitives))
    return rows


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_example_rounds_match_expected(capsys, tmp_path: Path):
    code, out, _ = _run(
        capsys, "rounds", str(EXAMPLE), "--format", "json", "--cache-dir", str(tmp_path)
    )
    assert code == 0
    got = {
        r["round"]: [
            (
                c["callee"],
                f"{c['path']}:{c['line']}",
                [f"{h['function']}@{h['path']}:{h['line']}" for h in c["chain"]],
                [f"{p['path']}:{p['line']}" for p in c["primitives"]],
            )
            for c in r["collectives"]
        ]
        for r in json.loads(out)["rounds"]
    }
    assert got == _expected_rows()


def test_text_output_reads_like_a_stack(capsys, tmp_path: Path):
    code, out, _ = _run(capsys, "rounds", str(EXAMPLE), "--cache-dir", str(tmp_path))
    assert code == 0
    block = out.split("torch.distributed.all_gather_object")[1].splitlines()[1:3]
    assert block == [
        "      at toysched.managers.grammar.GrammarManager.poll_ready "
        "(toysched/managers/grammar.py:66)",
        "      at toysched.managers.scheduler.Scheduler.event_loop_normal "
        "(toysched/managers/scheduler.py:241)",
    ]


def test_graph_json_contract(capsys, tmp_path: Path):
    code, out, _ = _run(
        capsys,
        "graph",
        str(EXAMPLE),
        "--callees",
        "toysched.managers.scheduler.Scheduler.__init__",
        "--format",
        "json",
        "--no-cache",
    )
    assert code == 0
    edges = json.loads(out)["edges"]
    assert {"caller", "callee", "kind", "path", "line"} <= set(edges[0])
    watchdog = [e for e in edges if e["callee"].endswith("Scheduler.watchdog_loop")]
    assert watchdog and {e["kind"] for e in watchdog} == {"callback"}


def test_exit_codes(capsys, tmp_path: Path):
    assert _run(capsys, "rounds", str(tmp_path / "missing"))[0] == 2
    write_tree(tmp_path / "t", {"pyproject.toml": "[tool.rankguard]\nbogus = []\n", "a.py": ""})
    code, _, err = _run(capsys, "rounds", str(tmp_path / "t"), "--no-cache")
    assert code == 2 and "unknown key 'bogus'" in err
    loop = "import torch.distributed as dist\n\n\ndef event_loop():\n    while True:\n"
    loop += "        dist.barrier()\n"
    write_tree(tmp_path / "u", {"ok.py": loop, "broken.py": "def (\n"})
    code, out, err = _run(capsys, "rounds", str(tmp_path / "u"), "--no-cache", "--format", "json")
    assert code == 2  # an unreadable file outranks everything, but the run went on
    assert json.loads(out)["errors"][0]["path"] == "broken.py"
    with pytest.raises(SystemExit) as usage:
        main(["rounds", "--format", "yaml"])
    assert usage.value.code == 2
