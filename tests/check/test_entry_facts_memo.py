"""Facts on entry to a function (`RoundContext.entry_facts`) are asked at every call the
blocking walk enters, ~100k times per sglang check, mostly with facts it has judged before: which
facts on `self` are stable, and which settings a class's constructor copies to `self`, depend on
the fact and the class only, so each is judged once per program (`benchmarks/README`, tenth
session), and what a call site alone says of the callee's parameters (literal arguments and
defaults, which arguments are plain references) once per call site. Counted, not timed: a
second identical question reads no fact's references and matches no argument again."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from rankguard.adapters.sources import read_directory
from rankguard.analysis import context
from rankguard.analysis.context import RoundContext
from rankguard.catalogs.platforms import platform_catalog
from rankguard.model import load_program
from tests.check.helpers import HEAD, config_of

CODE = """
class Worker:
    def __init__(self):
        self.pp_size = get_config().pp_size
        self.tp = 2

    def step(self, batch, mode=1):
        pass

    def loop(self):
        self.step(self.batch)
"""


def test_a_repeated_entry_is_judged_from_memos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "mod.py").write_text(HEAD + textwrap.dedent(CODE))
    program = load_program(read_directory(tmp_path, config_of({}).exclude))
    rounds = RoundContext(program, platform_catalog())
    step = program.functions["mod.Worker.step"]
    call = next(c.call for c in program.calls["mod.Worker.loop"])
    known: dict[Any, Any] = {
        ("ref", ("self", "tp")): 2,
        ("ref", ("get_config", "()", "pp_size")): 1,
        ("ref", ("self", "batch", "size")): 4,
    }
    first = rounds.entry_facts(step, call, known)
    read: list[object] = []
    refs = context.refs

    def counting(cond: Any) -> Any:
        read.append(cond)
        return refs(cond)

    monkeypatch.setattr(context, "refs", counting)
    matched: list[object] = []
    passed = context.passed_arguments

    def matching(callee: Any, site: Any) -> Any:
        matched.append(site)
        return passed(callee, site)

    monkeypatch.setattr(context, "passed_arguments", matching)
    again = rounds.entry_facts(step, call, known)
    assert again == first
    assert ("ref", ("self", "tp")) in again and ("ref", ("self", "pp_size")) in again
    assert again[("ref", ("batch", "size"))] == 4 and again[("ref", ("mode",))] == 1
    assert read == [] and matched == []
