"""`x is None` tests existence, not contents, in a call's argument too (issue #18).

`f(batch if layout is not None else None)` hands `f` either `batch` or `None`: which one is
decided by whether `layout` exists, not by what it holds. The statement's own test already
read it so; an argument took `layout`'s contents into `f`'s parameter. sglang hands its
forward batch to the attention metadata builder as `forward_batch=forward_batch if cp_tail is
not None else None`, where `cp_tail` is this rank's context-parallel shard layout, and every
batch field the builder reaches read as varying with the attention-CP rank.
"""

from __future__ import annotations

import pytest

from tests.uniformity.programs import lines, run


def _round(call: str, extra: str = "") -> str:
    """A round that builds a rank-local `part` and hands it to `self.step` as `call`."""
    return (
        "class S:\n"
        "    def __init__(self):\n"
        "        self.pending = []\n\n"
        "    def step(self, batch, other=None):\n"
        "        if batch:\n"
        "            dist.barrier()\n\n"
        "    def over(self, value):\n"
        "        return value > 2\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            part = dist.get_rank() + 1\n"
        "            batch = self.pending\n"
        f"            {call}\n"
        f"{extra}"
    )


def test_an_argument_that_only_tests_existence_is_uniform(program_of) -> None:
    code = _round("self.step(batch if part is not None else None)")
    assert run(program_of, code) == []


def test_a_keyword_argument_that_only_tests_existence_is_uniform(program_of) -> None:
    code = _round("self.step(None, other=None, batch=batch if part is None else batch)")
    assert run(program_of, code) == []


def test_each_argument_counts_its_own_reads(program_of) -> None:
    # `other` holds `part`'s contents, `batch` only whether `part` exists (the sglang shape:
    # an assignment, whose value is kept as a tree).
    code = _round(
        "out = self.step(batch if part is not None else None,"
        " other=part + 1 if part is not None else None)"
    )
    assert run(program_of, code) == []


@pytest.mark.parametrize(
    "call",
    [
        # The argument is the rank-local value itself on one side.
        "self.step(part if part is not None else None)",
        # The same reference is tested for existence and handed on as data.
        "self.step(batch if part is not None else part)",
        # ... in another argument of the same call: which read is which is not known.
        "self.step(batch if part is not None else None, other=part) or self.step(part)",
        # Assignments: the argument's own tree decides.
        "out = self.step(part + 1 if part is not None else None)",
        "out = self.step(batch if part is not None else part)",
        # A call inside the argument reads `part` as data: its result is the argument's.
        "out = self.step(self.over(part) if part is not None else None)",
    ],
)
def test_an_argument_that_holds_the_contents_still_varies(program_of, call: str) -> None:
    assert lines(run(program_of, _round(call))) == [7]


def test_a_test_beside_a_call_on_the_same_reference_keeps_the_contents(program_of) -> None:
    # `part is not None` is the statement's existence test; `self.over(part)` reads `part`.
    extra = "            if part is not None and self.over(part):\n                dist.barrier()\n"
    assert lines(run(program_of, _round("pass", extra))) == [18]


# A pool that answers `None` when this rank's free memory is short, behind a helper that hands
# its answer on: whether the helper's answer exists is the pool's decision.
POOL = (
    "class Pool:\n"
    "    def alloc(self, n):\n"
    "        if torch.cuda.mem_get_info()[0] < n:\n"
    "            return None\n"
    "        return [1] * n\n\n"
    "class S:\n"
    "    def __init__(self):\n"
    "        self.pool = Pool()\n\n"
    "    def get(self, n):\n"
    "        return self.pool.alloc(n)\n\n"
    "    def step(self, ok):\n"
    "        if ok:\n"
    "            dist.barrier()\n\n"
    "    def event_loop(self):\n"
    "        while True:\n"
    "            x = self.get(3)\n"
)


@pytest.mark.parametrize(
    ("test", "line"),
    [
        ("if x is None:\n                dist.barrier()", 22),
        ("self.step(x is not None)", 16),
        ("self.step(x if x is not None else None)", 16),
    ],
)
def test_a_returned_answer_exists_as_the_helper_decided(program_of, test: str, line: int) -> None:
    assert lines(run(program_of, POOL + f"            {test}\n")) == [line]


def test_a_value_built_from_a_helper_answer_is_not_that_answer(program_of) -> None:
    # `total` returns a sum, never `None`, whatever `alloc` answered.
    code = (
        POOL.replace(
            "        return self.pool.alloc(n)\n",
            "        return self.pool.alloc(n)\n\n    def total(self):\n"
            "        return sum(self.pool.alloc(3) or [])\n",
        )
        + "            y = self.total()\n"
        + "            if y is None:\n                dist.barrier()\n"
    )
    assert run(program_of, code) == []


@pytest.mark.parametrize(
    ("test", "line"),
    [
        ("if shard is None:\n                dist.barrier()", 18),
        ("self.step(batch if shard is not None else None)", 7),
        ("self.step(shard is not None)", 7),
    ],
)
def test_a_conditional_binding_exists_as_its_test_decides(program_of, test: str, line: int) -> None:
    # `shard` exists on rank 0 alone: its existence is the test's, whatever it holds.
    code = _round("shard = self.pending if part == 1 else None", f"            {test}\n")
    assert lines(run(program_of, code)) == [line]


def test_a_conditional_binding_of_uniform_sides_on_a_uniform_test_exists_alike(program_of) -> None:
    code = _round(
        "shard = self.pending if self.pending else None",
        "            self.step(batch if shard is not None else part)\n"
        "            if shard is None:\n                dist.barrier()\n",
    )
    assert lines(run(program_of, code)) == [7]  # the `else part` side, not the test
