"""Rule `unwatched-collective`: a wait a round reaches outside the project's watchdog stamp.

One finding per call site in the round whose chain reaches a collective, a blocking receive or a
`Work.wait()` that no `watchdog-hooks` stamp covers. `rankguard fix stamp-watchdog` adds the stamp.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from rankguard.analysis.watchdog import Unwatched
from rankguard.core.chains import chain_key
from rankguard.core.findings import Finding, fingerprint
from rankguard.rules.base import Example, Invalid, Rule, RuleContext, Valid

_HOOK = """\
import contextlib
import torch.distributed as dist
import zmq

class S:
    @contextlib.contextmanager
    def on_blocked_recv(self, name):
        yield

    def sync(self):
        dist.all_reduce(self.t)

"""
_HOOKS = {"watchdog_hooks": ["on_blocked_recv"]}


def _loop(*body: str, extra: str = "") -> str:
    lines = "".join(f"            {line}\n" for line in body)
    return f"{_HOOK}{extra}    def event_loop(self):\n        while True:\n{lines}"


class UnwatchedCollective(Rule):
    name = "unwatched-collective"
    code = "RG103"
    description = "A collective or blocking receive reached in a round outside the watchdog stamp."
    help = (
        "With config `watchdog-hooks`, every wait a round reaches (collective, blocking receive, "
        "Work.wait()) should run inside the hook's stamp, e.g. "
        '`with self.on_blocked_recv("site"):`, '
        "so that the watchdog can name the wait when the group hangs. Run `rankguard fix "
        "stamp-watchdog --diff` to see the stamps it would add, `--write` to add them."
    )

    what = (
        "With `watchdog-hooks` configured, finds each collective, blocking receive or "
        "`Work.wait()` a round reaches outside the hook's stamp, in the innermost frame of the "
        "chain where the hook is in scope."
    )
    why = (
        "When the group hangs, the watchdog can name only the waits its stamp covers; a wait "
        "outside the stamp leaves the hang anonymous, and the team is back to reading stack "
        "dumps of every rank."
    )
    instead = (
        "class S:\n    def event_loop(self):\n        while True:\n"
        '            with self.on_blocked_recv("event_loop broadcast"):\n'
        "                dist.broadcast(t, src=0)\n"
    )
    options = ("watchdog-hooks", "rounds", "collectives")
    fix = (
        "`rankguard fix stamp-watchdog --diff` shows the stamps to add; `--write` adds them "
        "around the smallest statement that reaches the wait."
    )

    VALID: ClassVar[list[Example]] = [
        # Stamped in the round.
        Valid(_loop('with self.on_blocked_recv("sync"):', "    self.sync()"), **_HOOKS),
        # Stamped deeper on the chain (inside the wrapper).
        Valid(
            _loop(
                "self.guarded()",
                extra=(
                    "    def guarded(self):\n"
                    '        with self.on_blocked_recv("sync"):\n'
                    "            self.sync()\n\n"
                ),
            ),
            **_HOOKS,
        ),
        # A decorated wrapper counts as stamped.
        Valid(
            _loop(
                "self.wrapped()",
                extra=("    @on_blocked_recv\n    def wrapped(self):\n        dist.barrier()\n\n"),
            ),
            **_HOOKS,
        ),
        # NOBLOCK receive and non-blocking sends are not waits.
        Valid(
            _loop(
                "self.sock.recv(zmq.NOBLOCK)",
                "dist.isend(self.t, dst=1)",
                extra="    def __init__(self, sock: zmq.Socket):\n        self.sock = sock\n\n",
            ),
            **_HOOKS,
        ),
        # No hooks configured: the rule is off.
        Valid(_loop("self.sync()")),
    ]
    INVALID: ClassVar[list[Example]] = [
        # A collective called bare in the round.
        Invalid(_loop("dist.barrier()  # expect"), **_HOOKS),
        # A wrapper whose `self` has the hook: the stamp goes around the wait inside it.
        Invalid(
            _loop(
                "self.reduce()", extra="    def reduce(self):\n        dist.barrier()  # expect\n\n"
            ),
            **_HOOKS,
        ),
        # A point-to-point receive and a blocking socket receive.
        Invalid(
            _loop(
                "dist.recv(self.t, src=0)  # expect",
                "self.sock.recv()  # expect",
                extra="    def __init__(self, sock: zmq.Socket):\n        self.sock = sock\n\n",
            ),
            **_HOOKS,
        ),
        # Only one of two waits under a wrapper is stamped: the call is still reported.
        # ... and the stamp belongs beside the bare wait, in `half`, where `self` has the hook.
        Invalid(
            _loop(
                "self.half()",
                extra=(
                    "    def half(self):\n"
                    '        with self.on_blocked_recv("a"):\n'
                    "            dist.barrier()\n"
                    "        dist.barrier()  # expect\n\n"
                ),
            ),
            **_HOOKS,
        ),
    ]

    def check(self, context: RuleContext) -> Iterable[Finding]:
        for item in context.unwatched:
            yield _finding(self.name, item, context.config.watchdog_hooks[0])


def _finding(rule: str, item: Unwatched, hook: str) -> Finding:
    first = item.waits[0]
    more = f" and {len(item.waits) - 1} other wait(s)" if len(item.waits) > 1 else ""
    message = (
        f"`{item.call.text}()` reaches {first.wait.kind} `{first.wait.callee}` at "
        f"{first.wait.path}:{first.wait.line}{more} outside any `{hook}` stamp: the watchdog "
        "cannot name this wait"
    )
    if item.blocked_by is not None:
        message += (
            f"; `{item.blocked_by}` already holds a stamped wait, so a stamp around this call "
            f"would be reset when that one exits: stamp the wait inside `{item.blocked_by}` "
            f"(give it the hook)"
        )
    else:
        message += f' (fix: `with ...{hook}("{item.site_name}"):`)'
        if item.only_round:
            message += "; only the round loop can hold it: no frame below has the hook in scope"
    extra = item.to_json()
    extra["chain"] = [hop.to_json() for hop in first.chain]
    key = fingerprint(rule, item.round.qualname, item.callee, chain_key(first.chain))
    return Finding(item.function.path, item.call.line, rule, message, key, extra)
