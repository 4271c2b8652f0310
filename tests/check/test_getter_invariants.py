"""A constructor's `assert` on a getter of `self` (`assert self.zero_stage() < Stage.gradients`)
decides branches on that getter, and on getters built from it, in the methods the round calls
on `self`: a zero-argument method whose body is one `return <expr>` reads as its expression.
A fact `a < X` decides `a >= X`. Where the getter's attribute may change after construction,
a subclass overrides the getter with another body, or nothing asserts, the branch stays."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.check.test_blocking import _run

_PROGRAM = """
from enum import IntEnum


class Stage(IntEnum):
    disabled = 0
    optimizer_states = 1
    gradients = 2
    weights = 3


class Engine:
    def __init__(self, config):
        self._config = config

    def zero_stage(self):
        return self._config.zero_stage

    def partition_gradients(self):
        return self.zero_stage() >= Stage.gradients

    def backward(self):
        if self.partition_gradients():
            torch.cuda.synchronize()
        if self.zero_stage() == Stage.optimizer_states:
            subprocess.run(["x"])
{engine}

class Pipe(Engine):
    def __init__(self, config):
        super().__init__(config)
        {check}

    def train_batch(self, t):
        while True:
            self.backward()
            dist.all_reduce(t)
{more}
"""

_ASSERT = "assert self.zero_stage() < Stage.gradients"


def _callees(tmp_path: Path, engine: str = "", check: str = _ASSERT, more: str = "") -> list:
    code = _PROGRAM.format(engine=engine, check=check, more=more)
    findings = _run(tmp_path, code, {"rounds": ["*.Pipe.train_batch"]})[1].findings
    return sorted(f.extra["blocking"]["callee"].rsplit(".", 1)[-1] for f in findings)


def test_an_asserted_getter_cuts_the_branch_on_a_getter_built_from_it(tmp_path: Path):
    assert _callees(tmp_path) == ["run"]


def test_the_assert_negated_in_a_test_is_decided_too(tmp_path: Path):
    code = "assert not self.partition_gradients()"
    assert _callees(tmp_path, check=code) == ["run"]


@pytest.mark.parametrize(
    ("engine", "check", "more"),
    [
        # no assert
        ("", "pass", ""),
        # the getter's attribute is reassigned outside construction
        ("\n    def reconfigure(self, config):\n        self._config = config\n", _ASSERT, ""),
        # a subclass overrides the getter with another body
        (
            "",
            _ASSERT,
            """
class Tail(Pipe):
    def zero_stage(self):
        return 3
""",
        ),
        # a construction helper run after the assert stores the getter's attribute again
        (
            "",
            _ASSERT + "\n        self._setup()",
            "\n    def _setup(self):\n        self._config = None\n",
        ),
    ],
    ids=["no-assert", "reassigned", "overridden", "helper-stores"],
)
def test_unsure_getters_decide_nothing(tmp_path: Path, engine: str, check: str, more: str):
    assert _callees(tmp_path, engine, check, more) == ["run", "synchronize"]


def test_an_assert_before_the_base_constructor_decides_nothing(tmp_path: Path):
    """The base's constructor stores the attribute after the assert has checked it."""
    code = _PROGRAM.format(engine="", check="pass", more="")
    code = code.replace(
        "        super().__init__(config)\n",
        f"        {_ASSERT}\n        super().__init__(config)\n",
    )
    findings = _run(tmp_path, code, {"rounds": ["*.Pipe.train_batch"]})[1].findings
    assert sorted(f.extra["blocking"]["callee"].rsplit(".", 1)[-1] for f in findings) == [
        "run",
        "synchronize",
    ]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # the old spelling of `super().__init__()`, in the base
        (
            "    def __init__(self, config):\n        self._config = config\n",
            "    def __init__(self, config):\n        super(Engine, self).__init__()\n"
            "        self._config = config\n",
        ),
        # ... and in the class that asserts: it hands `self` on as `super().__init__()` does
        (
            "        super().__init__(config)\n",
            "        super(Pipe, self).__init__(config)\n",
        ),
        # a later store into another part of the config keeps its stage
        (_ASSERT + "\n", _ASSERT + "\n        self._config.extra['k'] = 1\n"),
        # an assert on `self` itself reads no attribute
        (_ASSERT + "\n", _ASSERT + "\n        assert self is not None\n"),
    ],
    ids=["old-super", "old-super-here", "other-part", "bare-self"],
)
def test_construction_that_keeps_the_asserted_value_still_decides(
    tmp_path: Path, old: str, new: str
):
    code = _PROGRAM.format(engine="", check=_ASSERT, more="")
    assert old in code
    findings = _run(tmp_path, code.replace(old, new), {"rounds": ["*.Pipe.train_batch"]})[1]
    assert sorted(f.extra["blocking"]["callee"].rsplit(".", 1)[-1] for f in findings.findings) == [
        "run"
    ]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a later store of the config itself
        (_ASSERT + "\n", _ASSERT + "\n        self._config = config.copy()\n"),
        # the base's constructor run again after the assert
        (_ASSERT + "\n", _ASSERT + "\n        Engine.__init__(self, config)\n"),
        # an item stored into the config: an attribute-style config's field may be that key
        (_ASSERT + "\n", _ASSERT + '\n        self._config["zero_stage"] = 3\n'),
    ],
    ids=["config-stored-again", "base-rerun", "config-item-stored"],
)
def test_construction_that_may_change_the_asserted_value_decides_nothing(
    tmp_path: Path, old: str, new: str
):
    code = _PROGRAM.format(engine="", check=_ASSERT, more="")
    assert old in code
    findings = _run(tmp_path, code.replace(old, new), {"rounds": ["*.Pipe.train_batch"]})[1]
    assert sorted(f.extra["blocking"]["callee"].rsplit(".", 1)[-1] for f in findings.findings) == [
        "run",
        "synchronize",
    ]


def test_an_assert_past_an_early_return_decides_nothing(tmp_path: Path):
    """`if lazy: return` before the assert: a lazily built object never runs it."""
    check = "if config is None:\n            return\n        " + _ASSERT
    assert _callees(tmp_path, check=check) == ["run", "synchronize"]
