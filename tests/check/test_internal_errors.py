"""An internal error is exit 2 with one line that names what failed, never exit 1.

Exit 1 means "findings": a crash that exited 1 would pass for findings in CI and pre-commit.
The rules that did run still print their findings.
"""

from __future__ import annotations

import json
from pathlib import Path

from rankguard.cli import main
from tests.conftest import write_tree

LOOP = """
import time
import torch.distributed as dist


def event_loop():
    while True:
        time.sleep(1)
        dist.barrier()
"""

RAISING_RULE = """
from rankguard.rules.base import Rule


class Broken(Rule):
    name = "local-broken"
    description = "A plugin rule with a bug."

    def check(self, context):
        for record in context.program.iter_functions():
            if record.qualname.endswith("event_loop"):
                raise ZeroDivisionError("division by zero in the plugin")
        return []
"""


def _tree(tmp_path: Path) -> Path:
    return write_tree(
        tmp_path,
        {
            "pyproject.toml": '[tool.rankguard]\nrounds = ["*.event_loop"]\n'
            'plugins = [".local_rules"]\n',
            "local_rules.py": RAISING_RULE,
            "pkg/loop.py": LOOP,
        },
    )


def test_a_raising_rule_exits_2_names_itself_and_the_function_and_keeps_other_findings(
    capsys, tmp_path: Path
):
    root = _tree(tmp_path)
    code = main(["check", str(root), "--no-cache", "--format", "json"])
    out, err = capsys.readouterr()
    payload = json.loads(out)
    assert code == 2
    assert [f["rule"] for f in payload["findings"]] == ["blocking-before-collective"]
    (line,) = [line for line in err.splitlines() if "internal error" in line]
    assert "local-broken" in line and "ZeroDivisionError" in line
    assert "pkg.loop.event_loop" in line  # the function being analysed when it failed
    assert "report" in line  # how to report it
    assert any("internal error" in e["message"] for e in payload["errors"])


def test_a_raising_rule_in_text_output_also_exits_2(capsys, tmp_path: Path):
    root = _tree(tmp_path)
    code = main(["check", str(root), "--no-cache"])
    out, err = capsys.readouterr()
    assert code == 2
    assert "time.sleep" in out  # the blocking finding still prints
    assert "internal error" in err


def test_a_crash_outside_the_rules_exits_2_with_one_line(capsys, tmp_path: Path, monkeypatch):
    """Any command, any layer: an exception that escapes is exit 2 and one line, not a
    traceback and exit 1."""
    import rankguard.commands.graph as graph

    def boom(args):
        raise KeyError("no such thing")

    monkeypatch.setattr(graph, "run", boom)
    code = main(["graph", str(_tree(tmp_path)), "--no-cache"])
    err = capsys.readouterr().err
    assert code == 2
    assert len([line for line in err.splitlines() if line.strip()]) == 1
    assert "internal error" in err and "graph" in err and "KeyError" in err


def test_a_bad_config_entry_a_rule_reads_is_an_input_error_not_a_bug(capsys, tmp_path: Path):
    """Catalog entries from config are validated when a rule first reads them; that is the
    user's input, so the message names the key and does not ask for a bug report."""
    root = write_tree(
        tmp_path,
        {
            "pyproject.toml": '[tool.rankguard]\nrounds = ["*.event_loop"]\n'
            'blocking = [{name = "x.wait", gaurd = "timeout"}]\n',
            "pkg/loop.py": LOOP,
        },
    )
    code = main(["check", str(root), "--no-cache", "--format", "json"])
    err = capsys.readouterr().err
    assert code == 2
    assert "gaurd" in err and "internal error" not in err and "bug" not in err
