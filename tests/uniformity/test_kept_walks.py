"""Uniformity walks kept across runs (`analysis.uniformity.keep`): an edit walks again only the
functions whose walk read something it changed, and a warm check always equals `--no-cache`,
whether the change is in the function itself, in a callee's summary, in what the model says a
reference holds, or only in where the function's lines are."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rankguard.adapters import store
from rankguard.cli import main
from rankguard.pipelines.check import KEEP_SUMMARIES
from tests.check.test_edit_sequence import SCHED, _replace
from tests.conftest import EXAMPLE, write_tree

RULE = ("--select", "rank-divergent-collective")
SCHEDULER = "toysched.managers.scheduler."


@pytest.fixture(autouse=True)
def _keep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEEP_SUMMARIES, raising=False)  # kept by default (`pipelines.check`)


def _walked() -> set[str]:
    prefix = "uniformity walk: "
    return {k[len(prefix) :] for k in store.COUNTS if k.startswith(prefix)}


def _check(capsys, *argv: str) -> str:
    store.COUNTS.clear()
    main(["check", *argv, "--format", "json"])
    return capsys.readouterr().out


def test_an_edit_walks_again_only_what_read_the_edited_function(capsys, tmp_path: Path):
    root = shutil.copytree(EXAMPLE, tmp_path / "toysched")
    cache = ("--cache-dir", str(tmp_path / "cache"))
    cold = _check(capsys, str(root), *cache)
    assert len(_walked()) > 50
    _replace(root, SCHED, "        batch = None\n", "        batch = None\n        batch = None\n")
    warm = _check(capsys, str(root), *cache)
    # The edited function, and the functions that took its summary in (its callers, up to the
    # module's own body): every other flow is read from the store.
    assert _walked() == {
        SCHEDULER + "Scheduler.get_next_batch_to_run",
        SCHEDULER + "Scheduler.event_loop_normal",
        SCHEDULER + "run_scheduler_process",
        SCHEDULER[:-1],
    }
    assert store.COUNTS["uniformity walks reused"] > 50
    assert "rank-divergent-collective" in cold
    assert warm == _check(capsys, str(root), "--no-cache")


def test_what_references_hold_is_not_asked_again_where_nothing_resolves_otherwise(
    capsys, tmp_path: Path
):
    """A body edit that changes no interface leaves every other function resolving as it did
    (`Program.resolution_identity`): the values of its references are taken from the store,
    not asked of the resolver again. An edit that changes an interface (a new `self`
    attribute) asks them all again; both answer as `--no-cache` does."""
    root = shutil.copytree(EXAMPLE, tmp_path / "toysched")
    cache = ("--cache-dir", str(tmp_path / "cache"))
    _check(capsys, str(root), *RULE, *cache)
    _replace(root, SCHED, "        batch = None\n", "        batch = None\n        batch = None\n")
    warm = _check(capsys, str(root), *RULE, *cache)
    assert store.COUNTS["uniformity walks reused"] > 50
    assert store.COUNTS["uniformity asked again: evaluate"] == 0
    assert warm == _check(capsys, str(root), *RULE, "--no-cache")
    _replace(root, SCHED, "        batch = None\n", "        self.edited = 1\n", regex=False)
    warm = _check(capsys, str(root), *RULE, *cache)
    assert store.COUNTS["uniformity asked again: evaluate"] > 50
    assert warm == _check(capsys, str(root), *RULE, "--no-cache")


LOOP = """
import torch.distributed as dist

from pkg.helpers import pick
from pkg.state import Local, Shared


class S:
    def __init__(self):
        self.state = Local()

    def event_loop(self):
        while True:
            n = pick(dist.get_rank())
            if n > 2:
                dist.barrier()
            if self.state.count > 2:
                dist.barrier()
"""
STATE = """
import torch.distributed as dist


class Local:
    def __init__(self):
        self.count = dist.get_rank()


class Shared:
    def __init__(self):
        self.count = 4
"""
FILES = {
    "pkg/__init__.py": "",
    "pkg/helpers.py": "def inner(m):\n    return m\n\n\ndef pick(n):\n    return inner(n)\n",
    "pkg/state.py": STATE,
    "pkg/loop.py": LOOP,
    "pyproject.toml": '[tool.rankguard]\nrounds = ["*.event_loop"]\n',
}


def _project(tmp_path: Path) -> tuple[Path, tuple[str, ...]]:
    root = write_tree(tmp_path / "proj", FILES)
    return root, (str(root / "pkg"), "--config", str(root / "pyproject.toml"), *RULE)


def _warm_and_cold(capsys, tmp_path: Path, argv: tuple[str, ...]) -> tuple[str, set[str], int]:
    """The warm check's output, the functions it walked and the flows it reused."""
    warm = _check(capsys, *argv, "--cache-dir", str(tmp_path / "cache"))
    walked, reused = _walked(), store.COUNTS["uniformity walks reused"]
    assert warm == _check(capsys, *argv, "--no-cache")
    return warm, walked, reused


