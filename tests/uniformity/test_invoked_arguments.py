"""A callable handed to an invoker gets the arguments after it (issue #18, sharing #13's
binding): `await asyncio.to_thread(self.gate, flag, n)` calls `self.gate(flag, n)`. Bound
position by position to the invoker's own arguments, `gate`'s `flag` took `self.gate` and `n`
took `flag`'s uniform value, so this rank's clock reaching `n` read as uniform."""

from __future__ import annotations

from tests.uniformity.programs import lines, run

GATE = (
    "import asyncio\n\n"
    "class S:\n"
    "    def __init__(self, tp_group):\n"
    "        self.tp_group = tp_group\n\n"
    "    def gate(self, flag, n):\n"
    "        if n > 5:\n"
    "            dist.barrier(group=self.tp_group)\n\n"
    "    async def event_loop(self):\n"
    "        while True:\n"
    "            await asyncio.to_thread(self.gate, {args})\n"
)


def test_a_thread_gets_the_clock_handed_after_the_callable(program_of) -> None:
    found = run(program_of, GATE.format(args="0, time.monotonic()"))
    assert lines(found) == [9]
    assert found[0].sources[0][0].kind == "time"


def test_a_uniform_value_handed_there_stays_uniform(program_of) -> None:
    assert run(program_of, GATE.format(args="time.monotonic(), 0")) == []
