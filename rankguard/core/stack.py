"""Room on the Python stack for the analyses' recursive questions.

The model answers questions lazily and recursively (what a name holds asks what the names it is
made from hold, through calls and attributes), and the walks recurse into nested statements. On
sglang a check came within a few dozen frames of Python's default limit of 1,000: run inside
pytest, whose own frames sit below it, one function's rule failed with `RecursionError`. The
depth grows with the code analysed, not with a bug, so the rules run with a higher limit
(CPython 3.11+ keeps Python-to-Python calls off the C stack, so this costs no C stack there),
restored afterwards for a caller that runs rankguard in process.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

DEEP = 20_000


@contextlib.contextmanager
def deep_recursion(limit: int = DEEP) -> Iterator[None]:
    """At least `limit` frames of recursion inside the block; the caller's limit after it."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(max(before, limit))
    try:
        yield
    finally:
        sys.setrecursionlimit(before)
