"""Rule `rank-divergent-collective`: a collective entered only under a rank-local condition.

Ranks must never disagree on which collectives they enter. One finding per call that enters a
collective (directly or through a wrapper) under a condition computed from rank-local data, at
the call's line, naming the condition and the nearest rank-local source with its chain.

The fingerprint names the site, not the evidence: the function, the call (its text and its
place among identical calls there), what it enters, and the guard (kind and text). The varying
sources are evidence, listed in the finding (the nearest in the message); which one is nearest
changes as the model learns, and that must not make a baselined site look new. Fingerprints of
this rule before `fingerprint_version` 2 included the nearest source (`reports.baseline` warns
about baselines written then).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from rankguard.analysis.uniformity import DivergentCall, find_divergent_calls
from rankguard.core.findings import Finding, fingerprint
from rankguard.rules.base import Example, Invalid, Rule, RuleContext, Valid
from rankguard.summary.ir import CallSite, Stmt, walk_calls

_HEAD = """\
import os, random, time
import torch
import torch.distributed as dist

"""


def _round(*body: str, extra: str = "", head: str = "") -> str:
    """Class `S` whose `event_loop` round runs `body` (one line each)."""
    lines = "".join(f"            {line}\n" for line in body)
    return f"{_HEAD}{head}class S:\n{extra}    def event_loop(self):\n        while True:\n{lines}"


_INIT = (
    "    def __init__(self, server_args, tp_rank, sock):\n"
    "        self.server_args = server_args\n"
    "        self.tp_rank = tp_rank\n"
    "        self.tp_world_size = dist.get_world_size()\n"
    "        self.sock = sock\n"
    "        self.waiting_queue = []\n\n"
    "    def add(self):\n"
    "        self.waiting_queue.append(self.sock.recv_pyobj())\n\n"
)


class RankDivergentCollective(Rule):
    name = "rank-divergent-collective"
    code = "RG102"
    fingerprint_version = 2
    fingerprint_change = "keyed by the call site, no longer by the varying source it names"
    description = "A collective whose reachability in a round depends on rank-local data."
    help = (
        "Every rank of a group must enter the same collectives in the same order. A condition "
        "whose value varies over the collective's group (this group's rank id, a driver or "
        "allocator reading, a queue fed from outside the group, time, randomness, the host) lets "
        "one rank skip or add a collective its peers wait in. Agree on the value first "
        "(all_reduce MIN/MAX, broadcast from one rank) and branch on "
        "the agreed value, or make every branch enter the same collectives. Suppress a reviewed "
        "site with `# rankguard: ignore[rank-divergent-collective] reason` on the call line."
    )

    what = (
        "Finds collectives a round reaches only under a condition whose value can differ "
        "between the ranks of that collective's group: rank ids, driver or allocator readings, "
        "local queues, clocks, randomness, per-host environment. Values that come from a "
        "collective over the group, from config or from uniform state are uniform; a branch "
        "pair that enters the same collectives on every side is exempt, as are point-to-point "
        "calls."
    )
    why = (
        "Every rank of a group must enter the same collectives in the same order. When ranks "
        "disagree on a rank-local condition, one rank skips a collective its peers wait in: "
        "the group hangs, or crashes one rank short."
    )
    instead = (
        "class S:\n    def event_loop(self):\n        while True:\n"
        "            free = torch.tensor([torch.cuda.mem_get_info()[0]])\n"
        "            dist.all_reduce(free, op=dist.ReduceOp.MIN)  # agree first\n"
        "            if free.item() > LIMIT:  # the agreed value: uniform over the group\n"
        "                dist.barrier()\n"
    )
    options = ("rounds", "collectives", "driver-terms")
    fix = ""

    VALID: ClassVar[list[Example]] = [
        # Config the same on every rank: group size, server args, constants.
        Valid(_round("if self.tp_world_size > 1:", "    dist.barrier()", extra=_INIT)),
        Valid(
            _round("if self.server_args.enable_dp_attention:", "    dist.barrier()", extra=_INIT)
        ),
        Valid(_round("if 4 > 1:", "    dist.barrier()")),
        # Every branch enters the same collective sequence.
        Valid(
            _round(
                "if self.tp_rank == 0:",
                "    dist.broadcast(self.t, src=0)",
                "else:",
                "    dist.broadcast(self.u, src=0)",
                extra=_INIT,
            )
        ),
        # Point-to-point is rank-conditional by nature.
        Valid(_round("if self.tp_rank == 0:", "    dist.send(self.t, dst=1)", extra=_INIT)),
        # A value reduced across the group before the condition reads it.
        Valid(
            _round(
                "n = torch.tensor([len(self.waiting_queue)])",
                "dist.all_reduce(n, op=dist.ReduceOp.MIN)",
                "if int(n[0]) > 0:",
                "    dist.barrier()",
                extra=_INIT,
            )
        ),
        # ... or agreed inside a helper that returns the agreed value.
        Valid(
            _round(
                "if self.agreed_free() > 0:",
                "    dist.barrier()",
                extra=(
                    "    def agreed_free(self):\n"
                    "        free = torch.tensor([torch.cuda.mem_get_info()[0]])\n"
                    "        dist.all_reduce(free, op=dist.ReduceOp.MIN)\n"
                    "        return int(free[0])\n\n"
                ),
            )
        ),
        # Rank-local condition, but no collective under it.
        Valid(
            _round(
                "if not self.waiting_queue:", "    time.sleep(0.01)", "dist.barrier()", extra=_INIT
            )
        ),
        # The launcher's environment is the same on every rank.
        Valid(
            _round("if DEBUG:", "    dist.barrier()", head='DEBUG = os.environ.get("DEBUG")\n\n')
        ),
        # The rank of another group dimension is constant inside this collective's group.
        Valid(
            _round(
                "if self.pp_rank == 0:",
                "    dist.barrier(group=self.tp_group)",
                extra=(
                    "    def __init__(self, pp_rank, tp_group):\n"
                    "        self.pp_rank = pp_rank\n"
                    "        self.tp_group = tp_group\n\n"
                ),
            )
        ),
        # Early return on the group size (identical on every rank).
        Valid(
            _round(
                "self.reduce()",
                extra=(
                    "    def reduce(self):\n"
                    "        if dist.get_world_size() == 1:\n"
                    "            return\n"
                    "        dist.all_reduce(self.t)\n\n"
                ),
            )
        ),
    ]
    INVALID: ClassVar[list[Example]] = [
        # Rank id: an attribute, get_rank(), dist.get_rank().
        Invalid(_round("if self.tp_rank == 0:", "    dist.barrier()  # expect", extra=_INIT)),
        Invalid(
            _round(
                "if get_rank() == 0:",
                "    dist.barrier()  # expect",
                head="from torch.distributed import get_rank\n\n",
            )
        ),
        Invalid(
            _round(
                "rank = dist.get_rank()", "if rank > 0:", "    dist.all_reduce(self.t)  # expect"
            )
        ),
        # Driver reading, through a helper's return.
        Invalid(
            _round(
                "if self.free() > (1 << 30):",
                "    dist.barrier()  # expect",
                extra="    def free(self):\n        return torch.cuda.mem_get_info()[0]\n\n",
            )
        ),
        # A configured project pool size (`driver-terms`), through an attribute.
        Invalid(
            _round(
                "self.room = self.pool.available_size()",
                "if self.room > 0:",
                "    dist.barrier()  # expect",
                extra="    def __init__(self):\n        self.pool = Pool()\n\n",
                head="class Pool:\n    def available_size(self):\n        return 1\n\n",
            ),
            driver_terms=["*.Pool.available_size"],
        ),
        # A local queue: its length, and `if not self.queue: return` guarding what follows.
        Invalid(
            _round("if len(self.waiting_queue) > 8:", "    dist.barrier()  # expect", extra=_INIT)
        ),
        Invalid(
            _round(
                "self.step()",
                extra=_INIT
                + (
                    "    def step(self):\n"
                    "        if not self.waiting_queue:\n"
                    "            return\n"
                    "        dist.all_reduce(self.t)  # expect\n\n"
                ),
            )
        ),
        # Wall-clock time and randomness.
        Invalid(
            _round(
                "if time.monotonic() - self.last > 30:",
                "    dist.all_gather_object(self.out, self.stats)  # expect",
            )
        ),
        Invalid(_round("if random.random() < 0.01:", "    dist.barrier()  # expect")),
        # A variable the launcher sets per rank, through a module global.
        Invalid(
            _round(
                "if LOCAL_RANK == 0:",
                "    dist.barrier()  # expect",
                head='LOCAL_RANK = int(os.environ.get("LOCAL_RANK", "0"))\n\n',
            )
        ),
        # Through an argument: the callee branches on its parameter.
        Invalid(
            _round(
                "self.maybe_sync(self.tp_rank)",
                extra=(
                    "    def maybe_sync(self, who):\n"
                    "        if who == 0:\n"
                    "            dist.barrier()  # expect\n\n"
                ),
            )
        ),
        # A loop whose trip count is a local queue's.
        Invalid(
            _round(
                "for req in self.waiting_queue:",
                "    dist.all_reduce(self.t)  # expect",
                extra=_INIT,
            )
        ),
        # A `break` on a rank-local condition guards the rest of the loop body.
        Invalid(
            _round(
                "if time.time() > self.deadline:",
                "    break",
                "dist.barrier()  # expect",
            )
        ),
    ]

    def check(self, context: RuleContext) -> Iterable[Finding]:
        rounds = [r.function.qualname for r in context.rounds]
        config = context.config
        calls = find_divergent_calls(
            context.program,
            rounds,
            context.reach,
            config.driver_terms,
            context.blocking,
            context.kept,
            config.digest(),
        )
        for call in calls:
            yield _finding(self.name, call)


def _finding(rule: str, item: DivergentCall) -> Finding:
    source = item.sources[0][0]
    guard = item.guard
    what = {"branch": "under", "loop": "in a loop over", "exit": "after an early exit on"}[
        guard.kind
    ]
    primitive = item.primitives[0].callee if item.primitives else item.callee
    named = ", ".join(f"`{g}`" for g in item.groups)
    group = f"group{'s' * (len(item.groups) > 1)} {named}" if named else "a group we cannot name"
    message = (
        f"`{item.call.text}()` enters `{primitive}` over {group} {what} `{guard.stmt.text}` "
        f"(line {guard.stmt.line}), which varies with {item.why}: `{source.text}` "
        f"({source.path}:{source.line}); ranks of that group can disagree on entering it"
    )
    extra: dict[str, Any] = item.to_json()
    extra["chain"] = [hop.to_json() for hop in item.reached_by] + [
        {"function": item.function.qualname, "path": item.function.path, "line": item.call.line}
    ]
    text = call_text(item.call)
    key = fingerprint(
        rule,
        item.function.qualname,
        text,
        str(ordinal(item.function.info.body, item.call, text)),
        item.callee,
        guard.kind,
        guard.stmt.text,
    )
    return Finding(item.function.path, item.call.line, rule, message, key, extra)


def call_text(call: CallSite) -> str:
    """A call as written, without its position: `dist.all_reduce(t, op=MIN)` (arguments as the
    summary keeps them, shortened)."""
    args = [*call.args, *(f"{k}={v}" if k != "**" else f"**{v}" for k, v in call.kwargs)]
    return f"{call.text}({', '.join(args)})"


def ordinal(body: tuple[Stmt, ...], call: CallSite, text: str) -> int:
    """How many calls written `text` come before `call` in the function: two identical calls
    under one guard stay two sites, and neither's identity depends on the other being a
    finding (the model may stop reporting one) or on the lines above them."""
    here = (call.line, call.col)
    return sum(1 for c in walk_calls(body) if (c.line, c.col) < here and call_text(c) == text)