def test_a_callee_that_stops_returning_its_argument(capsys, tmp_path: Path):
    """`event_loop`'s record, its calls' targets and their records stay the same; what `pick`
    returns of its parameter (its summary, which the walk applies at the call) changes with
    what `inner`, which `pick` calls, returns."""
    root, argv = _project(tmp_path)
    assert "`n > 2`" in _warm_and_cold(capsys, tmp_path, argv)[0]
    _replace(root, "pkg/helpers.py", "return m", "return 4")
    warm, walked, _reused = _warm_and_cold(capsys, tmp_path, argv)
    assert "`n > 2`" not in warm
    assert "pkg.loop.S.event_loop" in walked


def test_what_an_attribute_holds_changes_in_another_function(capsys, tmp_path: Path):
    """`self.state` is a `Shared` from now on: only the constructor changed, and the model's
    answer about `self.state` in `event_loop`, which its walk asked."""
    root, argv = _project(tmp_path)
    assert "`self.state.count > 2`" in _warm_and_cold(capsys, tmp_path, argv)[0]
    _replace(root, "pkg/loop.py", "self.state = Local()", "self.state = Shared()")
    warm, walked, _reused = _warm_and_cold(capsys, tmp_path, argv)
    assert "`self.state.count > 2`" not in warm
    assert "pkg.loop.S.event_loop" in walked


def test_lines_move_with_the_function(capsys, tmp_path: Path):
    """Lines above `event_loop` move it, and its source and steps with it: the kept flow
    answers, with its lines moved."""
    root, argv = _project(tmp_path)
    before = _warm_and_cold(capsys, tmp_path, argv)[0]
    _replace(root, "pkg/loop.py", "class S:\n", "X = 1\nY = 2\n\n\nclass S:\n")
    after, walked, reused = _warm_and_cold(capsys, tmp_path, argv)
    assert "pkg.loop.S.event_loop" not in walked
    assert reused > 0
    assert before != after  # the same findings, four lines lower


SEQUENCE = {
    "rename the callee": lambda r: (
        _replace(r, "pkg/helpers.py", "def pick(", "def choose("),
        _replace(r, "pkg/loop.py", "pick", "choose"),
    ),
    "the callee returns its argument again, from another module": lambda r: (
        (r / "pkg" / "other.py").write_text("def choose(n):\n    return n\n"),
        _replace(r, "pkg/loop.py", "from pkg.helpers import", "from pkg.other import"),
    ),
    "delete the module the callee was in": lambda r: (r / "pkg" / "helpers.py").unlink(),
    "delete the class an attribute held": lambda r: (
        _replace(r, "pkg/state.py", "class Local:", "class Gone:"),
        _replace(r, "pkg/loop.py", "Local", "Shared"),
    ),
    "rename the module of the loop": lambda r: (r / "pkg" / "loop.py").rename(
        r / "pkg" / "rounds.py"
    ),
    "a branch the rank decides, above the loop": lambda r: _replace(
        r,
        "pkg/rounds.py",
        "    def event_loop(self):\n",
        "    def early(self):\n        if dist.get_rank():\n            dist.barrier()\n\n"
        "    def event_loop(self):\n        self.early()\n",
    ),
}


def test_warm_equals_no_cache_through_renames_and_deletions(capsys, tmp_path: Path):
    root, argv = _project(tmp_path)
    outputs = [_warm_and_cold(capsys, tmp_path, argv)[0]]
    reused = 0
    for step, apply in SEQUENCE.items():
        apply(root)
        warm, _walked_now, reused_now = _warm_and_cold(capsys, tmp_path, argv)
        outputs.append(warm)
        reused += reused_now
        assert '"errors": []' in warm, step
    assert reused > 0
    assert len(set(outputs)) > 3  # the findings change along the way


# The round reads what `register` puts into `self.states` (a fresh reviewer's program,
# session 19): a rank id once the fill changes.
FILLED_LOOP = """
import torch.distributed as dist

from pkg.state import make_local, make_shared


class S:
    def __init__(self):
        self.states = []

    def register(self):
        self.states.append(make_shared())

    def event_loop(self):
        while True:
            for st in self.states:
                if st.count > 2:
                    dist.barrier()
"""
FILLED_STATE = (
    STATE
    + """

def make_local():
    return Local()


def make_shared():
    return Shared()
"""
)
FILLED_FILES = {
    "pkg/__init__.py": "",
    "pkg/state.py": FILLED_STATE,
    "pkg/loop.py": FILLED_LOOP,
    "pyproject.toml": '[tool.rankguard]\nrounds = ["*.event_loop"]\n',
}


def test_a_fill_elsewhere_in_the_module_asks_the_values_again(capsys, tmp_path: Path):
    """`self.states.append(make_local())` changes what `st.count` holds in the round: the fill
    is part of the module's interface, so the round's kept walk asks again (it took the stored
    values, the divergent barrier lost, when only assignments counted)."""
    root = write_tree(tmp_path / "proj", FILLED_FILES)
    argv = (str(root / "pkg"), "--config", str(root / "pyproject.toml"), *RULE)
    cache = ("--cache-dir", str(tmp_path / "cache"))
    assert "st.count" not in _check(capsys, *argv, *cache)
    _replace(root, "pkg/loop.py", "append(make_shared())", "append(make_local())")
    warm = _check(capsys, *argv, *cache)
    assert "st.count" in warm
    assert warm == _check(capsys, *argv, "--no-cache")
