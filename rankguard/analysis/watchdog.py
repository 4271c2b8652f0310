"""Waits a round reaches outside the project's watchdog stamp (DESIGN §1, §2.4).

A project wraps each blocking wait in a stamp (`with self.on_blocked_recv("site"):`, config
`watchdog-hooks`) so that its watchdog thread can name the wait when a rank hangs. Followers that
wait in a broadcast whose root is busy elsewhere are only named if the broadcast is stamped too.
A wait is covered when some call on its chain from the round is lexically inside a hook's `with`
block, or some function on the chain is decorated with the hook.

Waits are: collectives (primitive, through any wrapper), blocking point-to-point receives, and the
blocking catalog's `blocking-recv` and `work-wait` calls (socket receives without NOBLOCK,
`Work.wait()`); queue gets and future waits are not receives.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rankguard.analysis.blocking import BlockingAnalysis
from rankguard.analysis.reach import FOLLOWED, followed, loop_calls
from rankguard.analysis.rounds import Round
from rankguard.core.chains import Hop, chain_json
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord
from rankguard.summary.ir import CallSite, Stmt, segs_text, walk_calls, walk_statements

# Point-to-point calls that wait for their peer (isend/irecv return a Work; its wait() counts).
BLOCKING_P2P = frozenset({"recv", "recv_object_list"})
WAIT_KINDS = frozenset({"blocking-recv", "work-wait"})


@dataclass(frozen=True, order=True)
class Wait:
    """A primitive wait: a collective, a blocking receive or a completion wait."""

    path: str
    line: int
    callee: str
    kind: str  # collective | p2p-recv | blocking-recv | work-wait
    function: str

    def to_json(self) -> dict[str, Any]:
        return {"callee": self.callee, "path": self.path, "line": self.line, "kind": self.kind}


@dataclass
class Reached:
    wait: Wait
    chain: tuple[Hop, ...]  # from the function asked about down to the wait
    covered: bool  # some hop of the chain is stamped


@dataclass
class Unwatched:
    """Waits a round reaches that no stamp covers, grouped by where the stamp should go: the call
    at `line` in `function`, the innermost frame of the chain where the hook is in scope."""

    round: FunctionRecord
    function: FunctionRecord
    call: CallSite
    callee: str  # what that call calls (a wrapper, or the primitive itself)
    waits: list[Reached]
    only_round: bool = False  # no frame below the round loop has the hook in scope
    blocked_by: str | None = None  # the callee already holds a stamped wait: no stamp fits here

    @property
    def site_name(self) -> str:
        """The stamp's site name: the called function's name, as existing stamps are named."""
        return self.callee.rsplit(".", 1)[-1].lstrip("_") or "wait"

    def to_json(self) -> dict[str, Any]:
        return {
            "round": self.round.qualname,
            "function": self.function.qualname,
            "collective": {
                "callee": self.callee,
                "path": self.function.path,
                "line": self.call.line,
            },
            "waits": [{**r.wait.to_json(), "chain": chain_json(r.chain)} for r in self.waits],
            "stamp": self.site_name,
            "fixable": self.blocked_by is None,
        }


def is_hook(segs_or_name: str, hooks: Sequence[str]) -> bool:
    last = segs_or_name.rsplit(".", 1)[-1]
    return any(fnmatch.fnmatchcase(last, h) or fnmatch.fnmatchcase(segs_or_name, h) for h in hooks)


def stamped_calls(body: tuple[Stmt, ...], hooks: Sequence[str]) -> set[int]:
    """ids of the calls lexically inside a hook's `with` block."""
    out: set[int] = set()

    def visit(stmts: tuple[Stmt, ...], inside: bool) -> None:
        for stmt in stmts:
            if inside:
                out.update(id(c) for c in stmt.calls)
            opens = stmt.kind == "with" and any(is_hook(c.text, hooks) for c in stmt.calls)
            for block in stmt.blocks:
                visit(block, inside or opens)

    visit(body, False)
    return out


