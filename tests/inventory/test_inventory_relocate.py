"""`rankguard inventory relocate` against a repository with history (see conftest)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rankguard.cli import main
from tests.inventory.conftest import History, git, inventory_md, line_of

LOOP, UTIL, TOOLS = "pkg/loop.py", "pkg/util.py", "pkg/tools/util.py"


def rows_at_a(h: History) -> list[tuple[str, str, str]]:
    """The inventory as taken at A: every row held there."""
    u, lp = h.util_a, h.loop_a
    return [
        ("R1", f"{LOOP}:{line_of(lp, 'step done')}", "step done for batch"),
        ("R2", f"{UTIL}:{line_of(u, 'helper fired')}", "helper fired"),
        ("R3", f"{UTIL}:{line_of(u, 'duplicated message')}", "duplicated message here"),
        ("R4", f"{UTIL}:{line_of(u, 'pool is exhausted')}", "the pool is exhausted"),
        ("R5", f"{UTIL}:{line_of(u, 'cache warmed')}", "cache warmed up in the background"),
        ("R6", f"{UTIL}:{line_of(u, 'legacy removed')}", "legacy removed notice"),
        ("R7", f"{LOOP}:{line_of(lp, 'watchdog saw')}", "watchdog saw a stall"),
        ("R8", f"{UTIL}:{line_of(u, 'bad value')}", "for key"),
        ("R9", f"{UTIL}:{line_of(u, 'cache flushed')}", "cache flushed"),
    ]


def relocate(tmp_path: Path, h: History, text: str, pin: str, *extra: str, capsys=None):
    inv = tmp_path / "inventory.md"
    inv.write_text(text)
    code = main(
        [
            "inventory",
            "relocate",
            str(inv),
            "--repo",
            str(h.root),
            f"--pin={pin}",
            "--no-cache",
            *extra,
        ]
    )
    return code, inv


def relocate_json(tmp_path: Path, h: History, text: str, pin: str, capsys, *extra: str):
    code, _ = relocate(tmp_path, h, text, pin, "--format", "json", *extra)
    out = capsys.readouterr()
    return code, json.loads(out.out), out.err


def by_id(payload: dict) -> dict[str, dict]:
    return {row["id"]: row for row in payload["rows"]}


def test_every_status_at_b(tmp_path, history, capsys):
    h = history
    code, payload, _ = relocate_json(tmp_path, h, inventory_md(rows_at_a(h), h.a), h.b, capsys)
    rows = by_id(payload)
    assert code == 1
    assert payload["pin"] == h.b
    assert rows["R1"]["status"] == "moved"
    assert rows["R1"]["sites"][0]["line"] == line_of(h.loop_b, "step done")
    assert rows["R1"]["sites"][0]["path"] == LOOP
    assert rows["R2"]["status"] == "wrong-file"
    assert rows["R2"]["sites"][0]["path"] == TOOLS
    assert rows["R3"]["status"] == "ambiguous"
    assert [s["function"] for s in rows["R3"]["sites"]] == [
        "pkg.tools.util.helper",
        "pkg.tools.util.other",
    ]
    assert rows["R4"]["status"] == "prose-only"
    assert rows["R4"]["sites"] == []
    assert rows["R4"]["prose"] == [
        {"path": TOOLS, "line": line_of(h.util_b, "pool is exhausted"), "kind": "docstring"}
    ]
    assert rows["R5"]["status"] == "prose-only"  # a comment
    assert rows["R6"]["status"] == "gone"
    assert rows["R6"]["reachable"] is None
    assert rows["R7"]["status"] == "held"
    assert rows["R8"]["status"] == "wrong-file"
    assert set(rows) == {f"R{i}" for i in range(1, 10)}
    for row in payload["rows"]:
        assert set(row) >= {"id", "literal", "cited", "status", "sites", "reachable"}
        for site in row["sites"]:
            assert set(site) >= {"path", "line", "function"}


def test_held_at_own_pin_and_clean_exit(tmp_path, history, capsys):
    h = history
    rows = [r for r in rows_at_a(h) if r[0] in ("R1", "R2", "R7", "R8")]
    code, payload, _ = relocate_json(tmp_path, h, inventory_md(rows, h.a), h.a, capsys)
    assert [r["status"] for r in payload["rows"]] == ["held"] * 4
    assert payload["warnings"] == []
    assert code == 0


def test_reachability_and_chain(tmp_path, history, capsys):
    h = history
    _, payload, _ = relocate_json(tmp_path, h, inventory_md(rows_at_a(h), h.a), h.b, capsys)
    rows = by_id(payload)
    # step() is called from the round: reachable, with the chain ending at the emitting call.
    assert rows["R1"]["reachable"] is True
    chain = rows["R1"]["sites"][0]["chain"]
    assert chain[0]["function"] == "pkg.loop.Sched.event_loop_normal"
    assert chain[-1] == {
        "function": "pkg.loop.Sched.step",
        "path": LOOP,
        "line": line_of(h.loop_b, "step done"),
    }
    assert rows["R8"]["reachable"] is True  # helper() called from step()
    # watchdog() is only a thread target: a callback edge is not followed.
    assert rows["R7"]["reachable"] is False
    assert rows["R7"]["sites"][0]["chain"] is None
    # The --round option overrides the config's rounds. A function without a loop is a round
    # by its whole body (`analysis.reach.round_scope`): watchdog() reaches its own row only.
    _, payload, _ = relocate_json(
        tmp_path, h, inventory_md(rows_at_a(h), h.a), h.b, capsys, "--round", "*.watchdog"
    )
    rows = by_id(payload)
    assert (rows["R1"]["reachable"], rows["R7"]["reachable"]) == (False, True)
    _, payload, _ = relocate_json(
        tmp_path, h, inventory_md(rows_at_a(h), h.a), h.b, capsys, "--round", "*.no_such_loop"
    )
    assert by_id(payload)["R1"]["reachable"] is None  # no round matched: unknown, not "no"
    assert any(w["kind"] == "no-round" for w in payload["warnings"])


def test_warning_older_pin_touching_cited_files(tmp_path, history, capsys):
    h = history
    _, payload, _ = relocate_json(tmp_path, h, inventory_md(rows_at_a(h), h.a), h.b, capsys)
    kinds = {w["kind"]: w for w in payload["warnings"]}
    assert "pin-not-ancestor" not in kinds
    changed = kinds["cited-files-changed"]
    assert changed["commits"] == [h.b]
    assert changed["paths"] == [LOOP, UTIL]


def test_warning_pin_on_side_branch(tmp_path, history, capsys):
    h = history
    _, payload, _ = relocate_json(tmp_path, h, inventory_md(rows_at_a(h), h.side), h.b, capsys)
    kinds = {w["kind"]: w for w in payload["warnings"]}
    assert kinds["pin-not-ancestor"]["merge_base"] == h.a
    assert "another branch" in kinds["pin-not-ancestor"]["message"]


def test_warning_no_pin_and_unknown_pin(tmp_path, history, capsys):
    h = history
    _, payload, _ = relocate_json(tmp_path, h, inventory_md(rows_at_a(h), None), h.b, capsys)
    assert [w["kind"] for w in payload["warnings"]] == ["no-inventory-pin"]
    _, payload, _ = relocate_json(tmp_path, h, inventory_md(rows_at_a(h), "deadbeef"), h.b, capsys)
    assert [w["kind"] for w in payload["warnings"]] == ["unknown-inventory-pin"]


def test_regenerated_markdown(tmp_path, history, capsys):
    h = history
    text = inventory_md(rows_at_a(h), h.a, extra="\nText after the table.\n")
    code, _ = relocate(tmp_path, h, text, "main")
    out, err = capsys.readouterr()
    assert code == 1
    step_a, step_b = line_of(h.loop_a, "step done"), line_of(h.loop_b, "step done")
    assert f"R1: moved: cited {LOOP}:{step_a}; now {LOOP}:{step_b}" in err.splitlines()
    lines = out.splitlines()
    assert lines[:4] == ["# Audit", "", "Some prose.", ""]
    assert f"pin: {h.b}" in lines
    assert "Text after the table." in lines
    header = next(line for line in lines if line.startswith("| id"))
    assert header == "| id | site | literal | reachable | note | status | prose |"
    table = {line.split(" | ")[0][2:]: line for line in lines if line.startswith("| R")}
    step_line = line_of(h.loop_b, "step done")
    assert (
        table["R1"] == f"| R1 | {LOOP}:{step_line} | `step done for batch` | yes | nR1 | held |  |"
    )
    assert table["R6"] == "| R6 | — | `legacy removed notice` | — | nR6 | gone |  |"
    assert "<br>" in table["R3"] and table["R3"].endswith("| ambiguous |  |")
    assert table["R7"].endswith("| no | nR7 | held |  |")
    # The regenerated table, relocated again at the same pin, holds everywhere it can.
    again = tmp_path / "again.md"
    again.write_text(out)
    code = main(
        [
            "inventory",
            "relocate",
            str(again),
            "--repo",
            str(h.root),
            "--pin",
            h.b,
            "--no-cache",
            "--format",
            "json",
        ]
    )
    payload = json.loads(capsys.readouterr().out)
    statuses = {r["id"]: r["status"] for r in payload["rows"]}
    assert statuses["R1"] == statuses["R2"] == statuses["R7"] == "held"
    assert payload["warnings"] == []


def test_output_file_and_in_place(tmp_path, history, capsys):
    h = history
    text = inventory_md(rows_at_a(h)[:1], h.a)
    out = tmp_path / "out.md"
    code, inv = relocate(tmp_path, h, text, h.b, "-o", str(out))
    assert code == 1
    assert inv.read_text() == text  # the input is untouched
    assert "R1: moved" in capsys.readouterr().err
    assert "| held |" in out.read_text()
    # -o naming the input itself is refused without --in-place.
    code, inv = relocate(tmp_path, h, text, h.b, "-o", str(tmp_path / "inventory.md"))
    assert code == 2
    assert "--in-place" in capsys.readouterr().err
    assert inv.read_text() == text
    code, inv = relocate(tmp_path, h, text, h.b, "--in-place")
    assert code == 1
    assert f"pin: {h.b}" in inv.read_text()
    assert "| held |" in inv.read_text()


@pytest.mark.parametrize(
    ("pin", "message"),
    [("-x", "may not be empty or start with '-'"), ("nosuchref", "does not resolve")],
)
def test_bad_refs(tmp_path, history, capsys, pin, message):
    h = history
    code, _ = relocate(tmp_path, h, inventory_md(rows_at_a(h), h.a), pin)
    assert code == 2
    assert message in capsys.readouterr().err


def test_not_a_repository(tmp_path, capsys):
    inv = tmp_path / "inv.md"
    inv.write_text(inventory_md([("R1", "a.py:1", "x")], None))
    for repo, message in [(tmp_path, "not a git repository"), (tmp_path / "nope", "no such")]:
        code = main(["inventory", "relocate", str(inv), "--repo", str(repo), "--pin", "HEAD"])
        assert code == 2
        assert message in capsys.readouterr().err


def test_empty_inventory_and_malformed_rows(tmp_path, history, capsys):
    h = history
    code, _ = relocate(tmp_path, h, "| id | site | literal |\n|---|---|---|\n", h.b)
    assert code == 2
    assert "empty inventory" in capsys.readouterr().err
    text = inventory_md(rows_at_a(h)[:2], h.a).replace("| R2 | pkg/util.py:", "| R2 | pkg/util.py")
    code, payload, err = relocate_json(tmp_path, h, text, h.b, capsys)
    assert code == 2  # an input error outranks findings
    assert [r["id"] for r in payload["rows"]] == ["R1"]
    assert payload["errors"][0]["message"].startswith("row 2 (line 10): 'R2': site")
    assert "row 2" in err


def test_bare_repository_and_dirty_tree(tmp_path, history, capsys):
    h = history
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(h.root), str(bare))
    (h.root / "pkg" / "loop.py").write_text("# dirty work tree: never read\n")
    try:
        inv = tmp_path / "inv.md"
        inv.write_text(inventory_md(rows_at_a(h)[:1], h.a))
        for repo in (bare, h.root):
            code = main(
                [
                    "inventory",
                    "relocate",
                    str(inv),
                    "--repo",
                    str(repo),
                    "--pin",
                    "main",
                    "--format",
                    "json",
                    "--no-cache",
                    "--round",
                    "*.event_loop_normal",
                ]
            )
            payload = json.loads(capsys.readouterr().out)
            assert code == 1
            assert payload["rows"][0]["status"] == "moved"
            assert payload["rows"][0]["reachable"] is True
    finally:
        git(h.root, "checkout", "--", "pkg/loop.py")


def test_configured_emitters(tmp_path, history, capsys):
    h = history
    row = [("C1", f"{TOOLS}:{line_of(h.util_b, 'custom emitter')}", "custom emitter says")]
    _, payload, _ = relocate_json(tmp_path, h, inventory_md(row, h.b), h.b, capsys)
    assert payload["rows"][0]["status"] == "prose-only"  # a plain call: not an emitter
    config = tmp_path / "rg.toml"
    config.write_text('emitters = ["report"]\n')
    _, payload, _ = relocate_json(
        tmp_path, h, inventory_md(row, h.b), h.b, capsys, "--config", str(config)
    )
    assert payload["rows"][0]["status"] == "held"
    assert payload["rows"][0]["sites"][0]["kind"] == "call"


def test_across_fields_only_on_request(tmp_path, history, capsys):
    h = history
    row = [("F1", f"{TOOLS}:{line_of(h.util_b, 'cache flushed')}", "cache flushed 12 entries")]
    _, payload, _ = relocate_json(tmp_path, h, inventory_md(row, h.b), h.b, capsys)
    assert payload["rows"][0]["status"] == "gone"
    text = inventory_md(row, h.b)
    _, payload, _ = relocate_json(tmp_path, h, text, h.b, capsys, "--across-fields")
    assert payload["rows"][0]["status"] == "held"


def test_disk_cache_and_stale_facts(tmp_path, history, capsys, cache_args, monkeypatch):
    """A warm cache gives the same answer; a cached summary without the emissions fact (filled
    by a command that never registered the extractor) is recomputed, not trusted."""
    from rankguard.summary import extract

    h = history
    inv = tmp_path / "inv.md"
    inv.write_text(inventory_md(rows_at_a(h), h.a))
    args = ["inventory", "relocate", str(inv), "--repo", str(h.root), "--pin", h.b, *cache_args]
    outputs = []
    with monkeypatch.context() as patch:
        patch.delitem(extract.EXTRACTORS, "emissions")
        main(args)  # fills the cache without the fact
        outputs.append(capsys.readouterr().out)
    for _ in range(2):
        main(args)
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] == outputs[2]
    assert "| prose-only |" in outputs[0]
