"""The sample program the report tests change, revision by revision."""

from __future__ import annotations

CONFIG = """
[tool.rankguard]
rounds = ["*.event_loop"]

[tool.ruff.lint]
select = ["F", "I"]
"""

BASE_LOOP = """
import gc
import logging
import time

import torch.distributed as dist

from pkg.waits import wait

logger = logging.getLogger(__name__)


def idle():
    time.sleep(1)


def drain():
    print("draining the pool")
    gc.collect()


def event_loop():
    while True:
        idle()
        drain()
        wait()
        logger.info("round %d started", 1)
        logger.warning("pool is slow")
        dist.barrier()
"""

# Lines shift (idle's finding must stay unchanged), drain leaves the loop (resolved), a sleep
# enters it (new), one literal is edited, one is removed, one moves to another function, one is
# added; `wait` moves to another module (its finding is moved, not new).
HEAD_LOOP = """
# A comment block that shifts every line below it.
#
#

import logging
import time

import torch.distributed as dist

from pkg.other import wait

logger = logging.getLogger(__name__)


def idle():
    time.sleep(1)


def warn_slow():
    logger.warning("pool is slow")


def event_loop():
    while True:
        idle()
        wait()
        time.sleep(2)
        logger.info("round %d begun", 1)
        warn_slow()
        if False:
            raise RuntimeError("pool exhausted at round end")
        dist.barrier()
"""

WAITS = """
import time


def wait():
    time.sleep(3)
"""

STALE_BASE = """
import torch


def reserved():
    return torch.cuda.memory_reserved()


def room(free):
    return free + reserved()
"""

STALE_HEAD = """
import functools

import torch


@functools.cache
def reserved():
    return torch.cuda.memory_reserved()


def room(free):
    return free + reserved()


def want(target):
    return target - torch.cuda.mem_get_info()[0]
"""

STYLE_BASE = "import os\n"
STYLE_HEAD = "import sys\nimport os\n\nx = 1\n"


HOSTILE = "<script>alert(1)</script> | `tick` </code> **bold** <img src=x onerror=alert(2)>"

LOOP = """
import logging
import time

import torch.distributed as dist

logger = logging.getLogger(__name__)


def event_loop():
    while True:
        dist.barrier()
"""

HOSTILE_LOOP = f"""
import logging
import time

import torch.distributed as dist

logger = logging.getLogger(__name__)


def hostile_step():
    logger.info({HOSTILE!r})
    time.sleep(len("<script>alert(3)</script>"))


def event_loop():
    while True:
        hostile_step()
        dist.barrier()
"""


def base_files() -> dict[str, str | None]:
    return {
        "pyproject.toml": CONFIG,
        "pkg/__init__.py": "",
        "pkg/loop.py": BASE_LOOP,
        "pkg/waits.py": WAITS,
        "pkg/budget.py": STALE_BASE,
        "pkg/style.py": STYLE_BASE,
        "pkg/untouched.py": "import json\n",
    }


def head_files() -> dict[str, str | None]:
    return {
        "pkg/loop.py": HEAD_LOOP,
        "pkg/waits.py": None,
        "pkg/other.py": WAITS,
        "pkg/budget.py": STALE_HEAD,
        "pkg/style.py": STYLE_HEAD,
    }
