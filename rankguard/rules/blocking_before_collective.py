"""Rule `blocking-before-collective`: a call that can stall this rank while its peers wait.

One finding per round and blocking call site: every collective it may delay is listed in
`collectives`, in the round's execution order; `collective` names the first of them that a path
of plain calls reaches, where there is one. A path through a subclass's override or a fallback
edge holds only in some configurations, so it is listed, not headlined, when a surer one exists.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar

from rankguard.analysis.blocking import Pair
from rankguard.analysis.blocking_types import BlockingCall, Key
from rankguard.analysis.collectives import CollectiveSite
from rankguard.core import progress
from rankguard.core.chains import chain_json, chain_key
from rankguard.core.findings import Finding, fingerprint
from rankguard.rules.base import Example, Invalid, Rule, RuleContext, Valid
from rankguard.rules.codes import alias_table
from rankguard.rules.engine import suppression

_HEAD = """\
import gc, queue, subprocess, threading, time
from concurrent.futures import Future
import torch
import torch.distributed as dist
import zmq
"""


def _loop(*body: str, before: str = "", after: str = "    dist.barrier()\n") -> str:
    """A module whose `S.event_loop` round runs `body`, then a barrier, then `after`'s tail."""
    lines = "".join(f"            {line}\n" for line in body)
    tail = "".join(f"        {line}\n" for line in after.splitlines())
    return (
        f"{_HEAD}\n{before}\nclass S:\n    def event_loop(self):\n        while True:\n"
        f"{lines}{tail}"
    )


