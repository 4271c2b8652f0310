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


# Review of the first version: what else read the invoker's own arguments.


def test_the_constants_that_prune_a_callees_collectives_follow_the_callable(program_of) -> None:
    # `b` is True on the thread: the barrier is entered, under this rank's clock.
    code = GATE.replace("if n > 5:", "if n:").format(args="False, True")
    code = code.replace(
        "            await asyncio.to_thread",
        "            if time.monotonic() > 5:\n                await asyncio.to_thread",
    )
    found = run(program_of, code)
    assert [d.call.line for d in found] == [
        d.call.line
        for d in run(
            program_of,
            code.replace(
                "await asyncio.to_thread(self.gate, False, True)", "self.gate(False, True)"
            ),
        )
    ]
    assert found and found[0].sources[0][0].kind == "time"


TUPLES = (
    "def get_tp_group():\n    return _TP\n\n"
    "class Batch:\n"
    "    def __init__(self):\n"
    "        self.count = 0\n"
    "        self.local = 0\n\n"
    "def leave(fb: Batch, unused, saved):\n"
    "    (fb.count, fb.local) = saved\n\n"
    "class S:\n"
    "    async def event_loop(self):\n"
    "        while True:\n"
    "            fb = Batch()\n"
    "            ok = (3, 4)\n"
    "            pair = (3, get_attention_tp_rank())\n"
    "            await asyncio.to_thread(leave, fb, {args})\n"
    "            if fb.local > 1:\n"
    "                dist.barrier(group=get_tp_group().cpu_group)\n"
)


def test_a_tuple_handed_through_the_thread_fills_its_own_parameter(program_of) -> None:
    code = "import asyncio\n\n" + TUPLES
    assert len(run(program_of, code.format(args="ok, pair"))) == 1
    assert run(program_of, code.format(args="pair, ok")) == []


def test_what_a_handed_callable_returns_is_what_the_thread_returns(program_of) -> None:
    code = (
        "import asyncio\n\n"
        "def apply(fn):\n    return fn()\n\n"
        "def clock():\n    return time.monotonic()\n\n"
        "def zero():\n    return 0\n\n"
        "def other():\n    return apply(zero)\n\n"
        "async def event_loop():\n"
        "    while True:\n"
        "        n = await asyncio.to_thread(apply, clock)\n"
        "        if n > 5:\n"
        "            dist.barrier()\n"
    )
    found = run(program_of, code)
    assert len(found) == 1 and found[0].sources[0][0].kind == "time"
