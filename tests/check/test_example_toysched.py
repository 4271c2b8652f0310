"""The bundled example's findings are exactly B1-B15 of EXPECTED.md §2, with their chains."""

from __future__ import annotations

import json
import re

from rankguard.cli import main
from tests.conftest import EXAMPLE


def _expected() -> dict[str, dict]:
    text = (EXAMPLE / "EXPECTED.md").read_text()
    section = text.split("## 2.")[1].split("\n## 3.")[0]
    rows: dict[str, dict] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 9 or not re.fullmatch(r"B\d+", cells[0]):
            continue
        collective = re.match(r"[NP]\d+ `([^`]+)` (\S+):(\d+)", cells[2])
        assert collective, cells[2]
        site = cells[5].rsplit(":", 1)
        hops = []
        for hop in cells[8].split(" → "):
            function, where = hop.replace("`", "").split(" @ ")
            path, number = where.rsplit(":", 1)
            hops.append({"function": function, "path": path, "line": int(number)})
        rows[cells[0]] = {
            "round": cells[1].strip("`"),
            "collective": (collective.group(1), collective.group(2), int(collective.group(3))),
            "callee": cells[3].strip("`"),
            "text": cells[4].strip("`"),
            "site": (site[0], int(site[1])),
            "kind": cells[6],
            "cadenced": cells[7].startswith("yes"),
            "chain": hops,
        }
    return rows


def _findings(capsys, *extra: str) -> tuple[int, list[dict]]:
    code = main(["check", str(EXAMPLE), "--format", "json", "--no-cache", *extra])
    out = capsys.readouterr().out
    return code, json.loads(out)["findings"]


def test_expected_table_is_read():
    assert sorted(_expected(), key=lambda k: int(k[1:])) == [f"B{i}" for i in range(1, 16)]


def test_findings_are_exactly_the_planted_blocking_calls(capsys):
    code, findings = _findings(capsys)
    assert code == 1
    got = {
        (
            f["round"],
            (f["collective"]["callee"], f["collective"]["path"], f["collective"]["line"]),
            f["blocking"]["callee"],
            f["blocking"]["text"],
            (f["path"], f["line"]),
            f["blocking"]["kind"],
            f["cadenced"],
            json.dumps(f["chain"], sort_keys=True),
        )
        for f in findings
        if f["rule"] == "blocking-before-collective"
    }
    want = {
        (
            row["round"], row["collective"], row["callee"], row["text"], row["site"],
            row["kind"], row["cadenced"], json.dumps(row["chain"], sort_keys=True),
        )
        for row in _expected().values()
    }  # fmt: skip
    assert got == want


def test_every_finding_names_one_collective_and_is_confident(capsys):
    _, findings = _findings(capsys, "--select", "blocking-before-collective")
    assert len(findings) == 15
    # B8: `budget` is made on `self.device`, which static reading cannot place (medium); B14,
    # B15 copy to that device, a copy that blocks only if it is an accelerator (low).
    want_of = {
        ("toysched/managers/memory_mixin.py", 86): "medium",
        ("toysched/managers/memory_mixin.py", 83): "low",
        ("toysched/managers/scheduler.py", 187): "low",
    }
    for finding in findings:
        # B6's call is also reached in the round tail, so it delays N1 of the next round too.
        assert len(finding["collectives"]) == (2 if finding["line"] == 26 else 1)
        want = want_of.get((finding["path"], finding["line"]), "high")
        assert finding["confidence"] == want, finding
        assert finding["round_tail"] is (finding["line"] == 231)


def test_round_tail_is_reported_by_default(capsys):
    _, base = _findings(capsys, "--select", "blocking-before-collective")
    _, same = _findings(capsys, "--select", "blocking-before-collective", "--include-round-tail")
    _, head = _findings(capsys, "--select", "blocking-before-collective", "--no-round-tail")
    assert base == same
    extra = [f for f in base if f["round_tail"]]
    # B13: open() in _trace_round delays the next round's first collective (N1).
    assert [(f["path"], f["line"], f["collective"]["line"]) for f in extra] == [
        ("toysched/managers/scheduler.py", 231, 68)
    ]
    assert "before the next round's first collective" in extra[0]["message"]
    # B6's call site: from the tail it also delays N1, listed with B6.
    b6 = next(f for f in base if f["line"] == 26)
    assert [c["line"] for c in b6["collectives"]] == [39, 68]
    assert ("toysched/distributed/barrier.py", 36) not in {(f["path"], f["line"]) for f in base}
    assert [f for f in head if f["round_tail"]] == [] and len(head) == len(base) - 1
