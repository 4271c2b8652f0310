"""Fault 5: `_counts_itself` takes a local for "bound once" when only one `assign` statement
binds it, but a parameter, a `for` target or a walrus also bind it. The once-bound local's
tree (`self.done + 1`) is then read as its only value, `self.done` is settled as a Python
counter (SCALAR) although a tensor is stored in it, and the operator `self.done + 1` after a
sure sync is taken to queue nothing: `ids.tolist()` is dropped as drained.
At 84adc74 (before the once-bound-local rule) `ids.tolist()` is reported in each case; the
control where the local really is bound once is a counter in both."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.check.test_blocking import _assert_marked

STORES = {
    # `n` is the (tensor) parameter unless `c` holds
    "parameter": """
    def store(self, n: torch.Tensor, c):
        if c:
            n = self.done + 1
        self.done = n
""",
    # the loop rebinds `n` to each tensor
    "for-target": """
    def store(self, ts: list[torch.Tensor], c):
        n = self.done + 1
        for n in ts:
            pass
        self.done = n
""",
    # the walrus rebinds `n` to a tensor's sum
    "walrus": """
    def store(self, t: torch.Tensor, c):
        n = self.done + 1
        if c and (n := t.sum()) is not None:
            pass
        self.done = n
""",
}


# The summaries keep no walrus binding (`n := t.sum()` inside a test): a known gap of every
# local-flow reading here, not of the counter alone. `FunctionInfo.bound` does not close it:
# it is a set of names, the same for `n` bound by the one assignment as for `n` bound by it
# and a walrus, and the counter needs to know that only one binding gives `n` its value.
WALRUS = pytest.mark.xfail(strict=True, reason="the IR records no walrus binding")


@pytest.mark.parametrize(
    "form", [pytest.param(f, marks=WALRUS) if f == "walrus" else f for f in sorted(STORES)]
)
def test_a_local_rebound_otherwise_says_nothing_of_the_counter(tmp_path: Path, form: str):
    store = STORES[form]
    _assert_marked(
        tmp_path,
        """
class Group:
    def __init__(self):
        self.done = 0
"""
        + store
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