class BlockingBeforeCollective(Rule):
    name = "blocking-before-collective"
    code = "RG101"
    description = (
        "A call that can block this rank between the round start (or the previous collective) "
        "and a collective."
    )
    help = (
        "Every rank waits in a collective until the slowest rank enters it, so a call that can "
        "stall one rank (driver query, device sync, blocking receive, Work.wait, sleep, file "
        "I/O, lock, queue get without timeout, gc) stalls the whole group. Move the call after "
        "the round's last collective, bound it (timeout, NOBLOCK), make it asynchronous, or keep "
        "its result cached; a cadenced call is still reported because the round it runs in still "
        "stalls. Suppress a reviewed call with `# rankguard: ignore[blocking-before-collective] "
        "reason` on the call line or on any call line of its chain."
    )

    what = (
        "Walks every round (one iteration of a round function's loop) from its start, and from "
        "each collective to the next, through calls, and lists every call that can block this "
        "rank on the way: driver and allocator queries, device syncs on device values, blocking "
        "receives, `Work.wait()`, sleeps, file I/O, subprocesses, locks, queue gets without a "
        "timeout, `gc.collect`, `empty_cache`. Each finding carries the chain from the round "
        "function to the blocking call and the collective it delays."
    )
    why = (
        "A collective returns on no rank until every rank has entered it, so one rank stalled "
        "before it stalls the whole group: the others sit in the collective and a stack dump "
        "shows them waiting there, not the straggler's call. Finding such calls one stack dump "
        "at a time never ends."
    )
    instead = (
        "class S:\n    def event_loop(self):\n        while True:\n"
        "            dist.all_reduce(t)\n"
        "            # after the round's last collective: it delays no peer in this round\n"
        "            free, total = torch.cuda.mem_get_info()\n"
    )
    options = (
        "rounds",
        "collectives",
        "blocking",
        "non-blocking",
        "cadence-helpers",
        "platforms",
        "--include-round-tail",
    )
    fix = ""

    VALID: ClassVar[list[Example]] = [
        # CPU tensors: created on the CPU, or already moved there.
        Valid(_loop("t = torch.tensor([1], device='cpu')", "n = t.item()")),
        Valid(_loop("x = torch.ones(3)", "y = x.tolist()")),
        # Non-blocking receives and bounded waits.
        Valid(_loop("m = self.sock.recv_pyobj(zmq.NOBLOCK)", before="")),
        Valid(_loop("m = self.sock.recv(flags=zmq.DONTWAIT)")),
        Valid(_loop("q = queue.Queue()", "a = q.get(timeout=0.1)", "b = q.get(block=False)")),
        Valid(_loop("q = queue.Queue()", "a = q.get(False)")),
        Valid(_loop("f = Future()", "r = f.result(timeout=5)")),
        # A name that merely says barrier is neither collective nor blocking.
        Valid(
            _loop("self.round_barrier()", before="")
            + "\n    def round_barrier(self):\n        self.n = 1\n"
        ),
        # Joining a thread known to be dead returns at once.
        Valid(
            _loop(
                "t = threading.Thread(target=print)",
                "if not t.is_alive():",
                "    t.join()",
            )
        ),
        # A thread target is a callback: it runs elsewhere, not in the round.
        Valid(
            _loop("threading.Thread(target=self.worker).start()")
            + "\n    def worker(self):\n        time.sleep(1)\n"
        ),
        # Waived in config.
        Valid(_loop("gc.collect()"), non_blocking=["gc.collect"]),
        # An unresolved call into code without source is not a finding.
        Valid(_loop("self.runner.forward()")),
    ]

    INVALID: ClassVar[list[Example]] = [
        Invalid(_loop("free = torch.cuda.mem_get_info()  # expect")),
        Invalid(
            _loop("s = torch.cuda.memory_stats()  # expect", "torch.cuda.empty_cache()  # expect")
        ),
        Invalid(_loop("torch.cuda.synchronize()  # expect")),
        Invalid(_loop("t = torch.ones(1, device='cuda')", "v = t.item()  # expect")),
        # The copy to the host is the sync; `.item()` on its result is not another one.
        Invalid(_loop("c = torch.zeros(2, device='cuda').cpu()  # expect", "n = c.item()")),
        Invalid(_loop("ev = torch.cuda.Event()", "ev.synchronize()  # expect")),
        Invalid(_loop("w = dist.isend(torch.ones(1), dst=1)", "w.wait()  # expect")),
        Invalid(_loop("m = zmq.Context().socket(zmq.PULL).recv()  # expect")),
        Invalid(_loop("q = queue.Queue()", "item = q.get()  # expect")),
        Invalid(_loop("time.sleep(0.1)  # expect")),
        Invalid(_loop("with open('/tmp/x') as f:  # expect", "    data = f.read()")),
        Invalid(_loop("subprocess.run(['true'])  # expect")),
        Invalid(_loop("lock = threading.Lock()", "lock.acquire()  # expect")),
        Invalid(_loop("f = Future()", "r = f.result()  # expect")),
        Invalid(_loop("t = threading.Thread(target=print)", "t.join()  # expect")),
        Invalid(_loop("gc.collect()  # expect")),
        # Through calls, branches and early returns; one finding per blocking call.
        Invalid(
            _loop("self.step()", before="")
            + "\n    def step(self):\n        if self.idle:\n            return\n"
            "        time.sleep(1)  # expect\n"
        ),
        # The round wraps around: work after its last collective delays the next round's first.
        Invalid(_loop("dist.barrier()", "time.sleep(1)  # expect", after="")),
        # Cadenced (time guard) calls are still reported.
        Invalid(
            _loop("now = time.monotonic()", "if now - self._t >= 30:", "    gc.collect()  # expect")
        ),
        # Users extend the catalog.
        Invalid(
            _loop(
                "Pool().drain()  # expect",
                before="class Pool:\n    def drain(self):\n        pass\n",
            ),
            blocking=[
                {"name": "*.Pool.drain", "kind": "pool-drain", "reason": "waits for the pool"}
            ],
        ),
    ]

    def check(self, context: RuleContext) -> Iterable[Finding]:
        analysis = context.blocking
        # The round is a loop: work after iteration i's last collective runs before
        # iteration i+1's first one, so the tail is reported unless a caller turns it off.
        include_tail = bool(context.options.get("include_round_tail", True))
        rounds = list(context.rounds)
        by_path = {m.path: m.summary for m in context.program.modules.values()}
        names = alias_table([type(self)])

        def silenced(finding: Finding) -> bool:
            return suppression(by_path, finding, names) is not None

        for number, rnd in enumerate(rounds, 1):
            progress.current().advance(0, note=f"{self.name}: round {number}/{len(rounds)}")
            regions = analysis.regions(rnd, include_tail)
            grouped: dict[Key, list[Pair]] = {}
            for pair in regions.pairs:
                grouped.setdefault(pair.blocking.key, []).append(pair)
            yield from _findings(self.name, rnd.function.qualname, grouped, regions.every, silenced)
        analysis.forget_summaries()  # every round is walked; the next rules need only facts


