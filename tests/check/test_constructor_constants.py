"""A constant a constructor stores on `self`, in the order construction runs, decides the
round's branches on its receiver: a subclass that turns off what its base turned on
(`super().__init__()`, then `self.flag = False`) never takes the base's `if self.flag:` in its
own round, also inside the base's methods the round calls on `self`. Where construction order
does not decide the value, or something may reassign it later, the branch stays walked."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.check.test_blocking import _assert_marked, _run

_BASE = """
class Base:
    def __init__(self):
        self.t = torch.ones(1, device="cuda")
        self.flag = True

    def epilogue(self):
        if self.flag:
            self.t.item()  # base
            dist.all_reduce(self.t)

    def train_batch(self):
        self.epilogue()
        dist.barrier()
"""

_PIPE = """
class Pipe(Base):
    def __init__(self, n):
        super().__init__()
        {assign}
        self.n = n

    def train_batch(self):
        self.epilogue()
        dist.barrier()
{more}
"""


def _program(assign: str = "self.flag = False", more: str = "") -> str:
    return _BASE + _PIPE.format(assign=assign, more=more)


def _item_lines(tmp_path: Path, code: str, rounds: list[str]) -> list[str]:
    findings = _run(tmp_path, code, {"rounds": rounds})[1].findings
    return sorted(
        f.extra["round"].rsplit(".", 2)[-2]
        for f in findings
        if f.extra["blocking"]["callee"].endswith(".item")
    )


def test_a_subclass_constructor_turning_a_flag_off_cuts_the_base_branch(tmp_path: Path):
    assert _item_lines(tmp_path, _program(), ["*.Pipe.train_batch"]) == []


def test_the_base_round_still_takes_the_branch(tmp_path: Path):
    """On a `Base` the flag is on, and the receiver may be a `Pipe`: nothing is decided."""
    assert _item_lines(tmp_path, _program(), ["*.Base.train_batch"]) == ["Base"]


def test_a_base_constant_no_subclass_overrides_decides_its_subclass_round(tmp_path: Path):
    code = _program(assign="pass").replace("self.flag = True", "self.flag = False")
    assert _item_lines(tmp_path, code, ["*.Pipe.train_batch"]) == []


@pytest.mark.parametrize(
    ("assign", "more"),
    [
        # under a branch: the base's value may stand
        ("if n:\n            self.flag = False", ""),
        # in a loop: may run no times
        ("for _ in range(n):\n            self.flag = False", ""),
        # reassigned later in the same constructor, under a branch
        ("self.flag = False\n        if n:\n            self.flag = True", ""),
        # a computed value
        ("self.flag = n > 1", ""),
        # before `super().__init__()`: the base sets it again
        ("pass", ""),
        # another method may reassign it between rounds
        (
            "self.flag = False",
            """
    def enable(self):
        self.flag = True
""",
        ),
        # a property of the same name on the object's class
        (
            "self.n = 2",
            """
    @property
    def flag(self):
        return self.n > 1
""",
        ),
        # `setattr` through a receiver of unknown class
        (
            "self.flag = False",
            """
def turn_on(engine):
    setattr(engine, "flag", True)
""",
        ),
        # a subclass of the round's class may be the receiver and turns it on again
        (
            "self.flag = False",
            """
class Tail(Pipe):
    def __init__(self):
        super().__init__(1)
        self.flag = True
""",
        ),
        # a subclass whose constructor skips the round class's one
        (
            "self.flag = False",
            """
class Skip(Pipe):
    def __init__(self):
        Base.__init__(self)
""",
        ),
        # a dataclass derived from the round's class: its generated constructor stores the
        # field and runs no other
        (
            "self.flag = False",
            """
import dataclasses

@dataclasses.dataclass
class Record(Pipe):
    flag: bool = True
""",
        ),
        # a subclass whose constructor runs the base's again after the round class's one
        (
            "self.flag = False",
            """
class Again(Pipe):
    def __init__(self):
        super().__init__(1)
        Base.__init__(self)
""",
        ),
        # a construction helper writes it: when it runs is not followed
        (
            "self.flag = False\n        self._setup()",
            """
    def _setup(self):
        self.flag = True
