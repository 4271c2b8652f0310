"""A rank-divergent finding's fingerprint names its site, not its evidence.

What a user accepts in a baseline (or a PR report matches) is a collective call in a function
under a condition. The varying source the finding names is evidence: the nearest one changes
whenever the model learns more (or a helper is rewritten), and that must not make the same
site look new. Two sites must never share a fingerprint, and moving code must keep them.
"""

from __future__ import annotations

import json
from pathlib import Path

from rankguard.cli import main
from tests.conftest import write_tree

RULE = "rank-divergent-collective"
CONFIG = '[tool.rankguard]\nrounds = ["*.event_loop"]\n'

CLOCK = """
import time


def budget():
    return time.time()
"""
# The same helper, its varying value now from the host, one assignment further away.
HOST = """
import os


def budget():
    pid = os.getpid()
    return pid
"""

LOOP = """
import torch.distributed as dist

from pkg.budget import budget


class S:
    def event_loop(self):
        while True:
            if budget() > 10:
                dist.barrier()
"""

# Three collectives under one guard, two of them the same call.
THREE = """
import torch.distributed as dist

from pkg.budget import budget


class S:
    def event_loop(self):
        while True:
            if budget() > 10:
                dist.barrier()
                dist.all_reduce(self.t)
                dist.barrier()
"""

# The same call under two guards of the same text; `FIRST` decides what the first one reads.
TWICE = """
import torch.distributed as dist

from pkg.budget import budget


class S:
    def event_loop(self):
        while True:
            ok = FIRST
            if ok:
                dist.barrier()
            ok = budget() > 10
            if ok:
                dist.barrier()
"""


def divergent(root: Path, files: dict[str, str], capsys) -> list[dict]:
    write_tree(root, {"pyproject.toml": CONFIG, "pkg/__init__.py": "", **files})
    main(["check", str(root), "--format", "json", "--no-cache", "--select", RULE])
    out, _ = capsys.readouterr()
    found = [f for f in json.loads(out)["findings"] if f["rule"] == RULE]
    return sorted(found, key=lambda f: f["line"])


def test_a_nearer_source_keeps_the_site_fingerprint(tmp_path: Path, capsys):
    clock = divergent(tmp_path / "a", {"pkg/budget.py": CLOCK, "pkg/loop.py": LOOP}, capsys)
    host = divergent(tmp_path / "b", {"pkg/budget.py": HOST, "pkg/loop.py": LOOP}, capsys)
    assert len(clock) == len(host) == 1
    # The evidence changed: another kind of source, named by other text ...
    assert clock[0]["source"]["text"] != host[0]["source"]["text"]
    assert clock[0]["source"]["kind"] != host[0]["source"]["kind"]
    # ... the site did not.
    assert clock[0]["fingerprint"] == host[0]["fingerprint"]


def test_collectives_under_one_guard_have_distinct_fingerprints(tmp_path: Path, capsys):
    found = divergent(tmp_path / "a", {"pkg/budget.py": CLOCK, "pkg/loop.py": THREE}, capsys)
    assert len(found) == 3
    prints = [f["fingerprint"] for f in found]
    assert len(set(prints)) == 3
    # Moved down by some lines: every site keeps its own fingerprint.
    moved = "# moved\n\n\n\n" + THREE.replace("class S:", "# the scheduler\n\n\nclass S:")
    again = divergent(tmp_path / "b", {"pkg/budget.py": CLOCK, "pkg/loop.py": moved}, capsys)
    assert [f["line"] for f in again] != [f["line"] for f in found]
    assert [f["fingerprint"] for f in again] == prints


def test_a_site_keeps_its_fingerprint_when_an_identical_one_before_it_goes(tmp_path: Path, capsys):
    both = TWICE.replace("FIRST", "budget() > 10")
    found = divergent(tmp_path / "a", {"pkg/budget.py": CLOCK, "pkg/loop.py": both}, capsys)
    assert len(found) == 2 and found[0]["fingerprint"] != found[1]["fingerprint"]
    # The first guard now reads a constant: its call is no finding, the second site stays.
    one = TWICE.replace("FIRST", "True")
    left = divergent(tmp_path / "b", {"pkg/budget.py": CLOCK, "pkg/loop.py": one}, capsys)
    assert len(left) == 1
    assert left[0]["fingerprint"] == found[1]["fingerprint"]
