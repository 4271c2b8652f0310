"""`rankguard report` on a repository with history: every section, the verdict, exit codes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from rankguard.cli import main
from tests.report.conftest import Repo
from tests.report.programs import BASE_LOOP, base_files, head_files


@pytest.fixture
def history(make_repo: Callable[[str], Repo]) -> tuple[Repo, str, str]:
    repo = make_repo("repo")
    base = repo.commit(base_files(), "base")
    head = repo.commit(head_files(), "head")
    return repo, base, head


def report(capsys, repo: Repo, base: str, head: str, *extra: str) -> tuple[int, dict]:
    code = main(
        ["report", "--repo", str(repo.root), "--base", base, "--head", head, "--no-cache",
         "--format", "json", *extra]
    )  # fmt: skip
    out, _ = capsys.readouterr()
    return code, json.loads(out)


def test_contract_keys_and_verdict(capsys, history):
    repo, base, head = history
    code, data = report(capsys, repo, base, head)
    assert code == 1
    assert data["base"]["commit"] == base and data["head"]["commit"] == head
    for key in ("summary", "findings", "staleness", "emitted_literals", "ruff", "errors"):
        assert key in data
    summary = data["summary"]
    assert summary["status"] == "new-findings"
    assert summary["text"].startswith("FAIL: 2 new findings, 1 resolved, 1 moved")
    assert "\n" not in summary["text"]
    assert data["changed_files"] == [
        "pkg/budget.py", "pkg/loop.py", "pkg/other.py", "pkg/style.py", "pkg/waits.py"
    ]  # fmt: skip


def test_findings_new_resolved_and_line_drift(capsys, history):
    repo, base, head = history
    _, data = report(capsys, repo, base, head)
    f = data["findings"]
    new = sorted((x["rule"], x["path"], x["line"]) for x in f["new"])
    assert new == [
        ("blocking-before-collective", "pkg/loop.py", 27),  # time.sleep(2)
        ("stale-widening-term", "pkg/budget.py", 12),  # reserved() is now cached
    ]
    assert [(x["path"], x["blocking"]["callee"]) for x in f["resolved"]] == [
        ("pkg/loop.py", "gc.collect")
    ]
    # idle's sleep moved four lines down: same fingerprint, not new.
    assert f["unchanged"] == 1


def test_code_moved_to_another_module_is_moved_not_new(capsys, history):
    repo, base, head = history
    _, data = report(capsys, repo, base, head)
    (pair,) = data["findings"]["moved"]
    assert pair["base"]["path"] == "pkg/waits.py" and pair["head"]["path"] == "pkg/other.py"
    assert pair["base"]["fingerprint"] != pair["head"]["fingerprint"]
    hops = {hop["function"] for x in data["findings"]["new"] for hop in x.get("chain", ())}
    assert "pkg.other.wait" not in hops


def test_pure_line_drift_reports_nothing(capsys, make_repo):
    repo = make_repo("drift")
    base = repo.commit(base_files())
    head = repo.commit({"pkg/loop.py": "# shifted\n\n\n" + BASE_LOOP.lstrip("\n")})
    code, data = report(capsys, repo, base, head)
    assert code == 0 and data["summary"]["status"] == "clean"
    f = data["findings"]
    assert f["new"] == [] and f["resolved"] == [] and f["moved"] == [] and f["unchanged"] == 3
    assert data["emitted_literals"] == {"added": [], "changed": [], "moved": [], "removed": []}


def test_staleness_rows_new_and_changed(capsys, history):
    repo, base, head = history
    _, data = report(capsys, repo, base, head)
    st = data["staleness"]
    assert st["available"]
    assert [(r["term"], r["consumer"]["function"], r["verdict"]) for r in st["new"]] == [
        ("torch.cuda.mem_get_info", "pkg.budget.want", "n/a")  # uncached: no verdict
    ]
    (changed,) = st["changed"]
    assert changed["term"] == "torch.cuda.memory_reserved"
    assert changed["consumer"]["function"] == "pkg.budget.room"
    assert [b["cached"] for b in changed["base"]] == [False]
    assert [h["cached"] for h in changed["head"]] == [True]
    assert changed["head"][0]["verdict"] == "unsafe"


def test_emitted_literals(capsys, history):
    repo, base, head = history
    _, data = report(capsys, repo, base, head)
    lit = data["emitted_literals"]
    assert [(s["literal"], s["kind"]) for s in lit["added"]] == [
        ("pool exhausted at round end", "raise")
    ]
    assert [(s["literal"], s["function"]) for s in lit["removed"]] == [
        ("draining the pool", "pkg.loop.drain")
    ]
    assert [(p["base"]["literal"], p["head"]["literal"]) for p in lit["changed"]] == [
        ("round %d started", "round %d begun")
    ]
    assert [(p["base"]["function"], p["head"]["function"]) for p in lit["moved"]] == [
        ("pkg.loop.event_loop", "pkg.loop.warn_slow")
    ]


def test_inventory_rows_this_change_breaks(capsys, history, tmp_path: Path):
    repo, base, head = history
    inventory = tmp_path / "inventory.md"
    inventory.write_text(
        "| id | site | literal |\n|---|---|---|\n"
        "| R1 | pkg/loop.py:17 | draining the pool |\n"
        "| R2 | pkg/loop.py:27 | pool is slow |\n"
        "| R3 | pkg/untouched.py:1 | never emitted anywhere |\n"
    )
    _, data = report(capsys, repo, base, head, "--inventory", str(inventory))
    inv = data["inventory"]
    assert inv["rows"] == 3
    states = {r["id"]: (r["base"]["status"], r["head"]["status"]) for r in inv["broken"]}
    assert states == {"R1": ("held", "gone"), "R2": ("held", "moved")}
    assert data["summary"]["inventory_broken"] == 2


def test_ruff_parity_figures(capsys, history):
    repo, base, head = history
    _, data = report(capsys, repo, base, head)
    files = {f["path"]: f for f in data["ruff"]["files"]}
    style = files["pkg/style.py"]
    # The repository's own ruff config (select F and I) is honoured: I001 counts.
    assert style["base"] == {"F401": 1}
    assert style["head"] == {"F401": 2, "I001": 1}
    assert style["delta"] == 2 and style["changed_lines"] == 3
    # Line 1 (`import sys`, new) carries the unused-import and the unsorted block; line 2
    # (`import os`) is unchanged, so its F401 is not on a changed line.
    assert style["on_changed_lines"] == {"F401": 1, "I001": 1}
    assert files["pkg/other.py"]["status"] == "renamed"
    assert data["ruff"]["base_total"] == 1 and data["ruff"]["head_total"] == 3
    assert "pkg/untouched.py" not in files


def test_reads_revisions_not_the_working_tree(capsys, history):
    repo, base, head = history
    _, before = report(capsys, repo, base, head)
    (repo.root / "pkg" / "style.py").write_text("import a, b, c\n")  # dirty, uncommitted
    (repo.root / "pkg" / "loop.py").unlink()
    _, after = report(capsys, repo, base, head)
    assert before == after


@pytest.mark.parametrize(("fail_on", "expected"), [("new", 1), ("any", 1), ("none", 0)])
def test_fail_on(capsys, history, fail_on: str, expected: int):
    repo, base, head = history
    assert report(capsys, repo, base, head, "--fail-on", fail_on)[0] == expected


def test_fail_on_any_without_new_findings(capsys, make_repo):
    repo = make_repo("same")
    base = repo.commit(base_files())
    head = repo.commit({"README": "docs only\n"})
    assert report(capsys, repo, base, head, "--fail-on", "new")[0] == 0
    assert report(capsys, repo, base, head, "--fail-on", "any")[0] == 1


def test_head_that_does_not_parse_is_an_error(capsys, history):
    repo, base, _ = history
    broken = repo.commit({"pkg/broken.py": "def (:\n"})
    code, data = report(capsys, repo, base, broken, "--fail-on", "none")
    assert code == 2 and data["summary"]["status"] == "error"
    assert [e["path"] for e in data["errors"]] == ["pkg/broken.py"]


def test_bad_ref_is_an_input_error(capsys, history):
    repo, base, _ = history
    assert main(["report", "--repo", str(repo.root), "--base", base, "--head=-nope"]) == 2
    assert main(["report", "--repo", str(repo.root), "--base", base, "--head", "nosuch"]) == 2
    assert "nosuch" in capsys.readouterr().err


def test_output_is_deterministic(capsys, history, tmp_path: Path):
    repo, base, head = history
    outputs = []
    for fmt in ("json", "md", "html", "sarif"):
        for _ in range(2):  # each run computes everything afresh: no cache to answer from
            out = tmp_path / f"r.{fmt}"
            code = main(["report", "--repo", str(repo.root), "--base", base, "--head", head,
                         "--format", fmt, "-o", str(out), "--no-cache"])  # fmt: skip
            assert code in (0, 1)
            outputs.append(out.read_text())
        assert outputs[-1] == outputs[-2], fmt
    capsys.readouterr()


def test_subdir(capsys, history):
    repo, base, head = history
    _, data = report(capsys, repo, base, head, "--subdir", "pkg")
    assert data["subdir"] == "pkg"
    assert "loop.py" in data["changed_files"]
    assert {f["path"] for f in data["ruff"]["files"]} >= {"style.py", "loop.py"}


def test_results_of_a_side_analysed_before_come_from_the_cache(
    capsys, history, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    repo, base, head = history
    cache = str(tmp_path / "cache")
    argv = ["report", "--repo", str(repo.root), "--base", base, "--head", head,
            "--cache-dir", cache, "--format", "json"]  # fmt: skip
    main(argv)
    first = json.loads(capsys.readouterr().out)

    def refuse(*_args, **_kwargs):
        raise AssertionError("rules ran again on an unchanged file set")

    monkeypatch.setattr("rankguard.pipelines.report.sides.run_rules", refuse)
    code = main(argv)
    assert code == 1 and json.loads(capsys.readouterr().out) == first
