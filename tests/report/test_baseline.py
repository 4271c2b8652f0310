"""`rankguard check` baselines, unused-ignore reports, and file arguments as a report filter."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rankguard.cli import main
from tests.conftest import write_tree

CONFIG = '[tool.rankguard]\nrounds = ["*.event_loop"]\n'
HELPERS = """
import time


def idle():
    time.sleep(1)
"""
LOOP = """
import gc

import torch.distributed as dist

from pkg.helpers import idle


def event_loop():
    while True:
        idle()
        gc.collect()
        dist.barrier()
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = write_tree(
        tmp_path / "proj",
        {
            "pyproject.toml": CONFIG,
            "pkg/__init__.py": "",
            "pkg/helpers.py": HELPERS,
            "pkg/loop.py": LOOP,
            "pkg/other.py": "X = 1\n",
        },
    )
    monkeypatch.chdir(root)
    return root


def check(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["check", *argv, "--format", "json", "--no-cache"])
    out, _ = capsys.readouterr()
    return code, json.loads(out) if out.strip() else {}


def rules_of(payload: dict) -> list[tuple[str, str]]:
    return sorted((f["rule"], f.get("blocking", {}).get("callee", "")) for f in payload["findings"])


def test_write_baseline_is_sorted_and_stable(capsys, project: Path):
    base = project / "baseline.txt"
    assert main(["check", "--no-cache", "--write-baseline", str(base)]) == 0
    first = base.read_text()
    lines = [line for line in first.splitlines() if not line.startswith("#")]
    assert len(lines) == 2 and lines == sorted(lines)
    assert all(line.split()[1] == "blocking-before-collective" for line in lines)
    # Lines shift above every finding: the baseline does not change.
    loop = project / "pkg" / "loop.py"
    loop.write_text("# moved down\n\n" + loop.read_text())
    main(["check", "--no-cache", "--write-baseline", str(base)])
    assert base.read_text() == first
    capsys.readouterr()


def test_baseline_reports_only_new_findings(capsys, project: Path):
    base = project / "baseline.txt"
    main(["check", "--no-cache", "--write-baseline", str(base)])
    code, payload = check(capsys, "--baseline", str(base))
    assert code == 0 and payload["findings"] == [] and payload["baselined"] == 2
    loop = project / "pkg" / "loop.py"
    loop.write_text(
        loop.read_text().replace("gc.collect()", "gc.collect()\n        open('/tmp/x').read()")
    )
    code, payload = check(capsys, "--baseline", str(base))
    assert code == 1 and rules_of(payload) == [("blocking-before-collective", "open")]


def test_json_output_is_a_baseline_too(capsys, project: Path):
    _, payload = check(capsys)
    saved = project / "findings.json"
    saved.write_text(json.dumps(payload))
    code, again = check(capsys, "--baseline", str(saved))
    assert code == 0 and again["baselined"] == 2


def test_strict_baseline_fails_on_entries_that_no_longer_occur(capsys, project: Path):
    base = project / "baseline.txt"
    main(["check", "--no-cache", "--write-baseline", str(base)])
    loop = project / "pkg" / "loop.py"
    loop.write_text(loop.read_text().replace("        gc.collect()\n", ""))
    code, payload = check(capsys, "--baseline", str(base))
    assert code == 0 and payload["stale_baseline"] == []
    code, payload = check(capsys, "--baseline", str(base), "--strict-baseline")
    assert code == 1 and payload["findings"] == []
    (stale,) = payload["stale_baseline"]
    assert stale["rule"] == "blocking-before-collective" and stale["path"] == "pkg/loop.py"
    # Entries of rules that did not run are not judged.
    code, payload = check(
        capsys, "--baseline", str(base), "--strict-baseline", "--select", "unwatched-collective"
    )
    assert code == 0 and payload["stale_baseline"] == []


GATE = """
import time

import torch.distributed as dist


def gate_loop():
    while True:
        if time.time() > 10:
            dist.barrier()
"""
DIVERGENT = "rank-divergent-collective"


def _as_before_site_keys(text: str) -> str:
    """A baseline as rankguard wrote it before rank-divergent fingerprints named the site: no
    versions line, and (a source in the key) other fingerprints for that rule's findings."""
    out = []
    for line in text.splitlines(keepends=True):
        if line.startswith("# fingerprint versions:"):
            continue
        if f" {DIVERGENT} " in line:
            line = "0" * 20 + line[20:]
        out.append(line)
    return "".join(out)


def test_a_baseline_from_before_a_fingerprint_change_is_named(capsys, project: Path):
    write_tree(project, {"pkg/gate.py": GATE})
    (project / "pyproject.toml").write_text(CONFIG.replace('"*.event_loop"', '"*_loop"'))
    base = project / "baseline.txt"
    assert main(["check", "--no-cache", "--write-baseline", str(base)]) == 0
    written = base.read_text()
    assert f"# fingerprint versions: {DIVERGENT}=2" in written
    code, payload = check(capsys, "--baseline", str(base), "--strict-baseline")
    assert code == 0 and "warnings" not in payload
    # The same findings against the old file: they are new, and the run says why.
    base.write_text(_as_before_site_keys(written))
    code = main(["check", "--format", "json", "--no-cache", "--baseline", str(base)])
    out, err = capsys.readouterr()
    payload = json.loads(out)
    assert code == 1 and [f["rule"] for f in payload["findings"]] == [DIVERGENT]
    assert f"{DIVERGENT} (RG102)" in err and "--write-baseline" in err
    (warning,) = payload["warnings"]
    assert warning["path"] == str(base) and "1 entry" in warning["message"]
    # Its entries of that rule cannot match: they are not called fixed.
    code, payload = check(capsys, "--baseline", str(base), "--strict-baseline")
    assert payload["stale_baseline"] == []
    # A rule that did not run is not judged; a JSON baseline says its versions too.
    code, payload = check(capsys, "--baseline", str(base), "--select", "blocking-before-collective")
    assert code == 0 and "warnings" not in payload
    _, everything = check(capsys)
    assert everything["fingerprint_versions"] == {DIVERGENT: 2}
    saved = project / "findings.json"
    saved.write_text(json.dumps(everything))
    code, payload = check(capsys, "--baseline", str(saved))
    assert code == 0 and "warnings" not in payload
    del everything["fingerprint_versions"]
    saved.write_text(json.dumps(everything))
    code, payload = check(capsys, "--baseline", str(saved))
    assert code == 0 and "1 entry" in payload["warnings"][0]["message"]


