"""A loop over `zip(...)` or `enumerate(...)` binds each target to its own sequence's items
(issue #18): `for i, (req, tok) in enumerate(zip(reqs, toks))` gives `req` what `reqs` holds,
not what `toks` holds.

Taken whole, a rank-local value in one zipped sequence reached every target: a serving loop's
`for i, (req, tok) in enumerate(zip(batch.reqs, next_token_ids))` carried whatever the model's
output held into each request's state, and from there into every condition on the batch. How
many times the loop runs still follows every sequence's length (`zip` stops at the shortest),
and an `enumerate` count follows how many items there are.
"""

from __future__ import annotations

import pytest

from tests.uniformity.programs import lines, run


def _loop(header: str, test: str) -> str:
    return (
        "def get_tp_group():\n    return _TP\n\n"
        "class S:\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            reqs = [1, 2]\n"
        "            local = [get_attention_tp_rank()]\n"
        "            seen = 0\n"
        f"            {header}\n"
        f"                seen = {test}\n"
        "            if seen:\n"
        "                dist.barrier(group=get_tp_group().cpu_group)\n"
    )


@pytest.mark.parametrize(
    "header",
    [
        "for req, mine in zip(reqs, local):",
        "for i, (req, mine) in enumerate(zip(reqs, local)):",
        "for i, (req, mine) in enumerate(zip(reqs, local, strict=True), start=1):",
    ],
)
def test_each_target_takes_its_own_sequences_items(program_of, header: str) -> None:
    assert run(program_of, _loop(header, "req")) == []


@pytest.mark.parametrize(
    "header",
    [
        "for req, mine in zip(reqs, local):",
        "for i, (req, mine) in enumerate(zip(reqs, local)):",
    ],
)
def test_the_target_beside_it_still_varies(program_of, header: str) -> None:
    code = _loop(header, "mine")
    assert lines(run(program_of, code)) == [code.count("\n")]


def test_an_enumerate_count_follows_how_many_items_not_what_they_hold(program_of) -> None:
    code = _loop("for i, mine in enumerate(reqs):", "i")
    fed = code.replace(
        "            seen = 0\n", "            seen = 0\n            reqs.append(local[0])\n"
    )
    assert fed != code and run(program_of, fed) == []


def test_a_sequence_computed_in_the_header_keeps_its_own_items(program_of) -> None:
    code = _loop("for req, mine in zip(list(reqs), sorted(local)):", "req")
    assert run(program_of, code) == []
    code = code.replace("seen = req", "seen = mine")
    assert lines(run(program_of, code)) == [code.count("\n")]


def test_targets_that_unpack_an_item_further_take_the_whole_item(program_of) -> None:
    """`for (a, b), mine in zip(pairs, local)`: three targets over two sequences; which
    sequence each target reads is not positional, so every target takes both."""
    code = _loop("for (a, b), mine in zip(zip(reqs, reqs), local):", "a")
    assert lines(run(program_of, code)) == [code.count("\n")]


def test_how_often_the_loop_runs_follows_every_length(program_of) -> None:
    code = (
        "def get_tp_group():\n    return _TP\n\n"
        "class S:\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            reqs = [1, 2]\n"
        "            local = list(range(get_attention_tp_rank()))\n"
        "            for req, mine in zip(reqs, local):\n"
        "                dist.barrier(group=get_tp_group().cpu_group)\n"
    )
    assert lines(run(program_of, code)) == [code.count("\n")]
