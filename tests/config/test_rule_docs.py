"""Rules documented the way ruff documents them, and stable codes accepted everywhere a rule
is named (`--select`, `--ignore`, suppressions, baselines), with a redirect table for renames."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rankguard.cli import main
from rankguard.reports import rule_docs
from rankguard.rules import codes
from rankguard.rules.engine import UnusedIgnore
from rankguard.rules.registry import all_rules
from tests.config.test_zero_config import run, write

REPO = Path(__file__).resolve().parents[2]
EVERY_RULE = [*all_rules().values(), UnusedIgnore]

LOOP = """
import torch
import torch.distributed as dist


class S:
    def event_loop(self):
        while True:
            torch.cuda.synchronize(){comment}
            dist.barrier()
"""


@pytest.mark.parametrize("rule", EVERY_RULE, ids=lambda r: r.name)
def test_every_rule_has_a_code_and_every_section(rule):
    assert rule_docs.missing_sections(rule) == []
    assert codes.CODE.match(rule.code)


def test_codes_are_unique():
    assert len({rule.code for rule in EVERY_RULE}) == len(EVERY_RULE)


def test_rules_by_name_or_code_print_the_sections(capsys):
    assert main(["rules", "RG101"]) == 0
    by_code = capsys.readouterr().out
    assert main(["rules", "blocking-before-collective"]) == 0
    assert capsys.readouterr().out == by_code
    for title in ("What it does:", "Why is this bad?", "Example:", "Use instead:", "Options:"):
        assert f"\n{title}\n" in by_code
    assert "does not repair it" in by_code and "# expect" not in by_code
    assert main(["rules", "RG103", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["code"] == "RG103" and data["fixable"] is True
    assert "stamp-watchdog" in data["sections"]["fix"]
    assert main(["rules"]) == 0
    listing = capsys.readouterr().out
    assert listing.splitlines()[1].startswith("RG101  blocking-before-collective")


def test_shipped_rule_docs_are_current(capsys):
    assert main(["rules", "--format", "md"]) == 0
    shipped = (REPO / "docs" / "rules.md").read_text()
    assert capsys.readouterr().out == shipped, "regenerate: rankguard rules --format md"
    for rule in EVERY_RULE:
        assert f"\n## {rule.code} {rule.name}\n" in shipped
        assert rule_docs.help_uri(rule).endswith(f"docs/rules.md#{rule_docs.anchor(rule)}")


def test_sarif_rules_carry_the_documentation(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, {"p/__init__.py": "", "p/s.py": LOOP.format(comment="")})
    code, out, _ = run(capsys, "check", "p", "--format", "sarif")
    assert code == 1
    driver = json.loads(out)["runs"][0]["tool"]["driver"]
    assert {r["id"] for r in driver["rules"]} == {r.name for r in all_rules().values()}
    for descriptor in driver["rules"]:
        assert "Why is this bad?" in descriptor["help"]["text"]
        assert "### Use instead" in descriptor["help"]["markdown"]
        assert descriptor["helpUri"].startswith(rule_docs.RULE_DOCS_URL + "#rg1")
        assert descriptor["defaultConfiguration"]["level"] == "warning"
        assert descriptor["properties"]["code"] in descriptor["properties"]["tags"]


def test_codes_work_in_select_ignore_suppressions_and_baselines(
    tmp_path: Path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, {"p/__init__.py": "", "p/s.py": LOOP.format(comment="")})
    by_name = run(capsys, "check", "p", "--select", "blocking-before-collective")
    by_code = run(capsys, "check", "p", "--select", "RG101")
    assert by_name[0] == 1 and by_code[:2] == by_name[:2]
    assert run(capsys, "check", "p", "--ignore", "RG101,RG102,RG103,RG104")[0] == 0
    # A baseline whose rule column holds the code is judged for that rule.
    data = json.loads(run(capsys, "check", "p", "--format", "json")[1])
    (tmp_path / "b.txt").write_text(
        "".join(f"{f['fingerprint']} RG101 {f['path']}\n" for f in data["findings"])
        + "0123456789abcdef0123 RG101 p/gone.py\n"
    )
    code, out, _ = run(capsys, "check", "p", "--baseline", "b.txt", "--strict-baseline")
    assert code == 1 and "stale baseline entry 0123456789abcdef0123 RG101" in out
    write(tmp_path, {"p/s.py": LOOP.format(comment="  # rankguard: ignore[RG101] reviewed")})
    code, out, _ = run(capsys, "check", "p", "--report-unused-ignores")
    assert code == 0, out
    assert "0 findings, 1 suppressed" in out


def test_a_renamed_rule_keeps_its_old_name(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(
        codes.REDIRECTS, "blocking-call-before-collective", "blocking-before-collective"
    )
    write(tmp_path, {"p/__init__.py": "", "p/s.py": LOOP.format(comment="")})
    code, out, _ = run(capsys, "check", "p", "--select", "blocking-call-before-collective")
    assert code == 1 and "torch.cuda.synchronize" in out
    code, _, err = run(capsys, "check", "p", "--select", "blocking-befor-collective")
    assert code == 2 and "unknown rule 'blocking-befor-collective'" in err
