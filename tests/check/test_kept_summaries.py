"""Blocking summaries kept across runs, per function and keyed without line numbers
(`analysis.blocking_keep`): an edit walks again only what it can change, the keys name no
folder, and a damaged store is only a miss. Warm answers always equal `--no-cache` ones
(`test_edit_sequence` checks that through every kind of edit)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rankguard.adapters import keyed, store
from rankguard.cli import main
from rankguard.pipelines.check import KEEP_SUMMARIES
from tests.check.test_edit_sequence import SCHED, _replace
from tests.conftest import EXAMPLE, write_tree

SCHEDULER = "toysched.managers.scheduler.Scheduler."
GC_TEST = "        if self.server_args.gc_each_round:\n"
# A statement at the top of a reached function: every line below it moves.
GC_EDIT = "        self.round_ct += 0\n" + GC_TEST
EDITED_AND_CALLER = {SCHEDULER + "_maybe_collect_garbage", SCHEDULER + "get_next_batch_to_run"}


@pytest.fixture(autouse=True)
def _keep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEEP_SUMMARIES, raising=False)  # kept by default (`pipelines.check`)


def _walked() -> set[str]:
    prefix = "blocking summary computed: "
    return {k[len(prefix) :] for k in store.COUNTS if k.startswith(prefix)}


def _check(capsys, root: Path | str, *argv: str) -> str:
    store.COUNTS.clear()
    main(["check", str(root), "--format", "json", *argv])
    return capsys.readouterr().out


def test_an_edit_walks_again_only_the_edited_function_and_its_callers(capsys, tmp_path: Path):
    root = shutil.copytree(EXAMPLE, tmp_path / "toysched")
    cache = ("--cache-dir", str(tmp_path / "cache"))
    _check(capsys, root, *cache)
    cold = _walked()
    _replace(root, SCHED, GC_TEST, GC_EDIT)
    warm = _check(capsys, root, *cache)
    assert _walked() == EDITED_AND_CALLER
    assert len(cold) > 10
    assert store.COUNTS["blocking summaries reused"] > 0
    assert _check(capsys, root, "--no-cache") == warm


def test_summaries_kept_in_one_folder_serve_a_copy_in_another(capsys, tmp_path: Path):
    """Keys come from content, never from where the checkout lies (CI restores the cache
    into another folder)."""
    first = shutil.copytree(EXAMPLE, tmp_path / "one" / "toysched")
    cache = ("--cache-dir", str(tmp_path / "cache"))
    _check(capsys, first, *cache)
    second = shutil.copytree(first, tmp_path / "two" / "toysched")
    _replace(second, SCHED, GC_TEST, GC_EDIT)
    warm = _check(capsys, second, *cache)
    assert _walked() == EDITED_AND_CALLER
    assert _check(capsys, second, "--no-cache") == warm


def test_summaries_written_in_batches_answer_as_those_written_at_the_end(
    capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A cold run writes its new entries a batch at a time (`adapters.keyed.BATCH`), not all
    held to the end: with a batch of one byte every entry is its own transaction, and the
    findings, cold and warm after an edit, are those of a run that writes at the end."""
    root = shutil.copytree(EXAMPLE, tmp_path / "toysched")
    whole = ("--cache-dir", str(tmp_path / "whole"))
    batched = ("--cache-dir", str(tmp_path / "batched"))
    cold = _check(capsys, root, *whole)
    whole_writes = store.COUNTS["keyed write"]
    monkeypatch.setattr(keyed, "BATCH", 1)
    assert _check(capsys, root, *batched) == cold
    assert store.COUNTS["keyed write"] == whole_writes > 10
    _replace(root, SCHED, GC_TEST, GC_EDIT)
    warm = _check(capsys, root, *batched)
    assert _walked() == EDITED_AND_CALLER
    monkeypatch.setattr(keyed, "BATCH", 8 << 20)
    assert _check(capsys, root, *whole) == warm == _check(capsys, root, "--no-cache")


