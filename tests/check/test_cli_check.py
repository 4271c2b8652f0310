"""`rankguard check` and `rankguard rules` end to end: exit codes, select/ignore, suppressions,
stable fingerprints, JSON, SARIF (validated against the official 2.1.0 schema) and plugins."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from rankguard.cli import main
from tests.conftest import EXAMPLE, write_tree

SCHEMA = Path(__file__).resolve().parent.parent / "data" / "sarif-schema-2.1.0.json"

PROGRAM = """
import gc, time
import torch.distributed as dist


def idle():
    time.sleep(1)


def event_loop():
    while True:
        idle()
        gc.collect()
        dist.barrier()
"""


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _tree(tmp_path: Path, text: str = PROGRAM, **more: str) -> Path:
    return write_tree(tmp_path, {"pkg/loop.py": text, **more})


def _json(capsys, *argv: str) -> tuple[int, dict]:
    code, out, _ = _run(capsys, "check", *argv, "--format", "json", "--no-cache")
    return code, json.loads(out)


def test_exit_codes(capsys, tmp_path: Path):
    root = _tree(tmp_path)
    code, payload = _json(capsys, str(root))
    assert code == 1 and len(payload["findings"]) == 2 and payload["errors"] == []
    clean = write_tree(
        tmp_path / "clean",
        {"m.py": "import torch.distributed as dist\n\n\ndef event_loop():\n    while True:\n"
                 "        dist.barrier()\n"},
    )  # fmt: skip
    assert _json(capsys, str(clean))[0] == 0
    # A file that does not parse: exit 2, and the findings are still printed.
    (root / "pkg" / "broken.py").write_text("def (:\n")
    code, payload = _json(capsys, str(root))
    assert code == 2
    assert len(payload["findings"]) == 2
    assert payload["errors"][0]["path"] == "pkg/broken.py"


def test_json_contract_and_determinism(capsys, tmp_path: Path):
    root = _tree(tmp_path)
    _, first = _json(capsys, str(root))
    _, second = _json(capsys, str(root))
    assert first == second
    finding = first["findings"][0]
    for key in (
        "rule",
        "path",
        "line",
        "message",
        "fingerprint",
        "round",
        "collective",
        "blocking",
        "chain",
    ):
        assert key in finding
    assert set(finding["collective"]) >= {"callee", "path", "line"}
    assert set(finding["blocking"]) >= {"callee", "path", "line", "kind"}
    assert finding["chain"][0]["function"] == finding["round"]
    assert first["findings"] == sorted(
        first["findings"], key=lambda f: (f["path"], f["line"], f["rule"])
    )


def test_select_ignore_and_unknown_rules(capsys, tmp_path: Path):
    root = _tree(tmp_path)
    assert _json(capsys, str(root), "--select", "blocking-before-collective")[0] == 1
    code, payload = _json(capsys, str(root), "--ignore", "blocking-before-collective")
    assert code == 0 and not [
        f for f in payload["findings"] if f["rule"] == "blocking-before-collective"
    ]
    code, _, err = _run(capsys, "check", str(root), "--select", "no-such-rule", "--no-cache")
    assert code == 2 and "no-such-rule" in err
    code, _, err = _run(
        capsys, "check", str(root), "--ignore", "blocking-before-colective", "--no-cache"
    )
    assert code == 2 and "blocking-before-colective" in err


def test_suppression_on_the_blocking_line_or_a_chain_line(capsys, tmp_path: Path):
    text = PROGRAM.replace(
        "    time.sleep(1)",
        "    time.sleep(1)  # rankguard: ignore[blocking-before-collective] backoff",
    ).replace(
        "        gc.collect()", "        gc.collect()  # rankguard: ignore[other-rule] not this one"
    )
    root = _tree(tmp_path, text)
    code, payload = _json(capsys, str(root), "--show-suppressed")
    assert code == 1
    assert [f["blocking"]["callee"] for f in payload["findings"]] == ["gc.collect"]
    assert [(s["blocking"]["callee"], s["reason"]) for s in payload["suppressed"]] == [
        ("time.sleep", "backoff")
    ]
    # On a call line of the chain (in the round function), and a bare ignore silences every rule.
    text = PROGRAM.replace(
        "        idle()", "        idle()  # rankguard: ignore[blocking-before-collective]"
    )
    text = text.replace("        gc.collect()", "        gc.collect()  # rankguard: ignore")
    root = _tree(tmp_path / "b", text)
    code, payload = _json(capsys, str(root))
    assert code == 0 and payload["findings"] == []
    code, out, _ = _run(capsys, "check", str(root), "--show-suppressed", "--no-cache")
    assert "suppressed:" in out and "0 findings, 2 suppressed" in out


def test_fingerprints_survive_line_drift(capsys, tmp_path: Path):
    before = _json(capsys, str(_tree(tmp_path / "a")))[1]["findings"]
    drifted = PROGRAM.replace(
        "import gc, time", '"""Docs."""\n\n# a comment\nimport gc, time\n\nX = 1\n'
    )
    drifted = drifted.replace("def idle():\n", "def idle():\n    y = 2\n    z = y\n")
    after = _json(capsys, str(_tree(tmp_path / "b", drifted)))[1]["findings"]
    assert [f["line"] for f in before] != [f["line"] for f in after]
    assert [f["fingerprint"] for f in before] == [f["fingerprint"] for f in after]


def test_same_call_twice_gets_two_fingerprints(capsys, tmp_path: Path):
    text = PROGRAM.replace("    time.sleep(1)", "    time.sleep(1)\n    time.sleep(2)")
    findings = _json(capsys, str(_tree(tmp_path, text)))[1]["findings"]
    assert len(findings) == 3
    assert len({f["fingerprint"] for f in findings}) == 3


def test_sarif_validates_against_the_official_schema(capsys, tmp_path: Path):
    code, out, _ = _run(capsys, "check", str(EXAMPLE), "--format", "sarif", "--no-cache")
    assert code == 1
    sarif = json.loads(out)
    schema = json.loads(SCHEMA.read_text())
    jsonschema.validate(sarif, schema)
    run = sarif["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert "blocking-before-collective" in {r["id"] for r in rules}
    for rule in rules:
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
        assert rule["help"]["text"]
    results = [r for r in run["results"] if r["ruleId"] == "blocking-before-collective"]
    assert len(results) == 15  # B1-B15 of EXPECTED.md §2
    for result in results:
        assert result["partialFingerprints"]["rankguard/v1"]
        assert result["codeFlows"][0]["threadFlows"][0]["locations"]
        assert result["relatedLocations"][0]["physicalLocation"]["region"]["startLine"] >= 1


FOLLOWED = """
import torch
import torch.distributed as dist


