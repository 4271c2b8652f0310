"""Guards: which conditions decide whether a collective call runs, and whether that matters.

In a function a round reaches, each call that enters a collective is checked against the
conditions that decide whether it runs: enclosing `if`/`while`/`for`/`match` headers, and
earlier `if`s whose branch returns, breaks or continues (an early exit guards what follows).
A guard is a hazard for a call when its value varies over *that call's group* and its sides do
not reach the same sequence of collectives. Sides are compared as they continue to the end of
the function (so a branch that negotiates and a tail that finalises compare equal), with
at-most-once functions counted once per path. Point-to-point calls never count.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rankguard.analysis.uniformity.collectives import Groups
from rankguard.analysis.uniformity.flow import UniformityFlow
from rankguard.model.records import FunctionRecord
from rankguard.summary.conditions import Cond
from rankguard.summary.ir import CallSite, Stmt

_MAX_PATHS = 32
# Each run: (tokens of the collectives entered, how it ended: "" falls through, "return",
# "loop" = break or continue). None: too many runs to compare.
Paths = frozenset[tuple[tuple[str, ...], str]] | None
Tail = tuple[tuple[Stmt, ...], ...]


@dataclass
class Guard:
    stmt: Stmt  # the if / loop / match that decides
    kind: str  # branch | loop | exit
    symmetric: bool  # every side reaches the same sequences of collectives


class GuardWalker:
    """Finds the varying, asymmetric guards over each collective call of one function."""

    def __init__(self, flow: UniformityFlow, record: FunctionRecord, outer: Tail = ()) -> None:
        self.flow = flow
        self.record = record
        # What the callers run after this function returns (along the chain from the round):
        # consulted only when at-most-once collectives are in play (a caller's finalize).
        self.outer = outer
        self.found: list[tuple[CallSite, Groups, list[Guard]]] = []
        self._paths: dict[int, Paths] = {}
        self._solo = 0  # inside a branch only one rank of the group takes

    def run(self) -> list[tuple[CallSite, Groups, list[Guard]]]:
        """(call, its groups, the hazardous guards over it, outermost first)."""
        self.walk(self.record.info.body, [], (), ())
        return self.found

    def varies(self, stmt: Stmt) -> bool:
        return bool(self.flow.condition_sources(self.record.qualname, stmt))

    def walk(
        self, stmts: tuple[Stmt, ...], guards: list[Guard], tail_fn: Tail, tail_loop: Tail
    ) -> list[tuple[Guard, str]]:
        """Walk a block; return the exit guards that stay active after it (and their scope)."""
        active = list(guards)
        escaping: list[tuple[Guard, str]] = []
        for index, stmt in enumerate(stmts):
            rest = stmts[index + 1 :]
            self.calls(stmt, active)
            inner_fn: Tail = (rest, *tail_fn)
            inner_loop: Tail = (rest, *tail_loop)
            new: list[tuple[Guard, str]] = []
            if stmt.kind in ("if", "match"):
                new.extend(self.branch(stmt, active, inner_fn, inner_loop))
            elif stmt.kind == "loop":
                inside = list(active)
                if self.varies(stmt):
                    quiet = self.sequences([stmt.blocks[0]]) == frozenset({()})
                    inside.append(Guard(stmt, "loop", quiet))
                body = stmt.blocks[0] if stmt.blocks else ()
                for guard, scope in self.walk(body, inside, inner_fn, ()):
                    if scope == "function":
                        new.append((guard, scope))
                if len(stmt.blocks) > 1:
                    new.extend(self.walk(stmt.blocks[1], active, inner_fn, inner_loop))
            else:
                for block in stmt.blocks:
                    new.extend(self.walk(block, active, inner_fn, inner_loop))
            for guard, scope in new:
                active.append(guard)
                escaping.append((guard, scope))
        return escaping

    def branch(
        self, stmt: Stmt, active: list[Guard], tail_fn: Tail, tail_loop: Tail
    ) -> list[tuple[Guard, str]]:
        varies = self.varies(stmt)
        blocks = list(stmt.blocks)
        if (stmt.kind == "if" and len(blocks) < 2) or stmt.kind == "match":
            blocks.append(())
        new: list[tuple[Guard, str]] = []
        symmetric = True
        if varies:
            exits = [_exit_scope(b) for b in blocks]
            if stmt.kind == "if" and sum(1 for e in exits if e) == 1:
                # One side leaves: compare it with the other side plus what follows.
                exit_guard = self.exit_guard(stmt, blocks, exits, tail_fn, tail_loop)
                new.append(exit_guard)
                symmetric = exit_guard[0].symmetric
            else:
                sides = {self.sequences([b]) for b in blocks}
                if len(sides) > 1 or None in sides:
                    # Each side as it continues to the end of the function (and, for
                    # at-most-once collectives, through what the callers run afterwards).
                    sides = {self.sequences([b, *tail_fn]) for b in blocks}
                    if len(sides) > 1 and _once(sides):
                        sides = {self.onward([b, *tail_fn]) for b in blocks}
                symmetric = len(sides) == 1 and None not in sides
        inside = [*active, Guard(stmt, "branch", symmetric)] if varies else active
        # `if rank == root:` whose sides agree: one rank of the group takes the first side, so
        # what it decides in there (`if len(data) == 0`) it decides alone; the others follow
        # through the collectives both sides share.
        solo = varies and symmetric and stmt.kind == "if" and self.one_rank(stmt)
        for index, block in enumerate(stmt.blocks):
            self._solo += solo and index == 0
            escaping = self.walk(block, inside, tail_fn, tail_loop)
            self._solo -= solo and index == 0
            new.extend([] if solo and index == 0 else escaping)
        return new

    def one_rank(self, stmt: Stmt) -> bool:
        """`rank == x`: the test picks one rank (by its id) of the group."""
        sources = self.flow.condition_sources(self.record.qualname, stmt)
        return _picks_one(stmt.cond) and any(source.kind == "rank-id" for source, _c in sources)

    def exit_guard(
        self,
        stmt: Stmt,
        blocks: list[tuple[Stmt, ...]],
        exits: list[str | None],
        tail_fn: Tail,
        tail_loop: Tail,
    ) -> tuple[Guard, str]:
        leaving = 0 if exits[0] else 1
        scope = "function" if exits[leaving] == "return" else "loop"
        tail = tail_fn if scope == "function" else tail_loop
        stay = self.sequences([blocks[1 - leaving], *tail])
        gone = self.sequences([blocks[leaving]])
        if stay != gone and scope == "function" and _once({stay, gone}):
            stay = self.onward([blocks[1 - leaving], *tail])
            gone = self.onward([blocks[leaving]])
        symmetric = stay is not None and stay == gone
        return Guard(stmt, "exit", symmetric), scope

    def calls(self, stmt: Stmt, active: list[Guard]) -> None:
        candidates = [g for g in active if not g.symmetric]
        if not candidates or self._solo:
            return
        name = self.record.qualname
        for call in stmt.calls:
            if not self.flow.calls.entered(self.record, call):
                continue
            groups = self.flow.calls.names.groups(self.record, call)
            hazards = [g for g in candidates if self.flow.varying(name, g.stmt, groups)]
            if hazards:
                self.found.append((call, groups, hazards))

    # -- sequences of collectives ---------------------------------------------------------
    def call_seq(self, calls: Iterable[CallSite]) -> tuple[str, ...]:
        out: list[str] = []
        for call in calls:
            out.extend(self.flow.calls.tokens(self.record, call))
        return tuple(out)

    def paths(self, block: tuple[Stmt, ...]) -> Paths:
        key = id(block)
        if key not in self._paths:
            self._paths[key] = self.paths_seq([block])
        return self._paths[key]

    def sequences(self, blocks: Sequence[tuple[Stmt, ...]]) -> frozenset[tuple[str, ...]] | None:
        """The sequences of collectives a run through `blocks` may enter, however each run ends
        (falling through, returning, breaking)."""
        found = self.paths_seq(blocks)
        return None if found is None else frozenset(seq for seq, _end in found)

    def onward(self, blocks: Sequence[tuple[Stmt, ...]]) -> frozenset[tuple[str, ...]] | None:
        """Like `sequences`, but a run that returns goes on in the callers (`self.outer`)."""
        here = self.paths_seq(blocks)
        if here is None:
            return None
        returned = frozenset((seq, "" if end == "return" else end) for seq, end in here)
        found = _concat(returned, self.paths_seq(self.outer))
        return None if found is None else frozenset(seq for seq, _end in found)

    def paths_seq(self, blocks: Sequence[tuple[Stmt, ...]]) -> Paths:
        acc: Paths = frozenset({((), "")})
        for block in blocks:
            for stmt in block:
                acc = _concat(acc, self.stmt_paths(stmt))
                if acc is None:
                    return None
        return acc

    def stmt_paths(self, stmt: Stmt) -> Paths:
        seq = self.call_seq(stmt.calls)
        if stmt.kind in ("return", "raise"):
            return frozenset({(seq, "return")})
        if stmt.kind in ("break", "continue"):
            return frozenset({(seq, "loop")})
        head: Paths = frozenset({(seq, "")})
        if not stmt.blocks:
            return head
        if stmt.kind in ("if", "match"):
            sides: Paths = frozenset()
            extra = [()] if stmt.kind == "match" or len(stmt.blocks) < 2 else []
            for block in [*stmt.blocks, *extra]:
                part = self.paths(block)
                if part is None or sides is None:
                    return None
                sides = sides | part
            return _concat(head, sides)
        if stmt.kind == "loop":
            body = self.paths(stmt.blocks[0])
            if body is None:
                return None
            # break/continue end an iteration, not the function; zero iterations are possible.
            once = frozenset((seq, "" if end == "loop" else end) for seq, end in body)
            return _concat(head, once | {((), "")})
        if stmt.kind == "try":
            return _concat(head, self.try_paths(stmt.blocks))
        return _concat(head, self.paths_seq(list(stmt.blocks)))

    def try_paths(self, blocks: tuple[tuple[Stmt, ...], ...]) -> Paths:
        """The body and its `else`, or one handler instead (taken from the start: what the body
        entered before it raised is not known), then the `finally` on every run, even one
        that returned."""
        body, orelse, final, *handlers = (*blocks, (), (), ())[:3] + blocks[3:]
        runs = self.paths_seq([body, orelse])
        for handler in handlers:
            part = self.paths(handler)
            if runs is None or part is None:
                return None
            runs = runs | part
        after = self.paths(final)
        if runs is None or after is None:
            return None
        out = frozenset(
            (_append(seq, tail), end or tail_end) for seq, end in runs for tail, tail_end in after
        )
        return out if len(out) <= _MAX_PATHS else None


def _picks_one(cond: Cond) -> bool:
    """`a == b`, alone or as a conjunct (`a == b and c`): holds for one value only."""
    if cond[:1] == ("cmp",):
        return "==" in cond[1]
    return cond[:1] == ("and",) and any(_picks_one(part) for part in cond[1])


def _once(sides: Iterable[frozenset[tuple[str, ...]] | None]) -> bool:
    return any(t.startswith("once:") for side in sides if side for seq in side for t in seq)


def tail_after(body: tuple[Stmt, ...], line: int) -> Tail | None:
    """What runs after the statement that makes a call on `line`, to the end of the body."""
    for index, stmt in enumerate(body):
        if any(call.line == line for call in stmt.calls):
            return (body[index + 1 :],)
        for block in stmt.blocks:
            inner = tail_after(block, line)
            if inner is not None:
                return (*inner, body[index + 1 :])
    return None


def _append(left: tuple[str, ...], right: tuple[str, ...]) -> tuple[str, ...]:
    """`left + right`, where an at-most-once token already on the path adds nothing."""
    return left + tuple(t for t in right if not (t.startswith("once:") and t in left))


def _concat(left: Paths, right: Paths) -> Paths:
    if left is None or right is None:
        return None
    out = frozenset(
        (a, end_a) if end_a else (_append(a, b), end_b) for a, end_a in left for b, end_b in right
    )
    return out if len(out) <= _MAX_PATHS else None


def _exit_scope(block: tuple[Stmt, ...], in_loop: bool = False) -> str | None:
    """`return` when the block may return, `loop` when it may break or continue its loop."""
    found: str | None = None
    for stmt in block:
        if stmt.kind == "return":
            return "return"
        if stmt.kind in ("break", "continue") and not in_loop:
            found = found or "loop"
        for inner in stmt.blocks:
            scope = _exit_scope(inner, in_loop or stmt.kind == "loop")
            if scope == "return":
                return "return"
            found = found or scope
    return found