def _findings(
    rule: str,
    round_name: str,
    grouped: dict[Key, list[Pair]],
    every: frozenset[CollectiveSite],
    silenced: Callable[[Finding], bool],
) -> Iterator[Finding]:
    """One finding per blocking call site, but a sync that one earlier sync drained on every
    path found (`BlockingCall.drained_by`) is that one's follower: one wait, listed once. A
    follower of a finding a suppression silences is a finding of its own (the suppressed one
    may read the host, and then the follower is the wait)."""
    shown = {key: _headline(pairs, every).blocking for key, pairs in grouped.items()}
    heads = {shown[key].place: pairs for key, pairs in grouped.items()}

    def _alone(place: str) -> Finding:
        return _finding(rule, round_name, heads[place], every, [])

    found = {key: _drained_into(pairs, heads) for key, pairs in grouped.items()}
    named = {host for host in found.values() if host is not None}
    hushed = {host for host in named if silenced(_alone(host))}
    hosts = {key: None if host in hushed else host for key, host in found.items()}
    followers: dict[str, list[BlockingCall]] = {}
    for key, host in hosts.items():
        if host is not None:
            followers.setdefault(host, []).append(shown[key])
    for key, pairs in grouped.items():
        if hosts[key] is None:
            yield _finding(rule, round_name, pairs, every, followers.get(shown[key].place, []))


def _drained_into(pairs: list[Pair], heads: dict[str, list[Pair]]) -> str | None:
    """The place of the reported sync that drained the queue for this one on every path
    found, the same one on each (through syncs drained in turn), if there is one; none where
    the chain of them comes back round to a sync already on it."""
    host: str | None = None
    seen = {pairs[0].blocking.place}
    while True:
        earlier = {p.blocking.drained_by for p in pairs}
        if len(earlier) != 1 or "" in earlier:
            return host
        (place,) = earlier
        if place in seen:
            return None  # syncs draining one another round a cycle: none is folded
        if place not in heads:
            return host
        seen.add(place)
        host, pairs = place, heads[place]


def _headline(pairs: list[Pair], every: frozenset[CollectiveSite]) -> Pair:
    """The first pair on a path that needs no round fact to change (`analysis.doubts`); among
    those, one whose collective every iteration of the round runs (it surely follows the call,
    where another may sit behind a condition the model cannot judge); then the first whose
    collective a chain without guessed edges reaches."""

    def order(pair: Pair) -> tuple[bool, ...]:
        weak = any(hop.weak for hop in pair.chain)
        return (*pair.blocking.rank, pair.site not in every, weak)

    return min(pairs, key=order)


def _finding(
    rule: str,
    round_name: str,
    pairs: list[Pair],
    every: frozenset[CollectiveSite],
    followers: list[BlockingCall],
) -> Finding:
    first = _headline(pairs, every)
    followers = sorted(followers, key=lambda c: (c.path, c.line, c.col, c.text))
    call = first.blocking
    site = first.site
    cadence = f" (cadenced: {call.cadenced})" if call.cadenced else ""
    unsure = f" [confidence {call.confidence}: {call.note}]" if call.confidence != "high" else ""
    more = f" and {len(pairs) - 1} other collective(s)" if len(pairs) > 1 else ""
    where = "the next round's first collective " if first.tail else ""
    sure = " (it runs every round)" if site in every else ""
    then = (
        f"; then {', '.join(c.place for c in followers)} with nothing launched between, "
        "waiting in its place where this call's tensor is on the host"
        if followers
        else ""
    )
    message = (
        f"`{call.text}` ({call.kind}: {call.reason}) may stall this rank before {where}"
        f"`{site.callee}` at {site.path}:{site.line}{sure}{more}, where every peer waits"
        f"{cadence}{unsure}{then}"
    )
    extra: dict[str, Any] = {
        "round": round_name,
        "collective": _collective(first, every),
        "collectives": [_collective(p, every) for p in pairs],
        "blocking": call.to_json(),
        "chain": chain_json(call.chain),
        "cadenced": call.cadenced is not None,
        "cadence": call.cadenced,
        "confidence": call.confidence,
        "confidence_note": call.note,
        "round_tail": first.tail,
        "followers": [{**c.to_json(), "chain": chain_json(c.chain)} for c in followers],
    }
    key = fingerprint(rule, round_name, call.callee, call.kind, chain_key(call.chain))
    return Finding(call.path, call.line, rule, message, key, extra)


def _collective(pair: Pair, every: frozenset[CollectiveSite]) -> dict[str, Any]:
    site = pair.site
    every_round = site in every
    return {
        **site.to_json(),
        "kind": site.kind,
        "chain": chain_json(pair.chain),
        "every_round": every_round,
    }
