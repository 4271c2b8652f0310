"""Running the uniformity analysis on one small module, as the tests here do."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rankguard.analysis.collectives import CollectiveReach
from rankguard.analysis.discovery import discover_rounds
from rankguard.analysis.uniformity import find_divergent_calls
from rankguard.catalogs.catalog import collective_catalog
from rankguard.model import Program

HEAD = "import os, random, time\nimport torch\nimport torch.distributed as dist\n\n"
OFFSET = HEAD.count("\n")


def run(program_of: Callable[..., Program], code: str, driver_terms: tuple[Any, ...] = ()) -> list:
    """The divergent collectives of `m.py` (HEAD + code) from its discovered rounds."""
    program = program_of({"m.py": HEAD + code})
    reach = CollectiveReach(program, collective_catalog())
    rounds = list(discover_rounds(program, reach).patterns)
    return find_divergent_calls(program, rounds, reach, driver_terms)


def lines(found: list) -> list[int]:
    """The collective lines found, counted from the first line of `code`."""
    return sorted(d.call.line - OFFSET for d in found)