class Out:
    lengths: torch.Tensor
    ids: torch.Tensor


def event_loop(out: Out, other: Out):
    while True:
        lengths = out.lengths.tolist()
        ids = other.ids.tolist()
        dist.barrier()
"""


def test_sarif_names_a_syncs_followers_as_related_locations(capsys, tmp_path: Path):
    root = _tree(tmp_path, FOLLOWED)
    code, out, _ = _run(capsys, "check", str(root), "--format", "sarif", "--no-cache")
    assert code == 1
    sarif = json.loads(out)
    jsonschema.validate(sarif, json.loads(SCHEMA.read_text()))
    (result,) = sarif["runs"][0]["results"]
    related = result["relatedLocations"]
    assert [r["physicalLocation"]["region"]["startLine"] for r in related] == [14, 13]
    assert [r["id"] for r in related] == [1, 2]
    assert "other.ids.tolist()" in related[1]["message"]["text"]


def test_sarif_with_file_errors_still_validates(capsys, tmp_path: Path):
    root = _tree(tmp_path, **{"pkg/broken.py": "def (:\n"})
    code, out, _ = _run(capsys, "check", str(root), "--format", "sarif", "--no-cache")
    assert code == 2
    jsonschema.validate(json.loads(out), json.loads(SCHEMA.read_text()))


LOCAL_RULE = """
from rankguard.rules.base import Finding, Rule, Valid, Invalid, fingerprint


class NoSleep(Rule):
    name = "local-no-sleep"
    description = "No time.sleep anywhere (a project-local rule)."
    VALID = [Valid("x = 1\\n")]
    INVALID = [Invalid("import time\\ntime.sleep(1)  # expect\\n")]

    def check(self, context):
        for qualname, resolved in sorted(context.program.calls.items()):
            record = context.program.functions[qualname]
            for item in resolved:
                if any(t.name == "time.sleep" for t in item.targets):
                    yield Finding(record.path, item.call.line, self.name, "sleep",
                                  fingerprint(self.name, qualname))
