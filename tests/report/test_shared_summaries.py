"""A report holds one copy of what base and head share: a module whose content is the same on
both sides is one summary object in memory, with the disk cache on or off."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rankguard.core.config import Config
from rankguard.model.load import make_cache
from rankguard.pipelines.report.sides import load_side
from rankguard.rules.engine import choose
from rankguard.rules.registry import all_rules
from tests.report.conftest import Repo
from tests.report.programs import HOSTILE_LOOP, LOOP


@pytest.mark.parametrize("on_disk", [False, True])
def test_base_and_head_share_unchanged_summaries(
    make_repo: Callable[[str], Repo], tmp_path: Path, on_disk: bool
):
    repo = make_repo("repo")
    files = {"pkg/__init__.py": "", "pkg/loop.py": LOOP, "pkg/waits.py": "def wait():\n    pass\n"}
    base = repo.commit(files)
    head = repo.commit({"pkg/loop.py": HOSTILE_LOOP})
    config = Config(rounds=("*.event_loop",))
    cache = make_cache(tmp_path / "cache", enabled=on_disk)
    rules = choose(all_rules(config))
    sides = [load_side(n, repo.root, rev, "", config, cache, rules) for n, rev in
             (("base", base), ("head", head))]  # fmt: skip
    modules = [side.program.modules for side in sides]
    assert modules[0]["pkg.waits"].summary is modules[1]["pkg.waits"].summary
    assert modules[0]["pkg.loop"].summary is not modules[1]["pkg.loop"].summary
