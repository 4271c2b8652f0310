"""The stamp-watchdog codemod, before/after (libcst's CodemodTest), and `rankguard fix`."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from libcst.codemod import CodemodTest

from rankguard.cli import main
from rankguard.codemods.stamp_watchdog import StampSite, StampWatchdogCommand, sites_from_findings
from tests.conftest import EXAMPLE

# assertCodemod strips the leading newline: the broadcast is on line 7.
SITE = [StampSite("m.py", "m.S.event_loop", 7, "broadcast_pyobj")]

BEFORE = """
class S:
    def event_loop(self):
        while True:
            with self.on_blocked_recv("recv"):
                reqs = self.recv()
            # followers wait here for the leader
            reqs = broadcast_pyobj(reqs, self.rank)  # keep me
            self.queue.extend(reqs)
"""

AFTER = """
class S:
    def event_loop(self):
        while True:
            with self.on_blocked_recv("recv"):
                reqs = self.recv()
            # followers wait here for the leader
            with self.on_blocked_recv("broadcast_pyobj"):
                reqs = broadcast_pyobj(reqs, self.rank)  # keep me
            self.queue.extend(reqs)
"""


class TestStampWatchdog(CodemodTest):
    TRANSFORM = StampWatchdogCommand

    def test_wraps_the_reported_statement(self) -> None:
        self.assertCodemod(BEFORE, AFTER, sites=SITE, hook="on_blocked_recv")

    def test_second_run_changes_nothing(self) -> None:
        # The same site (now the `with` line) and the shifted line both stay as they are.
        moved = [StampSite("m.py", "m.S.event_loop", 8, "broadcast_pyobj")]
        self.assertCodemod(AFTER, AFTER, sites=SITE, hook="on_blocked_recv")
        self.assertCodemod(AFTER, AFTER, sites=moved, hook="on_blocked_recv")

    def test_copies_the_existing_form_and_quotes(self) -> None:
        before = """
def loop(wd):
    while True:
        with wd.stamp('recv'):
            wd.recv()
        dist.barrier()
"""
        after = """
def loop(wd):
    while True:
        with wd.stamp('recv'):
            wd.recv()
        with wd.stamp('barrier'):
            dist.barrier()
"""
        site = [StampSite("m.py", "m.loop", 5, "barrier")]
        self.assertCodemod(before, after, sites=site, hook="stamp")

    def test_default_form_when_the_file_has_no_stamp(self) -> None:
        before = "class S:\n    def run(self):\n        dist.barrier()\n"
        after = (
            'class S:\n    def run(self):\n        with self.on_blocked_recv("barrier"):\n'
            "            dist.barrier()\n"
        )
        site = [StampSite("m.py", "m.S.run", 3, "barrier")]
        self.assertCodemod(before, after, sites=site)

    def test_other_functions_and_lines_are_untouched(self) -> None:
        other = [StampSite("m.py", "m.T.event_loop", 7, "x")]
        self.assertCodemod(BEFORE, BEFORE, sites=other, hook="on_blocked_recv")


def test_sites_from_findings_keep_only_this_rule() -> None:
    findings = [
        {
            "rule": "unwatched-collective",
            "path": "a.py",
            "line": 3,
            "function": "a.f",
            "stamp": "g",
        },
        {"rule": "blocking-before-collective", "path": "a.py", "line": 4},
    ]
    assert sites_from_findings(findings) == [StampSite("a.py", "a.f", 3, "g")]


def _fix(*args: str) -> tuple[int, str]:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(["fix", "stamp-watchdog", *args, "--no-cache"])
    return code, buffer.getvalue()


def test_fix_is_check_only_then_writes_once(tmp_path: Path) -> None:
    tree = tmp_path / "toysched"
    shutil.copytree(EXAMPLE, tree)
    target = tree / "toysched" / "managers" / "scheduler_pp_mixin.py"
    original = target.read_text()

    code, out = _fix(str(tree))
    assert code == 1 and "would stamp" in out and "scheduler_pp_mixin.py" in out
    assert target.read_text() == original

    code, diff = _fix(str(tree), "--diff")
    assert code == 1
    assert '+            with self.on_blocked_recv("broadcast_pyobj"):' in diff
    assert target.read_text() == original

    code, _ = _fix(str(tree), "--write")
    assert code == 0
    text = target.read_text()
    assert text.count('with self.on_blocked_recv("broadcast_pyobj"):') == 1
    assert "# and no on_blocked_recv stamp names the wait" in text  # comments kept

    code, out = _fix(str(tree))
    assert (code, out) == (0, "")
    assert target.read_text() == text


def test_libcst_tool_runs_the_command_with_findings(tmp_path: Path) -> None:
    tree = tmp_path / "toysched"
    shutil.copytree(EXAMPLE, tree)
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        main(
            [
                "check",
                str(tree),
                "--select",
                "unwatched-collective",
                "--format",
                "json",
                "--no-cache",
            ]
        )
    findings = tmp_path / "findings.json"
    findings.write_text(buffer.getvalue())
    assert json.loads(buffer.getvalue())["findings"]
    command = [
        sys.executable,
        "-m",
        "libcst.tool",
        "codemod",
        "-x",
        "--no-format",
        "--hide-progress",
        "rankguard.codemods.stamp_watchdog.StampWatchdogCommand",
        "--findings",
        str(findings),
        str(tree),
    ]
    subprocess.run(command, check=True, capture_output=True, cwd=tmp_path)
    text = (tree / "toysched" / "managers" / "scheduler_pp_mixin.py").read_text()
    assert 'with self.on_blocked_recv("broadcast_pyobj"):' in text
    subprocess.run(command, check=True, capture_output=True, cwd=tmp_path)
    assert (tree / "toysched" / "managers" / "scheduler_pp_mixin.py").read_text() == text


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]", "not `rankguard check --format json` output"),
        ("{not json", "cannot read findings JSON"),
        ('{"findings": [{"rule": "unwatched-collective", "function": "f"}]}', "usable path"),
    ],
)
def test_bad_findings_file_is_an_input_error(tmp_path, content: str, message: str) -> None:
    from rankguard.codemods.stamp_watchdog import _load_sites
    from rankguard.core.errors import InputError

    findings = tmp_path / "findings.json"
    findings.write_text(content)
    with pytest.raises(InputError, match=message):
        _load_sites(str(findings), None)


def test_libcst_command_without_findings_is_an_input_error() -> None:
    """The command computes the findings; the codemod alone never analyses a project."""
    from rankguard.codemods.stamp_watchdog import _load_sites
    from rankguard.core.errors import InputError

    with pytest.raises(InputError, match="needs --findings"):
        _load_sites(None, "m.py")


def test_unfixable_findings_are_not_sites() -> None:
    finding = {"rule": "unwatched-collective", "path": "a.py", "line": 3, "function": "a.f"}
    assert sites_from_findings([{**finding, "fixable": False}]) == []