"""


def test_local_plugin_loads_relative_to_the_config(capsys, tmp_path: Path):
    root = _tree(tmp_path, **{
        "pyproject.toml": '[tool.rankguard]\nplugins = [".local_rules"]\n',
        "local_rules.py": LOCAL_RULE,
    })  # fmt: skip
    code, payload = _json(capsys, str(root), "--select", "local-no-sleep")
    assert code == 1
    assert [(f["rule"], f["path"]) for f in payload["findings"]] == [
        ("local-no-sleep", "pkg/loop.py")
    ]
    code, out, _ = _run(capsys, "rules", "--path", str(root))
    assert "local-no-sleep" in out and "blocking-before-collective" in out


def test_broken_plugin_is_an_error_not_skipped(capsys, tmp_path: Path):
    root = _tree(tmp_path, **{
        "pyproject.toml": '[tool.rankguard]\nplugins = [".bad_rules", "no_such_module_xyz"]\n',
        "bad_rules.py": "import no_such_dependency_xyz\n",
    })  # fmt: skip
    code, _, err = _run(capsys, "check", str(root), "--no-cache")
    assert code == 2
    assert "bad_rules" in err and "no_such_dependency_xyz" in err


def test_entry_point_rules_are_loaded(monkeypatch, tmp_path: Path):
    from importlib import metadata

    from rankguard.rules import registry

    plugin = tmp_path / "ep_rules.py"
    plugin.write_text(LOCAL_RULE.replace("local-no-sleep", "ep-no-sleep"))
    monkeypatch.syspath_prepend(str(tmp_path))
    point = metadata.EntryPoint("ep", "ep_rules:NoSleep", registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry.metadata, "entry_points", lambda group: [point])
    assert "ep-no-sleep" in registry.all_rules()
    broken = metadata.EntryPoint("bad", "ep_rules_missing:Rule", registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry.metadata, "entry_points", lambda group: [broken])
    with pytest.raises(registry.RuleLoadError, match="ep_rules_missing"):
        registry.all_rules()


def test_rules_command_lists_and_explains(capsys):
    code, out, _ = _run(capsys, "rules")
    assert code == 0 and "blocking-before-collective" in out
    code, out, _ = _run(capsys, "rules", "blocking-before-collective")
    assert code == 0
    assert "\nExample:\n" in out and "\nUse instead:\n" in out and "# expect" not in out
    code, _, err = _run(capsys, "rules", "nope")
    assert code == 2 and "nope" in err


def test_several_paths(capsys, tmp_path: Path):
    a = _tree(tmp_path / "a")
    b = _tree(tmp_path / "b")
    code, payload = _json(capsys, str(a), str(b))
    assert code == 1
    assert {f["path"].split("/pkg/")[0] for f in payload["findings"]} == {str(a), str(b)}


CST_RULE = """
import libcst as cst

from rankguard.rules.base import Finding, Rule, fingerprint


class TodoComment(Rule):
    name = "local-todo-comment"
    description = "A TODO comment in a module (comments exist only in the concrete syntax tree)."

    def check(self, context):
        for module in sorted(context.program.modules.values(), key=lambda m: m.path):
            tree = context.cst(module.path)
            marker = "# " + "TODO"  # not spelled whole, so this file does not match itself
            for number, line in enumerate(tree.code.splitlines(), start=1):
                if marker in line:
                    yield Finding(module.path, number, self.name, "todo",
                                  fingerprint(self.name, module.name, line.strip()))
"""


def test_a_plugin_sees_a_libcst_module_per_file(capsys, tmp_path: Path):
    root = _tree(tmp_path, **{
        "pyproject.toml": '[tool.rankguard]\nplugins = [".cst_rules"]\n',
        "cst_rules.py": CST_RULE,
        "pkg/other.py": "x = 1\n\n# TODO: remove\n",
    })  # fmt: skip
    code, payload = _json(capsys, str(root), "--select", "local-todo-comment")
    assert code == 1
    assert [(f["path"], f["line"]) for f in payload["findings"]] == [("pkg/other.py", 3)]


def test_min_confidence_filters_blocking_findings(capsys, tmp_path: Path):
    root = _tree(
        tmp_path,
        PROGRAM.replace("gc.collect()", "gc.collect()\n        stream.synchronize()").replace(
            "def event_loop():", "def event_loop(stream):"
        ),
    )
    _, everything = _json(capsys, str(root))
    assert sorted(f["confidence"] for f in everything["findings"]) == ["high", "high", "low"]
    code, high = _json(capsys, str(root), "--min-confidence", "high")
    assert code == 1 and [f["confidence"] for f in high["findings"]] == ["high", "high"]
    _, low = _json(capsys, str(root), "--min-confidence", "low")
    assert low == everything
