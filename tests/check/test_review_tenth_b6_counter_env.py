"""5bd2ee7 counted a parameter or a `for` target as a binding for the once-bound locals'
trees, but the placement `env` the same index keeps still takes a local assigned by one
statement for bound once: `n = 1` beside the tensor parameter `n` places `n` on the host,
`self.done + n` reads as a Python number and `self.done` is settled a counter."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.check.test_blocking import _assert_marked

STORES = {
    "parameter": """
    def store(self, n: torch.Tensor, c):
        if c:
            n = len(self.items)
        self.done = self.done + n
""",
    "for-target": """
    def store(self, ts: list[torch.Tensor], c):
        n = len(self.items)
        for n in ts:
            pass
        self.done = self.done + n
""",
}


@pytest.mark.parametrize("form", sorted(STORES))
def test_a_local_placed_by_one_assignment_but_rebound_otherwise(tmp_path: Path, form: str):
    _assert_marked(
        tmp_path,
        """
class Group:
    def __init__(self):
        self.done = 0
"""
        + STORES[form]
        + """
    def commit(self, ids: torch.Tensor):
        torch.cuda.synchronize()  # expect
        m = self.done + 1
        again = ids.tolist()  # expect

    def loop(self, ids, t):
        while True:
            self.store(t, True)
            self.commit(ids)
            dist.barrier()
""",
        {"rounds": ["mod.Group.loop"]},
    )