class WatchdogAnalysis:
    def __init__(self, program: Program, blocking: BlockingAnalysis, hooks: Sequence[str]) -> None:
        self.program = program
        self.blocking = blocking
        self.collectives = blocking.collectives
        self.hooks = tuple(hooks)
        self._stamped: dict[str, set[int]] = {}
        self._memo: dict[str, list[Reached]] = {}
        self._active: set[str] = set()
        self._in_scope: dict[str, bool] = {}

    def stamped(self, record: FunctionRecord) -> set[int]:
        found = self._stamped.get(record.qualname)
        if found is None:
            found = stamped_calls(record.info.body, self.hooks)
            self._stamped[record.qualname] = found
        return found

    def decorated(self, record: FunctionRecord) -> bool:
        return any(dec and is_hook(segs_text(dec), self.hooks) for dec in record.info.decorators)

    def own_wait(
        self, record: FunctionRecord, call: CallSite, stmt_calls: Sequence[CallSite]
    ) -> Wait | None:
        targets = followed(self.program, record.qualname, call)
        for target in targets:
            kind = self.collectives.kind(target.name)
            if kind == "collective":
                return Wait(record.path, call.line, target.name, "collective", record.qualname)
            if kind == "p2p" and target.name.rsplit(".", 1)[-1] in BLOCKING_P2P:
                return Wait(record.path, call.line, target.name, "p2p-recv", record.qualname)
        found = self.blocking.classify.blocking_call(
            record, call, stmt_calls, targets, {}, (), None
        )
        if found is not None and found.kind in WAIT_KINDS:
            return Wait(record.path, call.line, found.callee, found.kind, record.qualname)
        return None

    def of_call(
        self, record: FunctionRecord, call: CallSite, stmt_calls: Sequence[CallSite]
    ) -> list[Reached]:
        if call.deferred:
            return []
        hop = Hop(record.qualname, record.path, call.line)
        here = id(call) in self.stamped(record)
        own = self.own_wait(record, call, stmt_calls)
        if own is not None:
            return [Reached(own, (hop,), here)]
        out: list[Reached] = []
        for target in followed(self.program, record.qualname, call):
            if target.kind not in FOLLOWED or target.name not in self.program.functions:
                continue
            for below in self.under(target.name):
                out.append(Reached(below.wait, (hop, *below.chain), here or below.covered))
        return out

    def under(self, name: str) -> list[Reached]:
        """Every wait below `name`, once per (wait, covered), in execution order."""
        cached = self._memo.get(name)
        if cached is not None:
            return cached
        if name in self._active:
            return []
        self._active.add(name)
        record = self.program.functions[name]
        decorated = self.decorated(record)
        out: list[Reached] = []
        seen: set[tuple[Wait, bool]] = set()
        for stmt in walk_statements(record.info.body):
            for call in stmt.calls:
                for reached in self.of_call(record, call, stmt.calls):
                    reached = Reached(reached.wait, reached.chain, reached.covered or decorated)
                    key = (reached.wait, reached.covered)
                    if key not in seen:
                        seen.add(key)
                        out.append(reached)
        self._active.discard(name)
        self._memo[name] = out
        return out

    def hook_in_scope(self, name: str) -> bool:
        """A method whose `self` has the hook: some class of its family defines it."""
        found = self._in_scope.get(name)
        if found is None:
            record = self.program.functions.get(name)
            found = False
            if record is not None and record.info.cls:
                cls = f"{record.module}.{record.info.cls}"
                family = set(self.program.mro(cls))
                for derived in self.program.subclasses.get(cls, ()):
                    family.update(self.program.mro(derived))
                found = any(
                    is_hook(method, self.hooks)
                    for owner in family
                    if owner in self.program.classes
                    for method in self.program.classes[owner].methods
                )
            self._in_scope[name] = found
        return found

    def holds_stamped_wait(self, name: str) -> bool:
        return name in self.program.functions and any(r.covered for r in self.under(name))

    def unwatched(self, rnd: Round) -> list[Unwatched]:
        """One entry per stamp site: the call, in the innermost frame of each uncovered wait's
        chain where the hook is in scope (else the round's own call), that reaches the wait."""
        record = rnd.function
        if self.decorated(record):
            return []
        by_call: dict[int, list[CallSite]] = {}
        for stmt in walk_statements(rnd.loop.blocks[0] if rnd.loop.blocks else ()):
            for call in stmt.calls:
                by_call[id(call)] = list(stmt.calls)
        sites: dict[tuple[str, int, int], Unwatched] = {}
        for call in loop_calls(rnd.loop):
            for reached in self.of_call(record, call, by_call.get(id(call), [call])):
                if reached.covered:
                    continue
                chain = reached.chain
                depth = max(
                    (i for i, hop in enumerate(chain) if i and self.hook_in_scope(hop.function)),
                    default=0,
                )
                here = self.program.functions[chain[depth].function]
                below = chain[depth + 1].function if depth + 1 < len(chain) else None
                site = call if depth == 0 else self.call_at(here, chain[depth].line, below)
                key = (here.qualname, site.line, site.col)
                item = sites.get(key)
                if item is None:
                    callee = below or reached.wait.callee
                    if depth == 0:
                        callee = _callee(self, record, call)
                    blocked = below if below and self.holds_stamped_wait(below) else None
                    item = sites[key] = Unwatched(
                        record, here, site, callee, [], depth == 0, blocked
                    )
                item.waits.append(reached)
        return list(sites.values())

    def call_at(self, record: FunctionRecord, line: int, callee: str | None) -> CallSite:
        """The call on `line` of `record` that leads to `callee` (the first one on the line)."""
        calls = [c for c in walk_calls(record.info.body) if c.line == line]
        for call in calls:
            if callee is None or any(
                t.name == callee for t in followed(self.program, record.qualname, call)
            ):
                return call
        return calls[0]


def _callee(analysis: WatchdogAnalysis, record: FunctionRecord, call: CallSite) -> str:
    targets = [
        t.name
        for t in followed(analysis.program, record.qualname, call)
        if t.name in analysis.program.functions or analysis.collectives.kind(t.name)
    ]
    return targets[0] if targets else segs_text(call.target)


def find_unwatched(
    program: Program, rounds: Sequence[Round], blocking: BlockingAnalysis, hooks: Sequence[str]
) -> list[Unwatched]:
    if not hooks:
        return []
    analysis = WatchdogAnalysis(program, blocking, hooks)
    out: list[Unwatched] = []
    for rnd in rounds:
        out.extend(analysis.unwatched(rnd))
    out.sort(key=lambda u: (u.function.path, u.call.line, u.call.col, u.round.qualname))
    return out


__all__ = ["Unwatched", "Wait", "WatchdogAnalysis", "find_unwatched", "stamped_calls", "walk_calls"]
