"""Memo caches the round's start-up may already have filled.

A memo attribute's build runs while the attribute is unset (`analysis.memo`): once per object
that holds it. When the constructor of the round's object reaches the same memo function
(`Scheduler.__init__` builds its configuration through `config_of(args)`, which the round calls
again), the cache is likely filled before the first round, and the build the round reaches runs
only if start-up took another path or held another object. The model cannot tell which, so such
a finding stays reported, at low confidence, naming the start-up chain; a memo start-up never
reaches keeps its confidence (the first round builds it).

This reads only findings' chains, after the walk: summaries stay independent of what start-up
reaches, so an edit there does not invalidate kept summaries (`analysis.blocking_keep`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from rankguard.analysis.blocking_types import BlockingCall, copied
from rankguard.analysis.memo import MemoShape, building, past_return
from rankguard.analysis.reach import reach_from
from rankguard.analysis.rounds import Round
from rankguard.analysis.stability import Stability, class_of
from rankguard.core.chains import Hop
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord
from rankguard.summary.ir import Stmt, walk_statements

MemoOf = Callable[[FunctionRecord, Stmt, MemoShape], str | None]


class StartUp:
    """What the construction of each round's object reaches, and the memos it fills."""

    def __init__(self, program: Program, stability: Stability, memo_of: MemoOf) -> None:
        self.program = program
        self.stability = stability
        self.memo_of = memo_of
        self._reached: dict[str, dict[str, list[Hop]]] = {}
        self._built: dict[tuple[str, int], bool] = {}

    def filled(self, rnd: Round, call: BlockingCall) -> BlockingCall:
        """`call` at low confidence if the memo that caches it is one start-up reaches."""
        if not call.cadenced or call.confidence == "low":
            return call
        reached = self._reached_from(rnd)
        holder = next((f for f in self._holders(call) if f in reached), None)
        if holder is None:
            return call
        chain = reached[holder]
        start = chain[0].function if chain else holder
        why = (
            f"cached by `{_short(holder)}`, which the round's start-up reaches too "
            f"(`{_short(start)}` -> ... -> `{_short(holder)}`): the cache is likely filled "
            "before the first round"
        )
        return copied(call, confidence="low", note=f"{why}; {call.note}" if call.note else why)

    def _holders(self, call: BlockingCall) -> Iterator[str]:
        """The functions on the chain, outermost first, whose memo's build side the chain
        passes through (a `functools` cache inside a build may have given the call its
        cadence: any filled memo around it keeps it from running)."""
        steps = [(hop.function, hop.line) for hop in call.chain]
        for function, line in (*steps, (call.function, call.line)):
            if self._building(function, line):
                yield function

    def _building(self, function: str, line: int) -> bool:
        """The call at `line` runs on the build side of a memo of `function`: after `if memo is
        not None: return memo` in the same block, or inside `if self._x is None:`."""
        key = (function, line)
        found = self._built.get(key)
        if found is None:
            record = self.program.functions.get(function)
            found = self._built[key] = record is not None and any(
                _holds(rest, line)
                for block in _blocks(record.info.body)
                for index, stmt in enumerate(block)
                if stmt.kind == "if"
                for shape, rest in ((past_return, block[index + 1 :]), (building, stmt.blocks[0]))
                if self.memo_of(record, stmt, shape)
            )
        return found

    def _reached_from(self, rnd: Round) -> dict[str, list[Hop]]:
        """Every function the constructors of the round's object reach (its class, the classes
        it derives from and those derived from it: the object may be any of them)."""
        owner = class_of(rnd.function)
        if owner is None:
            return {}
        found = self._reached.get(owner)
        if found is None:
            classes = self.stability.related(owner)
            roots = sorted(f"{c}.{name}" for c in classes for name in ("__init__", "__post_init__"))
            found = self._reached[owner] = reach_from(self.program, roots)
        return found


def _blocks(body: Sequence[Stmt]) -> Iterator[Sequence[Stmt]]:
    yield body
    for stmt in walk_statements(body):
        yield from stmt.blocks


def _holds(stmts: Sequence[Stmt], line: int) -> bool:
    return any(
        s.line == line or any(c.line == line for c in s.calls) for s in walk_statements(stmts)
    )


def _short(name: str) -> str:
    """`Class.method` or `function`: enough to find it, short enough for a note."""
    return ".".join(name.split(".")[-2:])
