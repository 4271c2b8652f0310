"""Small git repositories with history, built with the git CLI, for the inventory audits.

History of the `history` repository (main):

    A  pkg/loop.py, pkg/util.py: every literal at its first place
    B  pkg/loop.py: lines inserted above `step done` (moved);
       pkg/util.py -> pkg/tools/util.py (wrong-file); `legacy removed notice` removed (gone)
side (from A)
    S  pkg/util.py edited on a side branch: an inventory pinned here is not an ancestor of B
"""

from __future__ import annotations

import subprocess
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

LOOP_A = """\
import logging
import threading

from pkg.util import helper

logger = logging.getLogger(__name__)


class Sched:
    def __init__(self):
        self.t = threading.Thread(target=self.watchdog)

    def watchdog(self):
        logger.warning("watchdog saw a stall of %.1f s", 1.0)

    def step(self, n):
        logger.info("step done for batch %d", n)
        helper(n)

    def event_loop_normal(self):
        while True:
            self.step(1)
"""

UTIL_A = '''\
import logging
import sys

logger = logging.getLogger(__name__)

# an old message lives on here: cache warmed up in the background


def helper(x):
    """Mentions "the pool is exhausted" in prose only."""
    logger.warning("helper fired: {}".format(x))
    logger.info("cache flushed %d entries", x)
    if x < 0:
        raise ValueError(f"bad value {x} for key")
    print("duplicated message here")
    sys.stderr.write("legacy removed notice\\n")
    return x


def other():
    print("duplicated message here")
    report("custom emitter says hello")
'''


def line_of(text: str, snippet: str) -> int:
    """1-based line of the first line of `text` containing `snippet`."""
    for number, line in enumerate(text.splitlines(), start=1):
        if snippet in line:
            return number
    raise AssertionError(f"{snippet!r} not in text")


def git(cwd: Path, *args: str) -> str:
    env_args = ["-c", "user.email=t@example.com", "-c", "user.name=t"]
    env_args += ["-c", "init.defaultBranch=main"]
    return subprocess.run(
        ["git", *env_args, *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def commit(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


@dataclass
class History:
    root: Path
    a: str
    b: str
    side: str
    loop_a: str
    loop_b: str
    util_a: str
    util_b: str


@pytest.fixture(scope="session")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    root = tmp_path_factory.mktemp("history")
    git(root, "init", "-q")
    write(root, "pkg/__init__.py", "")
    write(root, "pkg/loop.py", LOOP_A)
    write(root, "pkg/util.py", UTIL_A)
    write(root, "pyproject.toml", '[tool.rankguard]\nrounds = ["*.event_loop_normal"]\n')
    a = commit(root, "A")
    git(root, "checkout", "-q", "-b", "side")
    write(root, "pkg/util.py", UTIL_A.replace("return x", "return x + 1"))
    side = commit(root, "S")
    git(root, "checkout", "-q", "main")
    loop_b = LOOP_A.replace(
        "    def step(self, n):\n",
        "    def step(self, n):\n" + "        # three lines pushing the literal down\n" * 3,
    )
    write(root, "pkg/loop.py", loop_b.replace("from pkg.util", "from pkg.tools.util"))
    (root / "pkg/util.py").unlink()
    write(root, "pkg/tools/__init__.py", "")
    util_b = UTIL_A.replace('    sys.stderr.write("legacy removed notice\\n")\n', "")
    assert util_b != UTIL_A
    write(root, "pkg/tools/util.py", util_b)
    b = commit(root, "B")
    return History(root, a, b, side, LOOP_A, loop_b, UTIL_A, util_b)


def inventory_md(rows: list[tuple[str, str, str]], pin: str | None, extra: str = "") -> str:
    head = f"# Audit\n\nSome prose.\n\npin: {pin}\n\n" if pin else "# Audit\n\n"
    table = ["| id | site | literal | reachable | note |", "|---|---|---|---|---|"]
    table += [f"| {i} | {s} | `{lit}` | ? | n{i} |" for i, s, lit in rows]
    return head + "\n".join(table) + "\n" + textwrap.dedent(extra)


@pytest.fixture
def cache_args(tmp_path: Path) -> list[str]:
    return ["--cache-dir", str(tmp_path / "cache")]
