"""Progress on stderr: shown at a terminal once a run lasts about two seconds (phase, files,
rounds), wiped at the end; never when stderr is not a terminal or the run is quick."""

from __future__ import annotations

import io
import itertools
import json

import pytest

from rankguard.cli import main
from rankguard.core import progress
from tests.conftest import EXAMPLE


class FakeTerminal(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def _check(monkeypatch, capsys, stream: FakeTerminal, seconds_per_tick: float) -> dict:
    ticks = itertools.count()
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(ticks) * seconds_per_tick)
    monkeypatch.setattr("sys.stderr", stream)
    code = main(["check", str(EXAMPLE), "--format", "json", "--no-cache"])
    assert code == 1
    return json.loads(capsys.readouterr().out)


def test_a_long_run_at_a_terminal_shows_phases_files_and_rounds(monkeypatch, capsys):
    quiet = _check(monkeypatch, capsys, FakeTerminal(tty=False), 1.0)
    stream = FakeTerminal(tty=True)
    shown = _check(monkeypatch, capsys, stream, 1.0)
    text = stream.getvalue()
    files = len(list(EXAMPLE.rglob("*.py")))
    assert f"rankguard: parse {files}/{files} files" in text
    assert "rankguard: resolve" in text
    assert "blocking-before-collective" in text and "round 1/" in text
    assert text.endswith("\r"), "the line is wiped at the end"
    assert shown == quiet  # stdout is the same with or without progress


@pytest.mark.parametrize(("tty", "seconds_per_tick"), [(False, 1.0), (True, 0.0001)])
def test_silent_when_piped_or_quick(monkeypatch, capsys, tty: bool, seconds_per_tick: float):
    stream = FakeTerminal(tty=tty)
    _check(monkeypatch, capsys, stream, seconds_per_tick)
    assert stream.getvalue() == ""


def test_outside_a_command_reporting_is_silent():
    assert progress.current().stream is None  # library use and tests write nothing


def test_the_line_is_wiped_at_the_end():
    stream = FakeTerminal(tty=True)
    ticks = itertools.count()
    with progress.reporting(stream, clock=lambda: float(next(ticks))) as bar:
        bar.phase("parse", 2, "files")
        bar.advance(2)
    lines = stream.getvalue().split("\r")
    assert "rankguard: parse 2/2 files" in lines[-3] and lines[-1] == ""
    assert lines[-2].strip() == ""  # blanks over the last text
