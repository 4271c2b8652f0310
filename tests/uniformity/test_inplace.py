"""A tensor written in place holds what was written into it (issue #18, data, not placement).

`buf.copy_(x)`, `buf.fill_(v)`, `buf.add_(v)`, `buf.index_copy_(0, i, x)`: the buffer holds what
its arguments hold from there on, whatever it was built from (`torch.zeros(n)` holds no data of
its own, but what is copied into it is data). The catalog lists these writers with the
container feeders (`rank_sources.toml`, `[containers] feeders`). A tensor filled in place with
a draw (`buf.uniform_()`) holds this rank's own random values, unless every rank seeds the
generator alike (`[[generator]]`).
"""

from __future__ import annotations

import pytest

from tests.uniformity.programs import lines, run


def _round(build: str, write: str) -> str:
    return (
        "class S:\n"
        "    def __init__(self):\n"
        f"        self.buf = {build}\n\n"
        "    def stamp(self):\n"
        f"        self.buf.{write}\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            self.stamp()\n"
        "            if self.buf.sum() > 0:\n"
        "                dist.barrier()\n"
    )


@pytest.mark.parametrize(
    "write",
    [
        "copy_(torch.tensor([time.monotonic()]))",
        "fill_(time.monotonic())",
        "add_(time.monotonic())",
        "index_copy_(0, torch.tensor([0]), torch.tensor([time.monotonic()]))",
        "masked_fill_(self.buf > 0, time.monotonic())",
    ],
)
def test_a_buffer_written_in_place_holds_what_was_written(program_of, write: str) -> None:
    code = _round("torch.zeros(4)", write)
    assert lines(run(program_of, code)) == [code.count("\n")]


def test_a_buffer_written_in_place_with_uniform_values_stays_uniform(program_of) -> None:
    assert run(program_of, _round("torch.zeros(4)", "fill_(1.0)")) == []


@pytest.mark.parametrize("draw", ["uniform_()", "normal_(0.0, 1.0)", "bernoulli_(0.5)"])
def test_a_buffer_filled_with_an_unseeded_draw_varies(program_of, draw: str) -> None:
    code = _round("torch.empty(4)", draw)
    assert lines(run(program_of, code)) == [code.count("\n")]


def test_a_buffer_filled_from_a_generator_every_rank_seeds_alike_is_uniform(program_of) -> None:
    code = _round("torch.empty(4)", "uniform_()").replace(
        "        self.buf = ", "        torch.manual_seed(1234)\n        self.buf = "
    )
    assert run(program_of, code) == []