def test_a_batch_is_written_before_the_store_is_closed(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(keyed, "BATCH", 64)
    path = tmp_path / "kept.sqlite"
    kept = keyed.KeyedStore(path)
    kept.put("small", "x")
    assert not path.exists()  # under a batch: held
    kept.put("large", "y" * 100)
    assert keyed.KeyedStore(path).get("small") == "x"  # another reader sees the batch
    kept.put("after", 3)
    assert kept.get("large") == "y" * 100 and kept.get("after") == 3
    kept.close()
    assert keyed.KeyedStore(path).get("after") == 3


def test_zero_keeps_no_summaries(capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(KEEP_SUMMARIES, "0")
    root = shutil.copytree(EXAMPLE, tmp_path / "toysched")
    cache = ("--cache-dir", str(tmp_path / "cache"))
    _check(capsys, root, *cache)
    _replace(root, SCHED, GC_TEST, GC_EDIT)
    _check(capsys, root, *cache)
    assert len(_walked()) > len(EDITED_AND_CALLER)
    assert not list((tmp_path / "cache").glob("analyses/*.sqlite"))


def test_a_damaged_store_is_a_miss(capsys, tmp_path: Path):
    root = shutil.copytree(EXAMPLE, tmp_path / "toysched")
    cache = ("--cache-dir", str(tmp_path / "cache"))
    _check(capsys, root, *cache)
    (kept,) = (tmp_path / "cache" / "analyses").glob("*.sqlite")
    kept.write_bytes(b"not a database" * 100)
    _replace(root, SCHED, GC_TEST, GC_EDIT)
    warm = _check(capsys, root, *cache)
    assert len(_walked()) > len(EDITED_AND_CALLER)  # nothing could be re-used
    assert _check(capsys, root, "--no-cache") == warm


PASSED = {
    "pkg/__init__.py": "",
    "pkg/handlers.py": (
        "import time\n\n\ndef slow():\n    time.sleep(1)\n\n\ndef quick():\n    pass\n"
    ),
    "pkg/helper.py": "def run(post):\n    post()\n",
    "pkg/holder.py": (
        "from pkg.handlers import quick\n\n\n"
        "class Holder:\n    def __init__(self):\n        self.post = quick\n"
    ),
    "pkg/loop.py": """
import torch.distributed as dist

from pkg.handlers import quick, slow
from pkg.helper import run
from pkg.holder import Holder


class S:
    def __init__(self):
        self.h = Holder()

    def tick(self):
        run(self.h.post)

    def other(self):
        run(slow)
        run(quick)

    def event_loop(self):
        while True:
            self.tick()
            dist.barrier()
""",
    "pyproject.toml": '[tool.rankguard]\nrounds = ["*.event_loop"]\n',
}


def test_what_a_call_hands_a_helper_is_part_of_the_key(capsys, tmp_path: Path):
    """`tick` hands `run` whatever `Holder.post` holds: an edit in another module changes that
    (quick -> slow) while `run`'s own targets stay the union of what every caller passes, so
    neither `tick`'s record nor its callees' keys change. The walk binds `post` per call
    site (`analysis.passed`), so `tick`'s summary must be keyed by what its calls pass."""
    root = write_tree(tmp_path / "proj", PASSED)
    argv = (str(root / "pkg"), "--config", str(root / "pyproject.toml"))
    cache = ("--cache-dir", str(tmp_path / "cache"))
    assert "time.sleep" not in _check(capsys, *argv, *cache)
    _replace(root, "pkg/holder.py", "import quick", "import slow")
    _replace(root, "pkg/holder.py", "self.post = quick", "self.post = slow")
    warm = _check(capsys, *argv, *cache)
    assert warm == _check(capsys, *argv, "--no-cache")
    assert "time.sleep" in warm


LOCKS = """
import threading

import torch.distributed as dist


class Conn:
    def __init__(self):
        self.a_lock = threading.Lock()
        self.b_lock = threading.Lock()

    def first(self):
        with self.a_lock:
            pass

    def second(self):
        with self.b_lock:
            pass

    def both(self):
        self.first()
        self.second()

    def save(self, path):  # another thread may hold both locks across a write
        with self.a_lock, self.b_lock:
            open(path).write("x")


class S:
    def __init__(self):
        self.conn = Conn()

    def event_loop(self):
        while True:
            self.conn.both()
            dist.barrier()
"""


def test_calls_at_the_same_place_in_two_functions_are_both_kept(capsys, tmp_path: Path):
    """Kept summaries hold lines relative to each function's start: two locks taken one line
    into two functions of one file have the same relative key, and one was lost on the way
    into the store (sglang: `with self.failure_lock:` and its neighbours)."""
    files = {"pkg/__init__.py": "", "pkg/conn.py": LOCKS}
    root = write_tree(tmp_path / "proj", files)
    (root / "pyproject.toml").write_text('[tool.rankguard]\nrounds = ["*.event_loop"]\n')
    argv = (str(root / "pkg"), "--config", str(root / "pyproject.toml"))
    cache = ("--cache-dir", str(tmp_path / "cache"))
    _check(capsys, *argv, *cache)
    _replace(
        root,
        "pkg/conn.py",
        "            dist.barrier()\n",
        "            pass\n" * 2 + "            dist.barrier()\n",
    )
    warm = _check(capsys, *argv, *cache)
    assert store.COUNTS["blocking summaries reused"] > 0
    assert warm == _check(capsys, *argv, "--no-cache")
    assert warm.count("with self.a_lock:") and warm.count("with self.b_lock:")


# The round runs under `mode == NULL`, which `switch` may break mid-round: the branch in
# `handle` that needs another mode is walked in doubt, and the doubt's reason names where that
# branch is (`work.py:LINE`) in the summaries below it and in the finding's note.
DOUBTED = {
    "pkg/__init__.py": "",
    "pkg/modes.py": "import enum\n\n\nclass Mode(enum.Enum):\n    NULL = 0\n    PREFILL = 1\n",
    "pkg/syncs.py": "import torch\n\n\ndef sync_all():\n    torch.cuda.synchronize()\n",
    "pkg/work.py": """
from pkg.modes import Mode
from pkg.syncs import sync_all


def handle(s):
    if s.mode != Mode.NULL:
        sync_all()
""",
    "pkg/loop.py": """
import torch.distributed as dist

from pkg.modes import Mode
from pkg.work import handle


class S:
    def __init__(self, mode):
        self.mode = mode

    def switch(self):
        self.mode = Mode.PREFILL

    def event_loop(self):
        while True:
            handle(self)
            dist.barrier()


def dispatch(s: S):
    if s.mode == Mode.NULL:
        s.event_loop()
""",
    "pyproject.toml": '[tool.rankguard]\nrounds = ["*.event_loop"]\n',
}


def test_lines_a_doubt_names_move_with_their_function(capsys, tmp_path: Path):
    """A line added at the top of `work.py` moves the doubted branch: neither `handle`'s
    summary nor `sync_all`'s (entered under that doubt) is walked again, and the note names
    the branch's new line, as a cold run does (the kept summary said the old one)."""
    root = write_tree(tmp_path / "proj", DOUBTED)
    argv = (str(root / "pkg"), "--config", str(root / "pyproject.toml"))
    cache = ("--cache-dir", str(tmp_path / "cache"))
    cold = _check(capsys, *argv, *cache)
    assert "(work.py:6)" in cold
    _replace(root, "pkg/work.py", "from pkg.modes", "import os\nfrom pkg.modes")
    warm = _check(capsys, *argv, *cache)
    assert _walked() == set()
    assert "(work.py:7)" in warm
    assert warm == _check(capsys, *argv, "--no-cache")


def test_a_summary_entered_in_doubt_is_kept_when_the_doubted_branch_moves(capsys, tmp_path: Path):
    """The round itself takes the doubted branch (round walks are never kept) and calls
    `sync_all` there, whose summary's key holds the doubt: a line added above the round
    moves the branch, not what `sync_all` does, so it is not walked again (it was: the doubt
    named an absolute line, and every summary below a doubted branch missed after any edit
    above it; 1,048 functions after one line added in sglang's scheduler.py)."""
    files = dict(DOUBTED)
    files["pkg/loop.py"] = (
        files["pkg/loop.py"]
        .replace(
            "            handle(self)\n",
            "            if self.mode != Mode.NULL:\n                sync_all()\n",
        )
        .replace("from pkg.work import handle", "from pkg.syncs import sync_all")
    )
    root = write_tree(tmp_path / "proj", files)
    argv = (str(root / "pkg"), "--config", str(root / "pyproject.toml"))
    cache = ("--cache-dir", str(tmp_path / "cache"))
    assert "(loop.py:16)" in _check(capsys, *argv, *cache)
    _replace(root, "pkg/loop.py", "import torch", "import os\nimport torch")
    warm = _check(capsys, *argv, *cache)
    assert _walked() == set()
    assert "(loop.py:17)" in warm
    assert warm == _check(capsys, *argv, "--no-cache")


# `work` calls into a cycle (`ping` <-> `pong`, as a settings getter that resolves a default
# which reads another setting): the round reaches it through `tick`.
CYCLE = {
    "pkg/__init__.py": "",
    "pkg/cycle.py": """
import time


def ping(n):
    if n > 0:
        pong(n - 1)


def pong(n):
    time.sleep(0.01)
    ping(n - 1)


def work():
    ping(3)
""",
    "pkg/loop.py": """
import torch.distributed as dist

from pkg.cycle import work


class S:
    def tick(self):
        work()

    def event_loop(self):
        while True:
            self.tick()
            dist.barrier()
""",
    "pyproject.toml": '[tool.rankguard]\nrounds = ["*.event_loop"]\n',
}


def test_a_summary_that_enters_a_cycle_is_kept(capsys, tmp_path: Path):
    """A cycle's summary entered from outside it is the same whatever ran before (a summary
    is reused inside a cycle only where none of the cycle's functions it entered is on the
    stack), so it is kept like any other: an edit of `tick` walks `tick` again (and the round,
    which is never kept), not `work` and the cycle under it (on sglang, a settings getter on
    a cycle of default resolvers made 31 k summaries of 35 k walked again after a one-line
    edit)."""
    root = write_tree(tmp_path / "proj", CYCLE)
    argv = (str(root / "pkg"), "--config", str(root / "pyproject.toml"))
    cache = ("--cache-dir", str(tmp_path / "cache"))
    cold = _check(capsys, *argv, *cache)
    assert "time.sleep" in cold
    assert {"pkg.cycle.work", "pkg.cycle.ping", "pkg.cycle.pong"} <= _walked()
    _replace(root, "pkg/loop.py", "        work()\n", "        x = 1\n        work()\n")
    warm = _check(capsys, *argv, *cache)
    assert _walked() == {"pkg.loop.S.tick"}
    assert warm == _check(capsys, *argv, "--no-cache")


# A round on a cycle of calls (`event_loop` -> `g` -> `event_loop`), and a second round that
# enters the same cycle at `g` (a fresh reviewer's program, session 19).
ROUND_ON_CYCLE = """
import time

import torch.distributed as dist


def event_loop():
    dist.broadcast(None, 0)
    while True:
        g()
        dist.barrier()


def g():
    time.sleep(1)
    event_loop()
"""
OTHER_ROUND = """
import torch.distributed as dist

from pkg.loop import g


def event_loop():
    while True:
        g()
        dist.all_reduce(None)
"""
ROUND_FILES = {
    "pkg/__init__.py": "",
    "pkg/loop.py": ROUND_ON_CYCLE,
    "pkg/zother.py": OTHER_ROUND,
    "pyproject.toml": '[tool.rankguard]\nrounds = ["*.event_loop"]\n',
}


def test_a_round_on_a_cycle_is_that_cycles_entry(capsys, tmp_path: Path):
    """The second round's summary of `g` (an entry into the cycle, kept) walks `event_loop`
    whole; inside the first round, where `event_loop` is on the stack, `g` must be walked
    as part of that round's own entry, cut at `event_loop`, not taken as kept: the sleep
    waits for the barrier there, not for the broadcast."""
    root = write_tree(tmp_path / "proj", ROUND_FILES)
    argv = (str(root / "pkg"), "--config", str(root / "pyproject.toml"))
    cache = ("--cache-dir", str(tmp_path / "cache"))
    _check(capsys, *argv, *cache)
    _replace(root, "pkg/zother.py", "import torch", "import os\nimport torch")
    warm = _check(capsys, *argv, *cache)
    assert warm == _check(capsys, *argv, "--no-cache")
