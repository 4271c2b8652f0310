"""Warm runs equal cold runs through a sequence of edits: body edits that shift lines, a new
blocking call, renamed and deleted functions, new, renamed and deleted modules, a renamed
method across modules, body edits that change what other modules see (an attribute's type,
an inferred return). After every step `check` and `graph` with the cache (kept from the
step before) answer exactly as with `--no-cache`."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from rankguard.adapters import store
from rankguard.cli import main
from rankguard.pipelines.check import KEEP_SUMMARIES
from tests.conftest import EXAMPLE

SCHED = "toysched/managers/scheduler.py"
RADIX = "toysched/mem_cache/radix_cache.py"
EXTRA = "toysched/managers/extra.py"
COMM = "toysched/distributed/comm.py"
IMPORT_PAUSE = "from toysched.managers.extra import pause\n"
BUDGET = '        self.budget = torch.zeros(1, device="cpu")  # budget\n'
ASSERT_MODE = "        assert not self.server_args.gc_each_round\n"
ROUND_BARRIER = "    def round_barrier(self) -> None:\n"
READ_BUDGET = "        n = self.budget.item()\n"
UNREAD = "        rounds_seen = 0\n"
PP = "        self.pp_group = pp"
# Bound to lower-case names, so the edit below names no new class-like name (those are part of
# the interface for class-hierarchy dispatch wherever they appear).
QUIET_GROUP = """

class QuietGroup(GroupCoordinator):
    def all_reduce(self, input_, op=None):
        return input_


coordinator, quiet = GroupCoordinator, QuietGroup
"""
NEW_BATCH = "            batch = ScheduleBatch(reqs=reqs)\n"
GUARDS = """            if batch.mode == 0:
                self._stage(batch)
                if batch.mode == 1:
                    time.sleep(0.25)
"""
PREPARE = "    def _prepare_dp_attn_batch("
STAGE = "    def _stage(self, batch):\n        batch.staged = True\n\n"
TAG = "\n\ndef _tag(obj, key):\n    setattr(obj, key, 1)\n"
FLAGS = "toysched/managers/flags.py"
FLAGS_MODULE = """import time


class Base:
    def get(self):
        return self.parse()

    def parse(self):
        return 0


class Plain(Base):
    def parse(self):
        time.sleep(1)
        return 1


class Fancy(Base):
    def parse(self):
        return 2


