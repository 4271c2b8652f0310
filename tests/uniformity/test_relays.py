"""A hand-rolled fan-out relays one rank's value to the others (issue #18, FlexKV's leader).

The leader sends its value point-to-point to each peer and keeps it; every peer returns what it
received. So what the relay returns is the leader's value on every rank it reaches, as after a
broadcast over a group that cannot be named. A helper that sends its argument and returns it,
receiving nothing (or only what it does not return), hands back this rank's own value.
"""

from __future__ import annotations

from tests.uniformity.programs import lines, run

COMM = (
    "class Comm:\n"
    "    def _send(self, dst, data):\n"
    "        dist.isend(torch.tensor(data), dst=dst)\n\n"
    "    def _recv(self, src):\n"
    "        t = torch.empty(4)\n"
    "        dist.irecv(t, src=src).wait()\n"
    "        return t.tolist()\n\n"
    "    def relay(self, data, ranks, is_leader):\n"
    "        if not ranks:\n"
    "            return data\n"
    "        if is_leader:\n"
    "            for dst in ranks[1:]:\n"
    "                self._send(dst, data)\n"
    "            return data\n"
    "        return self._recv(ranks[0])\n\n"
    "    def fan_out(self, data):\n"
    "        if self.stage_ranks:\n"
    "            data = self.relay(data, self.stage_ranks, self.is_stage_leader)\n"
    "        if self.member_ranks:\n"
    "            data = self.relay(data, self.member_ranks, self.is_leader)\n"
    "        return data\n\n"
    "    def push(self, data):\n"
    "        self._send(1, data)\n"
    "        return data\n\n"
    "    def push_acked(self, data):\n"
    "        self._send(1, data)\n"
    "        ack = self._recv(1)\n"
    "        return data\n\n"
)


def test_a_fan_out_returns_the_leaders_value(program_of) -> None:
    code = COMM + (
        "class S:\n"
        "    def __init__(self):\n"
        "        self.comm = Comm()\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            hit = self.comm.fan_out({'hit': time.monotonic()})\n"
        "            if hit['hit'] > 1.0:\n"
        "                dist.barrier()\n"
        "            own = self.comm.push(time.monotonic())\n"
        "            if own > 1.0:\n"
        "                dist.barrier()  # varies: sent, and kept, but nothing received\n"
        "            acked = self.comm.push_acked(time.monotonic())\n"
        "            if acked > 1.0:\n"
        "                dist.barrier()  # varies: what it received is not what it returns\n"
    )
    found = run(program_of, code)
    end = code.count("\n")
    assert lines(found) == [end - 3, end]
    assert {d.sources[0][0].kind for d in found} == {"time"}