def test_bad_baselines_are_input_errors(capsys, project: Path):
    bad = project / "bad.txt"
    bad.write_text("not-a-fingerprint rule path\n")
    assert main(["check", "--no-cache", "--baseline", str(bad)]) == 2
    assert main(["check", "--no-cache", "--baseline", str(project / "missing.txt")]) == 2
    assert main(["check", "--no-cache", "--strict-baseline"]) == 2
    assert "bad.txt:1" in capsys.readouterr().err


def test_unused_ignores(capsys, project: Path):
    loop = project / "pkg" / "loop.py"
    text = loop.read_text()
    text = text.replace(
        "gc.collect()", "gc.collect()  # rankguard: ignore[blocking-before-collective] ok"
    )
    text = text.replace(
        "import gc", "import gc  # rankguard: ignore[blocking-before-collective] stale"
    )
    text = text.replace("dist.barrier()", "dist.barrier()  # rankguard: ignore[no-such-rule]")
    text = text.replace("idle()", "idle()  # rankguard: ignore[unwatched-collective] other rule")
    loop.write_text(text)  # fmt: skip
    code, payload = check(capsys, "--report-unused-ignores")
    unused = [
        (f["line"], f["message"]) for f in payload["findings"] if f["rule"] == "unused-ignore"
    ]
    assert code == 1
    assert unused == [
        (1, "`# rankguard: ignore[blocking-before-collective]` silences no "
            "blocking-before-collective finding"),
        (10, "`# rankguard: ignore[unwatched-collective]` silences no "
             "unwatched-collective finding"),
        (12, "`# rankguard: ignore[no-such-rule]` names unknown rule(s) no-such-rule"),
    ]  # fmt: skip
    # A comment naming a rule that did not run is not judged; unknown names always are.
    _, payload = check(capsys, "--report-unused-ignores", "--select", "blocking-before-collective")
    lines = [f["line"] for f in payload["findings"] if f["rule"] == "unused-ignore"]
    assert lines == [1, 12]
    # Without the switch, nothing is said about them.
    _, payload = check(capsys)
    assert all(f["rule"] != "unused-ignore" for f in payload["findings"])


def test_unused_ignores_in_sarif(capsys, project: Path):
    loop = project / "pkg" / "loop.py"
    loop.write_text(loop.read_text().replace("import gc", "import gc  # rankguard: ignore"))
    assert main(["check", "--no-cache", "--format", "sarif", "--report-unused-ignores"]) == 1
    sarif = json.loads(capsys.readouterr().out)
    rules = [r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]]
    assert "unused-ignore" in rules
    assert "unused-ignore" in {r["ruleId"] for r in sarif["runs"][0]["results"]}


def test_file_arguments_restrict_the_report(capsys, project: Path):
    _, everything = check(capsys)
    assert rules_of(everything) == [
        ("blocking-before-collective", "gc.collect"),
        ("blocking-before-collective", "time.sleep"),
    ]
    # helpers.py alone: the whole program is analysed, the report keeps the chains through it.
    _, payload = check(capsys, "pkg/helpers.py")
    assert rules_of(payload) == [("blocking-before-collective", "time.sleep")]
    assert payload["findings"][0]["path"] == "pkg/helpers.py"
    # loop.py: both chains pass through it.
    assert rules_of(check(capsys, "pkg/loop.py")[1]) == rules_of(everything)
    # A file no chain touches: clean.
    code, payload = check(capsys, "pkg/other.py")
    assert code == 0 and payload["findings"] == []
    # A folder and a file inside it: the folder is the root, the file filters.
    _, payload = check(capsys, "pkg", "pkg/helpers.py")
    assert rules_of(payload) == [("blocking-before-collective", "time.sleep")]
    assert payload["findings"][0]["path"] == "helpers.py"  # relative to the root `pkg`


def test_file_arguments_from_a_subfolder_use_the_config_folder(capsys, project: Path):
    os.chdir(project / "pkg")
    _, payload = check(capsys, "helpers.py")
    assert rules_of(payload) == [("blocking-before-collective", "time.sleep")]
    assert payload["findings"][0]["path"] == "pkg/helpers.py"


def test_file_outside_every_root_is_analysed_alone(capsys, project: Path, tmp_path: Path):
    lone = write_tree(
        tmp_path / "lone",
        {"solo.py": "import time\nimport torch.distributed as dist\n\n\ndef event_loop():\n"
                    "    while True:\n        time.sleep(1)\n        dist.barrier()\n"},
    )  # fmt: skip
    code, payload = check(capsys, "pkg", str(lone / "solo.py"))
    assert code == 1
    paths = sorted({f["path"] for f in payload["findings"]})
    assert paths == sorted(["pkg/helpers.py", "pkg/loop.py", f"{lone.as_posix()}/solo.py"])