FLAG = Plain()
"""


def _replace(root: Path, rel: str, old: str, new: str, regex: bool = False) -> None:
    path = root / rel
    text = path.read_text()
    edited = re.sub(old, new, text, flags=re.S) if regex else text.replace(old, new)
    assert edited != text, f"{rel}: step did not apply: {old!r}"
    path.write_text(edited)


def _move(root: Path, old: str, new: str) -> None:
    (root / old).rename(root / new)


STEPS = {
    "body edit shifting lines": lambda r: _replace(
        r, SCHED, "        batch = None\n", "        batch = None\n        batch = None\n"
    ),
    "new blocking call in a reached function": lambda r: _replace(
        r,
        SCHED,
        "            gc.collect()\n",
        "            gc.collect()\n        time.sleep(0.5)\n",
    ),
    "rename a function": lambda r: _replace(
        r, SCHED, "_maybe_collect_garbage", "_collect_garbage_maybe"
    ),
    "delete a function": lambda r: (
        _replace(r, SCHED, r"    def _poll_profile_trigger\(self\).*?(?=\n    def |\Z)", "", True),
        _replace(r, SCHED, "            self._poll_profile_trigger()\n", ""),
    ),
    "new module": lambda r: (
        (r / EXTRA).write_text("import time\n\n\ndef pause():\n    time.sleep(1)\n"),
        _replace(
            r, SCHED, "import zmq\n", "import zmq\n\nfrom toysched.managers.extra import pause\n"
        ),
        _replace(r, SCHED, "        batch = None\n", "        batch = None\n        pause()\n"),
    ),
    "rename a module": lambda r: (
        _move(r, "toysched/utils/logs.py", "toysched/utils/logging_setup.py"),
        _replace(r, SCHED, "toysched.utils.logs ", "toysched.utils.logging_setup "),
    ),
    "rename a method across modules": lambda r: (
        _replace(r, RADIX, "def evict(", "def evict_tokens("),
        _replace(r, SCHED, "self.tree_cache.evict(", "self.tree_cache.evict_tokens("),
    ),
    # Body edits whose effect is in *other* modules (the mixin reads `self.pp_group`, the
    # scheduler calls through what `get_tp_group()` returns): no signature changes.
    "an attribute's type changes in a method body": lambda r: _replace(
        r, SCHED, "self.pp_group = get_pp_group()", "self.pp_group = RadixCache(0, 0, None)"
    ),
    "a function loses its return annotation": lambda r: (
        _replace(r, COMM, "def get_tp_group() -> GroupCoordinator:", "def get_tp_group():"),
        _replace(r, COMM, "    return _TP_GROUP\n", "    return GroupCoordinator()\n"),
    ),
    "its inferred return changes in its body": lambda r: _replace(
        r, COMM, "    return GroupCoordinator()\n", "    return RuntimeError()\n"
    ),
    "delete a module": lambda r: (
        (r / EXTRA).unlink(),
        _replace(r, SCHED, "\n" + IMPORT_PAUSE, ""),
        _replace(r, SCHED, "        pause()\n", ""),
    ),
    # What a reached function's summary reads of the whole program: where an attribute lives
    # is decided by every assignment to it, here one in a constructor no round reaches.
    "a reached function reads a host tensor attribute": lambda r: (
        _replace(r, SCHED, "        self.round_ct = 0\n", "        self.round_ct = 0\n" + BUDGET),
        _replace(r, SCHED, "    def round_barrier(self) -> None:\n", ROUND_BARRIER + READ_BUDGET),
    ),
    "only an unreached constructor moves it off the host": lambda r: _replace(
        r, SCHED, 'device="cpu")  # budget', "device=self.device)  # budget"
    ),
    # A class invariant (a constructor's assert) decides a branch in a reached method.
    "a constructor asserts what a reached method branches on": lambda r: _replace(
        r, SCHED, "        self.round_ct = 0\n", "        self.round_ct = 0\n" + ASSERT_MODE
    ),
    # Exact receivers: which override `self.parse()` runs depends on the class of a module-level
    # object, set outside every function the round reaches.
    "a reached method calls a module-level object's method": lambda r: (
        (r / FLAGS).write_text(FLAGS_MODULE),
        _replace(
            r, SCHED, "import zmq\n", "import zmq\n\nfrom toysched.managers.flags import FLAG\n"
        ),
        _replace(r, SCHED, READ_BUDGET, READ_BUDGET + "        FLAG.get()\n"),
    ),
    "only that object's class changes": lambda r: _replace(
        r, FLAGS, "FLAG = Plain()", "FLAG = Fancy()"
    ),
    # What another module reads of a body is a slice of it (`summary.interface`): the
    # statements others read, and the bindings of the locals they read, transitively.
    "a local nothing another module reads, in a method assigning self attributes": lambda r: (
        _replace(r, SCHED, "        self.round_ct = 0\n", "        self.round_ct = 0\n" + UNREAD)
    ),
    "an attribute's value goes through a local": lambda r: _replace(
        r, SCHED, "self.pp_group = RadixCache(0, 0, None)", "pp = RadixCache(0, 0, None)\n" + PP
    ),
    "only that local's binding changes": lambda r: _replace(
        r, SCHED, "pp = RadixCache(0, 0, None)", "pp = get_pp_group()"
    ),
    # `-> T` with `return Cls(...)` on every path: the class built, not T, is what callers get.
    "an annotated function builds what it returns": lambda r: (
        _replace(r, COMM, "def get_tp_group():", "def get_tp_group() -> GroupCoordinator:"),
        _replace(r, COMM, "    return RuntimeError()\n", "    return coordinator()\n"),
        (r / COMM).write_text((r / COMM).read_text() + QUIET_GROUP),
    ),
    "only the class it builds changes": lambda r: _replace(
        r, COMM, "    return coordinator()\n", "    return quiet()\n"
    ),
    # A call between two guards ends the facts on what it may change (`analysis.clobbers`):
    # what a helper's callee gives `setattr` a computed name reaches the guard through the
    # whole program's fixed point (`Clobbers._closed`), so the inner branch runs or not.
    "a helper between two guards sets one attribute by name": lambda r: (
        _replace(r, SCHED, NEW_BATCH, NEW_BATCH + GUARDS),
        _replace(r, SCHED, PREPARE, STAGE + PREPARE),
    ),
    "the helper's new callee gives setattr a computed name": lambda r: (
        _replace(r, SCHED, "        batch.staged = True\n", "        _tag(batch, self.key)\n"),
        (r / SCHED).write_text((r / SCHED).read_text() + TAG),
    ),
    "rename that callee": lambda r: _replace(r, SCHED, "_tag(", "_mark("),
    "delete that callee": lambda r: (
        _replace(r, SCHED, "        _mark(batch, self.key)\n", "        batch.staged = True\n"),
        _replace(r, SCHED, TAG.replace("_tag(", "_mark("), "\n"),
    ),
}


def test_warm_equals_no_cache_after_every_edit(capsys, tmp_path: Path, monkeypatch):
    monkeypatch.setenv(KEEP_SUMMARIES, "1")  # with kept blocking summaries (the default)
    root = shutil.copytree(EXAMPLE, tmp_path / "toysched")
    cache = str(tmp_path / "cache")

    def run(*argv: str) -> tuple[int, str]:
        code = main([*argv, "--format", "json"])
        return code, capsys.readouterr().out

    def both(step: str) -> tuple[str, ...]:
        found = []
        for command in ("check", "graph"):
            warm = run(command, str(root), "--cache-dir", cache)
            cold = run(command, str(root), "--no-cache")
            assert warm == cold, f"{command} after: {step}"
            found.append(warm[1])
        return tuple(found)

    store.COUNTS.clear()
    outputs = [both("nothing")]
    for step, apply in STEPS.items():
        apply(root)
        outputs.append(both(step))
    # The sequence is not vacuous: the findings change along the way, and the warm runs took
    # kept blocking summaries and uniformity flows (`analysis.uniformity.keep`).
    assert len(set(outputs)) > 3
    named = dict(zip(["nothing", *STEPS], outputs, strict=True))
    sleep = "time.sleep(0.25)"  # the inner guard's call: reported only where the helper may end
    assert sleep not in named["a helper between two guards sets one attribute by name"][0]
    assert sleep in named["the helper's new callee gives setattr a computed name"][0]
    assert sleep in named["rename that callee"][0]
    assert sleep not in named["delete that callee"][0]
    assert store.COUNTS["blocking summaries reused"] > 0
    assert store.COUNTS["uniformity walks reused"] > 0


def test_a_body_edit_re_resolves_only_its_module(capsys, tmp_path: Path):
    """Per-module resolution: an edit that changes no interface resolves one module again;
    one that changes an interface (a renamed method) resolves everything."""
    root = shutil.copytree(EXAMPLE, tmp_path / "toysched")
    argv = ["graph", str(root), "--format", "json", "--cache-dir", str(tmp_path / "cache")]

    def resolved_after(step: str) -> int:
        STEPS[step](root)
        store.COUNTS.clear()
        main(argv)
        capsys.readouterr()
        return store.COUNTS["modules resolved"]

    main(argv)
    modules = len(list((root / "toysched").rglob("*.py")))
    assert resolved_after("body edit shifting lines") == 1
    assert resolved_after("new blocking call in a reached function") == 1
    # The method assigns `self` attributes; nothing reads the new local.
    assert (
        resolved_after(
            "a local nothing another module reads, in a method assigning self attributes"
        )
        == 1
    )
    assert resolved_after("rename a method across modules") == modules
