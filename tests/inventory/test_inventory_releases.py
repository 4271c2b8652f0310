"""An auditor's inventory across two releases of a namespace-layout project, end to end.

The repository is built in the test from `data/two_releases/{a,b}`: two commits of a tree whose
`proj/core` folder has no `__init__.py` (so `utils/common.py` and `layers/utils/common.py` must
keep different module names), between which literals moved, went to another file, were
duplicated, commented out or removed, one is emitted by `warning_once`, one only by an
unrecognised call, one only ever lived in a docstring. The table taken at A is relocated at B,
the regenerated table is read back, relocated again (nothing moves), and regenerated again
(nothing changes).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from rankguard.analysis.inventory import read_inventory
from rankguard.analysis.inventory.relocate import relocate_rows
from rankguard.analysis.inventory.sites import EmitSite
from rankguard.analysis.inventory.table import Cited, Row
from rankguard.cli import main
from tests.inventory.conftest import commit, git, line_of

DATA = Path(__file__).parent / "data" / "two_releases"
SCHED = "proj/core/managers/scheduler.py"
MIXIN = "proj/core/managers/mixin.py"
UTILS = "proj/core/utils/common.py"
LAYERS = "proj/core/layers/utils/common.py"
ARGS = "proj/core/server_args.py"


@dataclass
class Releases:
    root: Path
    a: str
    b: str


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> Releases:
    root = tmp_path_factory.mktemp("releases")
    git(root, "init", "-q")
    shutil.copytree(DATA / "a", root, dirs_exist_ok=True)
    (root / "pyproject.toml").write_text('[tool.rankguard]\nrounds = ["*.event_loop_normal"]\n')
    a = commit(root, "release A")
    shutil.rmtree(root / "proj")
    shutil.copytree(DATA / "b", root, dirs_exist_ok=True)
    b = commit(root, "release B")
    return Releases(root, a, b)


def _at(release: str, rel: str, snippet: str) -> str:
    return f"{rel}:{line_of((DATA / release / rel).read_text(), snippet)}"


ROWS = [
    ("R1", _at("a", SCHED, "got default untyped"), "got default untyped message"),
    ("R2", _at("a", SCHED, "step finished"), "step finished for batch"),
    ("R3", _at("a", SCHED, "queue overflow"), "queue overflow, dropping request"),
    ("R4", _at("a", SCHED, "shutdown requested"), "shutdown requested by peer"),
    ("R5", _at("a", UTILS, "slow rank detected"), "slow rank detected in group"),
    ("R6", _at("a", LAYERS, "layer cache ready"), "layer cache ready"),
    ("R7", _at("a", ARGS, "negative tensor"), "negative tensor parallel size"),
    ("R8", _at("a", SCHED, "bad flag value"), "bad flag value given"),
    ("R9", _at("a", UTILS, "pool drained"), "the pool drained completely"),
]


def _table(pin: str) -> str:
    lines = [f"# Emitted literals\n\npin: {pin}\n", "| id | site | literal | reachable | note |"]
    lines.append("|---|---|---|---|---|")
    lines += [f"| {i} | `{site}` | `{lit}` | ? | n{i} |" for i, site, lit in ROWS]
    return "\n".join(lines) + "\n\nNotes after the table stay.\n"


def _relocate(inventory: Path, h: Releases, pin: str, *extra: str) -> int:
    args = ["inventory", "relocate", str(inventory), "--repo", str(h.root), "--pin", pin]
    return main([*args, "--no-cache", *extra])


def _json(tmp_path: Path, h: Releases, text: str, pin: str, capsys) -> tuple[int, dict]:
    inv = tmp_path / "inv.md"
    inv.write_text(text)
    code = _relocate(inv, h, pin, "--format", "json")
    return code, json.loads(capsys.readouterr().out)


def test_every_row_holds_at_its_own_pin(tmp_path, releases, capsys):
    code, payload = _json(tmp_path, releases, _table(releases.a), releases.a, capsys)
    statuses = {row["id"]: row["status"] for row in payload["rows"]}
    assert statuses == {f"R{i}": "held" for i in range(1, 8)} | {
        "R8": "prose-only",  # only ever an argparse failure, never a log line
        "R9": "prose-only",
    }
    assert payload["errors"] == []
    assert code == 1


def test_relocated_at_the_next_release(tmp_path, releases, capsys):
    h = releases
    code, payload = _json(tmp_path, h, _table(h.a), h.b, capsys)
    rows = {row["id"]: row for row in payload["rows"]}
    assert {i: r["status"] for i, r in rows.items()} == {
        "R1": "moved",
        "R2": "ambiguous",
        "R3": "prose-only",
        "R4": "wrong-file",
        "R5": "gone",
        "R6": "held",
        "R7": "held",
        "R8": "prose-only",
        "R9": "prose-only",
    }
    assert payload["errors"] == []
    assert not [w for w in payload["warnings"] if w["kind"] == "module-name-clash"]
    assert code == 1  # rows not held, and nothing hides it behind an exit 2
    r1 = rows["R1"]["sites"]
    assert [(s["path"], s["function"], s["kind"], s["callee"]) for s in r1] == [
        (SCHED, "proj.core.managers.scheduler.Scheduler.recv", "logging", "logger.warning_once")
    ]
    assert rows["R1"]["reachable"] is True
    assert rows["R6"]["reachable"] is True  # through the import of the namespace package
    assert rows["R4"]["sites"][0]["path"] == MIXIN
    assert rows["R3"]["prose"] == [
        {
            "path": SCHED,
            "line": line_of((DATA / "b" / SCHED).read_text(), "queue"),
            "kind": "comment",
        }
    ]
    assert rows["R8"]["prose"][0]["kind"] == "call"
    assert rows["R8"]["prose"][0]["callee"] == "self.parser.error"
    assert rows["R9"]["prose"][0]["kind"] == "docstring"


def _regenerate(tmp_path: Path, h: Releases, text: str, name: str) -> tuple[int, str]:
    inv = tmp_path / f"{name}.md"
    inv.write_text(text)
    out = tmp_path / f"{name}.out.md"
    code = _relocate(inv, h, h.b, "-o", str(out))
    return code, out.read_text()


def test_regenerated_table_round_trips_and_is_idempotent(tmp_path, releases, capsys):
    h = releases
    code, first = _regenerate(tmp_path, h, _table(h.a), "first")
    assert code == 1
    assert f"pin: {h.b}" in first and "Notes after the table stay." in first
    # The reader accepts what regeneration writes: every row, no error.
    inv = read_inventory(tmp_path / "first.out.md")
    assert inv.errors == []
    assert [row.id for row in inv.rows] == [r[0] for r in ROWS]
    cells = {row.id: row.cells for row in inv.rows}
    assert cells["R5"]["site"] == "—"  # gone: the stale site is not kept
    assert cells["R3"]["site"] == "—"
    assert (
        cells["R3"]["prose"]
        == f"`{SCHED}:{line_of((DATA / 'b' / SCHED).read_text(), 'queue')}` (comment)"
    )
    assert "call `self.parser.error`" in cells["R8"]["prose"]
    assert cells["R1"]["prose"] == ""
    assert len(inv.rows[1].sites) == 2  # the ambiguous row cites both sites
    # Relocated again at the same pin: nothing is moved or in the wrong file, no error.
    code, payload = _json(tmp_path, h, first, h.b, capsys)
    statuses = {row["id"]: row["status"] for row in payload["rows"]}
    assert not {"moved", "wrong-file"} & set(statuses.values())
    assert statuses["R1"] == statuses["R4"] == statuses["R6"] == "held"
    assert payload["errors"] == []
    assert code == 1
    # Regenerating the regenerated table changes nothing.
    _, second = _regenerate(tmp_path, h, first, "second")
    assert second == first


def test_citing_any_line_of_a_multiline_call_holds():
    # An auditor cites the literal's own line inside a call spanning lines 10-13.
    site = EmitSite("m.py", 10, "m.f", "logging", "logger.warning_once", ((False, "x y"),), 13)
    for line, status in ((10, "held"), (12, "held"), (14, "moved"), (9, "moved")):
        row = Row(1, "R1", "x y", Cited("m.py", line), {}, (Cited("m.py", line),))
        (rel,) = relocate_rows([row], [site], [], [])
        assert rel.status == status, line
