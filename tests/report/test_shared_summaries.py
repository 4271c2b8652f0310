"""A report holds one copy of what base and head share: a module whose content is the same on
both sides is one summary object in memory, with the disk cache on or off; the head
re-resolves only the modules the change touched; and a side keeps no program once its
findings are known, so the report never holds two."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rankguard.adapters import store
from rankguard.core.config import Config
from rankguard.model.load import load_program, make_cache
from rankguard.pipelines.report import build_report, sides
from rankguard.pipelines.report.sides import load_side
from rankguard.pipelines.report.staleness import audit_rows
from rankguard.rules.engine import choose
from rankguard.rules.registry import all_rules
from tests.report.conftest import Repo
from tests.report.programs import HOSTILE_LOOP, LOOP, WAITS

CONFIG = Config(rounds=("*.event_loop",))
WAITING_LOOP = LOOP.replace("import torch.distributed as dist\n", (
    "import torch.distributed as dist\n\nfrom pkg.waits import wait\n")).replace(
    "        dist.barrier()\n", "        wait()\n        dist.barrier()\n")  # fmt: skip
# A body edit that changes no interface: the sleep the loop reaches comes in at head.
UNREACHED = WAITS.replace("    time.sleep(3)", "    if False:\n        time.sleep(3)")
FILES = {
    "pkg/__init__.py": "",
    "pkg/loop.py": WAITING_LOOP,
    "pkg/waits.py": UNREACHED,
    "pkg/idle.py": "def nothing():\n    return 1\n",
}


@pytest.mark.parametrize("on_disk", [False, True])
def test_base_and_head_share_unchanged_summaries(
    make_repo: Callable[[str], Repo], tmp_path: Path, on_disk: bool
):
    repo = make_repo("repo")
    files = {"pkg/__init__.py": "", "pkg/loop.py": LOOP, "pkg/waits.py": "def wait():\n    pass\n"}
    base = repo.commit(files)
    head = repo.commit({"pkg/loop.py": HOSTILE_LOOP})
    cache = make_cache(tmp_path / "cache", enabled=on_disk)
    rules = choose(all_rules(CONFIG))
    found = [load_side(n, repo.root, rev, "", CONFIG, cache, rules) for n, rev in
             (("base", base), ("head", head))]  # fmt: skip
    summaries = [side.summaries for side in found]
    assert summaries[0]["pkg/waits.py"] is summaries[1]["pkg/waits.py"]
    assert summaries[0]["pkg/loop.py"] is not summaries[1]["pkg/loop.py"]


def _report(repo: Repo, base: str, head: str, tmp_path: Path, on_disk: bool) -> Any:
    cache = make_cache(tmp_path / "cache", enabled=on_disk)
    rules = choose(all_rules(CONFIG))
    return build_report(repo.root, base, head, CONFIG, cache, rules, staleness_source=audit_rows)


@pytest.mark.parametrize("on_disk", [False, True])
def test_head_resolves_only_the_modules_the_change_touched(
    make_repo: Callable[[str], Repo], tmp_path: Path, on_disk: bool
):
    repo = make_repo("repo")
    base = repo.commit(FILES)
    head = repo.commit({"pkg/waits.py": WAITS})
    store.COUNTS.clear()
    report = _report(repo, base, head, tmp_path, on_disk)
    assert store.COUNTS["modules resolved"] == len(FILES) + 1
    # What the head found is what it finds alone, in a process that shares nothing.
    alone = make_cache(None)
    rules = choose(all_rules(CONFIG))
    head_alone = load_side("head", repo.root, head, "", CONFIG, alone, rules, audit_rows)
    assert report.head.result.findings == head_alone.result.findings
    assert report.head.staleness == head_alone.staleness
    assert [f.extra["blocking"]["callee"] for f in report.findings.new] == ["time.sleep"]


def test_no_program_outlives_its_side(
    make_repo: Callable[[str], Repo], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    repo = make_repo("repo")
    base = repo.commit(FILES)
    head = repo.commit({"pkg/waits.py": WAITS})
    programs: list[weakref.ref] = []

    def loading(*args: Any) -> Any:
        program = load_program(*args)
        programs.append(weakref.ref(program))
        return program

    monkeypatch.setattr(sides, "load_program", loading)
    frozen: list[bool] = []
    run_rules = sides.run_rules

    def rules_run(*args: Any, **kwargs: Any) -> Any:
        frozen.append(gc.get_freeze_count() > 0)  # the side's model is out of the scans
        return run_rules(*args, **kwargs)

    monkeypatch.setattr(sides, "run_rules", rules_run)
    alive: list[int] = []
    real = sides.load_side

    def side(label: str, *args: Any) -> Any:
        # No collection here: the model is cyclic (program <-> resolver), and loading pauses
        # the collector, so a side left for it would still be there through the next load.
        alive.append(sum(ref() is not None for ref in programs))
        return real(label, *args)

    monkeypatch.setattr("rankguard.pipelines.report.build.load_side", side)
    report = _report(repo, base, head, tmp_path, on_disk=False)
    gc.collect()
    assert len(programs) == 2 and alive == [0, 0]
    assert frozen == [True, True] and gc.get_freeze_count() == 0
    assert not any(ref() for ref in programs)
    assert report.findings.new


def test_head_walks_again_only_the_functions_the_change_reaches(
    make_repo: Callable[[str], Repo], tmp_path: Path
):
    repo = make_repo("repo")
    pausing = WAITING_LOOP.replace("from pkg.waits import wait\n", (
        "from pkg.slow import pause\nfrom pkg.waits import wait\n")).replace(
        "        wait()\n", "        pause()\n        wait()\n")  # fmt: skip
    files = {**FILES, "pkg/loop.py": pausing, "pkg/slow.py": WAITS.replace("wait", "pause")}
    base = repo.commit(files)
    head = repo.commit({"pkg/waits.py": WAITS})
    store.COUNTS.clear()
    report = _report(repo, base, head, tmp_path, on_disk=False)
    computed = {k: n for k, n in store.COUNTS.items() if k.startswith("blocking summary computed")}
    assert computed["blocking summary computed: pkg.slow.pause"] == 1  # the head re-used it
    assert computed["blocking summary computed: pkg.waits.wait"] == 2  # changed: walked again
    assert sorted(f.extra["blocking"]["callee"] for f in report.head.result.findings) == [
        "time.sleep",
        "time.sleep",
    ]
