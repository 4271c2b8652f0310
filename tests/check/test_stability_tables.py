"""Program-wide tables of `Stability` are built once per program, not once per question.

`Stability._callers` (every resolved call of the program, inverted, minus the methods some
unresolved call or a value use may reach) was rebuilt by `construction()` and again by every
`inside_super(bases)` with new bases: ten times on one vllm check, 7.5 s of a profiled cold run
(`benchmarks/README`, issue #14). The program does not change under one `Stability` (a warm run
or an edit builds a new program and a new `Stability`), so the table is kept on it. Counted, not
timed: the whole-program scans run once however many questions are asked."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from rankguard.adapters.sources import read_directory
from rankguard.analysis import stability as stability_module
from rankguard.analysis.stability import Stability
from rankguard.model import load_program
from tests.check.helpers import HEAD, config_of

CODE = """
class Base:
    def __init__(self):
        self._setup()

    def _setup(self):
        self.mode = 1


class Mid(Base):
    def __init__(self):
        super().__init__()
        self._more()

    def _more(self):
        self.size = 2


class Top(Mid):
    def __init__(self):
        super().__init__()
        self.tp = 3

    def later(self):
        self.mode = 4
        self._more()
"""


def _program(tmp_path: Path, code: str):
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "mod.py").write_text(HEAD + textwrap.dedent(code))
    return load_program(read_directory(tmp_path, config_of({}).exclude))


def test_the_callers_table_is_built_once_per_program(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    program = _program(tmp_path, CODE)
    built: list[int] = []
    method_names = stability_module._method_names

    def counting(functions):
        built.append(1)
        return method_names(functions)

    monkeypatch.setattr(stability_module, "_method_names", counting)
    stability = Stability(program)
    construction = stability.construction()
    first = stability.inside_super(("mod.Mid", "mod.Base"))
    second = stability.inside_super(("mod.Base",))
    assert stability.inside_super(("mod.Base",)) == second
    assert len(built) == 1, f"callers table built {len(built)} times for one program"
    # the answers are those of a fresh Stability asked each question first
    assert Stability(program).inside_super(("mod.Mid", "mod.Base")) == first
    assert Stability(program).inside_super(("mod.Base",)) == second
    assert "mod.Base._setup" in construction and "mod.Top.later" not in construction


def test_a_new_program_gets_its_own_table(tmp_path: Path):
    """The table belongs to its program: an edit (a new program) is answered from the new
    calls, not the old table."""
    before = Stability(_program(tmp_path / "a", CODE)).construction()
    edited = CODE.replace("self.tp = 3", "self.tp = 3\n        self._more()").replace(
        "        self.mode = 4\n        self._more()", "        self.mode = 4"
    )
    after = Stability(_program(tmp_path / "b", edited)).construction()
    assert "mod.Mid._more" not in before  # `later` calls it after construction
    assert "mod.Mid._more" in after
