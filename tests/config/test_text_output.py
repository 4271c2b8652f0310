"""`check`'s text output for people: paths from the current folder, a summary by rule, kind
and confidence, `--statistics`, `--quiet`, and colour only on a terminal without NO_COLOR."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rankguard.reports.text import use_colour
from tests.config.test_zero_config import TRAINER, run, write


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_without_no_color():
    assert use_colour(Terminal(), {}) is True
    assert use_colour(Terminal(), {"NO_COLOR": "1"}) is False
    assert use_colour(Terminal(), {"NO_COLOR": ""}) is True  # set but empty: ignored
    assert use_colour(io.StringIO(), {}) is False


def test_paths_from_the_current_folder_json_from_the_root(tmp_path: Path, monkeypatch, capsys):
    write(tmp_path / "work", {"pkg/__init__.py": "", "pkg/train.py": TRAINER})
    monkeypatch.chdir(tmp_path)
    _, out, _ = run(capsys, "check", "work/pkg")
    assert "(work/pkg/train.py:" in out and "at Trainer.train (work/pkg/train.py:" in out
    _, out, _ = run(capsys, "check", "work/pkg", "--format", "json")
    assert {f["path"] for f in json.loads(out)["findings"]} == {"train.py"}
    monkeypatch.chdir(tmp_path / "work" / "pkg")
    _, out, _ = run(capsys, "check", ".")
    assert "(train.py:" in out


def test_summary_statistics_and_quiet(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, {"pkg/__init__.py": "", "pkg/train.py": TRAINER})
    code, out, _ = run(capsys, "check", "pkg")
    assert code == 1
    assert out.endswith(
        "1 finding, 0 suppressed\n"
        "  by rule: RG101 blocking-before-collective 1\n"
        "  by kind: device-sync 1\n"
        "  by confidence: high 1\n"
    )
    code, out, _ = run(capsys, "check", "pkg", "--statistics")
    assert code == 1
    assert out == "1  RG101  blocking-before-collective\n1 finding, 0 suppressed\n"
    code, out, err = run(capsys, "check", "pkg", "--quiet")
    assert code == 1 and "finding" not in out.splitlines()[-1] and err == ""
    assert "torch.cuda.synchronize" in out
