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

from collections.abc import Callable

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
_SHAPES: tuple[MemoShape, ...] = (past_return, building)


class StartUp:
    """What the construction of each round's object reaches, and the memos it fills."""

    def __init__(self, program: Program, stability: Stability, memo_of: MemoOf) -> None:
        self.program = program
        self.stability = stability
        self.memo_of = memo_of
        self._reached: dict[str, dict[str, list[Hop]]] = {}
        self._memos: dict[str, tuple[str, ...]] = {}

    def filled(self, rnd: Round, call: BlockingCall) -> BlockingCall:
        """`call` at low confidence if the memo that caches it is one start-up reaches."""
        if not call.cadenced or call.confidence == "low":
            return call
        holder = self._holder(call)
        if holder is None:
            return call
        chain = self._reached_from(rnd).get(holder)
        if chain is None:
            return call
        start = chain[0].function if chain else holder
        why = (
            f"cached by `{_short(holder)}`, which the round's start-up reaches too "
            f"(`{_short(start)}` -> ... -> `{_short(holder)}`): the cache is likely filled "
            "before the first round"
        )
        return copied(call, confidence="low", note=f"{why}; {call.note}" if call.note else why)

    def _holder(self, call: BlockingCall) -> str | None:
        """The function on the chain whose memo gave the call its cadence."""
        for function in (*(hop.function for hop in call.chain), call.function):
            if call.cadenced in self._memos_of(function):
                return function
        return None

    def _memos_of(self, function: str) -> tuple[str, ...]:
        found = self._memos.get(function)
        if found is None:
            record = self.program.functions.get(function)
            ifs = [s for s in walk_statements(record.info.body) if s.kind == "if"] if record else []
            texts = (self.memo_of(record, s, shape) for s in ifs for shape in _SHAPES if record)
            found = self._memos[function] = tuple(t for t in texts if t)
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


def _short(name: str) -> str:
    """`Class.method` or `function`: enough to find it, short enough for a note."""
    return ".".join(name.split(".")[-2:])