""",
        ),
        # a store inside `try` / `with`: an exception may skip it (and be suppressed)
        ("try:\n            self.flag = False\n        except ValueError:\n            pass", ""),
        ("with lock:\n            self.flag = False", ""),
        # the constructor may return before the store: the base's value stands
        ("if n:\n            return\n        self.flag = False", ""),
        ("for _ in range(n):\n            return\n        self.flag = False", ""),
        (
            "try:\n            self.n = n\n        except ValueError:\n            return\n"
            "        self.flag = False",
            "",
        ),
        # a raise before the store (under a branch, or always): not followed
        ("if n:\n            raise ValueError\n        self.flag = False", ""),
        ("raise ValueError\n        self.flag = False", ""),
        # a generator: calling it runs none of its body
        ("if n:\n            yield\n        self.flag = False", ""),
    ],
    ids=[
        "branch",
        "loop",
        "later-branch",
        "computed",
        "before-super",
        "method-writes",
        "property",
        "setattr",
        "subclass-writes",
        "subclass-skips",
        "dataclass-subclass",
        "subclass-reruns-base",
        "helper-writes",
        "try",
        "with",
        "return-in-branch",
        "return-in-loop",
        "return-in-handler",
        "raise-in-branch",
        "raise",
        "generator",
    ],
)
def test_unsure_constructor_values_decide_nothing(tmp_path: Path, assign: str, more: str):
    code = _program(assign=assign, more=more)
    if assign == "pass":
        code = code.replace(
            "        super().__init__()\n        pass",
            "        self.flag = False\n        super().__init__()",
        )
    assert _item_lines(tmp_path, code, ["*.Pipe.train_batch"]) == ["Pipe"]


def test_a_constructor_constant_in_the_fixture_style(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        class Engine:
            def __init__(self):
                self.t = torch.ones(1, device="cuda")
                self.reduce = True
                self.mode = None

            def epilogue(self):
                if self.reduce:
                    self.t.item()
                    dist.all_reduce(self.t)
                if self.mode is None:
                    time.sleep(1)  # expect

        class PipeEngine(Engine):
            def __init__(self):
                super().__init__()
                self.reduce = False

            def train_batch(self):
                self.epilogue()
                dist.barrier()
        """,
        {"rounds": ["*.PipeEngine.train_batch"]},
    )


@pytest.mark.parametrize(
    "start",
    ["self.train_batch()", "threading.Thread(target=self.train_batch).start()"],
    ids=["called", "thread"],
)
def test_a_round_construction_starts_itself_decides_nothing(tmp_path: Path, start: str):
    """The base's constructor runs the round before the subclass's constructor turns the flag
    off."""
    code = _program().replace(
        "        self.flag = True\n", f"        self.flag = True\n        {start}\n", 1
    )
    assert _item_lines(tmp_path, code, ["*.Pipe.train_batch"]) == ["Pipe"]


_REGISTERS = """
    def _register(self, model):
        self.__dict__["module"] = model

    def epilogue(self):"""


def _registering(code: str) -> str:
    """The base gets a helper storing through `self.__dict__`."""
    return code.replace("    def epilogue(self):", _REGISTERS, 1)


def test_a_store_of_any_name_only_the_base_constructor_runs_comes_before(tmp_path: Path):
    """`self.__dict__[k] = v` may store any attribute; in a helper only the base's
    constructor calls, it runs inside `super().__init__()`, before the subclass's store."""
    code = _registering(_program()).replace(
        "        self.flag = True\n", "        self.flag = True\n        self._register(None)\n", 1
    )
    assert _item_lines(tmp_path, code, ["*.Pipe.train_batch"]) == []


def test_a_store_of_any_name_after_the_subclass_store_decides_nothing(tmp_path: Path):
    code = _registering(_program(assign="self.flag = False\n        self._register(None)"))
    assert _item_lines(tmp_path, code, ["*.Pipe.train_batch"]) == ["Pipe"]


def test_a_return_after_the_store_keeps_the_constant(tmp_path: Path):
    code = _program(assign="self.flag = False\n        if n:\n            return")
    assert _item_lines(tmp_path, code, ["*.Pipe.train_batch"]) == []


def test_a_base_constructor_returning_before_its_store_decides_nothing(tmp_path: Path):
    """`Mid`'s store would decide `Pipe`'s round, but a lazy `Mid` returns before it, leaving
    what `Base` stored."""
    code = _program(assign="pass").replace(
        "class Pipe(Base):",
        """class Mid(Base):
    def __init__(self, lazy=False):
        super().__init__()
        if lazy:
            return
        self.flag = False

class Pipe(Mid):""",
    )
    assert _item_lines(tmp_path, code, ["*.Pipe.train_batch"]) == ["Pipe"]


def test_a_constructor_returning_before_super_init_decides_nothing(tmp_path: Path):
    """A lazy `Pipe` never runs `Base`'s constructor: `self.flag` is its class attribute."""
    code = _program(assign="pass").replace("self.flag = True", "self.flag = False")
    code = code.replace(
        "class Pipe(Base):\n    def __init__(self, n):\n        super().__init__()",
        "class Pipe(Base):\n    flag = True\n\n    def __init__(self, n):\n"
        "        if n:\n            return\n        super().__init__()",
    )
    assert "flag = True\n\n    def __init__(self, n):\n        if n:" in code
    assert _item_lines(tmp_path, code, ["*.Pipe.train_batch"]) == ["Pipe"]
