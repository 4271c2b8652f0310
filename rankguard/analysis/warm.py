"""What the round's start-up has already done: memo caches it filled, setup methods it ran.

A memo attribute's build runs while the attribute is unset (`analysis.memo`): once per object
that holds it. When the constructor of the round's object reaches the same memo function
(`Scheduler.__init__` builds its configuration through `config_of(args)`, which the round calls
again), the cache is likely filled before the first round, and the build the round reaches runs
only if start-up took another path or held another object. The model cannot tell which, so such
a finding stays reported, at low confidence, naming the start-up chain; a memo start-up never
reaches keeps its confidence (the first round builds it).

A module global's memo (`global _h; if _h is None: _h = load()`) is built once per process,
whatever object the round holds: what it builds is low confidence too, saying so.

Start-up also says which methods are setup: an RPC loop runs the method a message names
(`getattr(self.worker, method)(*args)`), a guess among all the worker's methods, and one its
constructor already called (`init_device`, `load_model`) is likely never sent to the loop. What
the loop reaches only through such a guess is low confidence, naming the start-up call.

This reads only findings' chains, after the walk: summaries stay independent of what start-up
reaches, so an edit there does not invalidate kept summaries (`analysis.blocking_keep`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from rankguard.analysis.blocking_types import BlockingCall, lowered
from rankguard.analysis.memo import MemoShape, building, held_by, past_return
from rankguard.analysis.reach import reach_from
from rankguard.analysis.rounds import Round
from rankguard.analysis.stability import CONSTRUCTORS, SELF, Stability, class_of
from rankguard.core.chains import Hop
from rankguard.model.named import NAMED
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
        self._reached: dict[tuple[str, str], dict[str, list[Hop]]] = {}
        self._built: dict[tuple[str, int], str | None] = {}

    def filled(self, rnd: Round, call: BlockingCall) -> BlockingCall:
        """`call` at low confidence if a memo that caches it is one start-up reaches: a memo
        held by a parameter (an argument set handed around), or one held by `self` of the
        round's own object (another object's memo is another cache)."""
        if not call.cadenced or call.confidence == "low":
            return call
        process = next(((f, g) for f, g in self._holders(call) if self._global(f, g)), None)
        if process is not None:
            function, name = process
            why = (
                f"cached in the module global `{name}` by `{function}`: built once per process, "
                "so at most the first round that needs it stalls"
            )
            return lowered(call, "low", why)
        owner = class_of(rnd.function)
        if owner is None:
            return call
        reached = self._reached_from(rnd, owner)
        ours = self.stability.related(owner)
        holder = next(
            (
                function
                for function, root in self._holders(call)
                if function in reached and (root != SELF or self._class(function) in ours)
            ),
            None,
        )
        if holder is None:
            return call
        why = (
            f"cached by `{holder}`, which the round's start-up reaches too "
            f"({_start_up_path(reached, holder)}): the cache is likely filled before the first "
            "round"
        )
        return lowered(call, "low", why)

    def set_up(self, rnd: Round, call: BlockingCall) -> BlockingCall:
        """`call` at low confidence if its chain enters by a guess (a method named at run time,
        `getattr(self.worker, method)(*args)`: every method of the worker is a candidate) a
        function the construction of the round's object calls itself (`self.worker.init_device()`
        in the worker's `__init__`): a setup step start-up has done, likely never sent to the
        loop. Which names the loop is sent is data the model does not see, so it stays
        reported."""
        owner = class_of(rnd.function)
        if call.confidence == "low" or owner is None:
            return call
        reached = self._reached_from(rnd, owner)
        entered = [hop.function for hop in call.chain[1:]] + [call.function]
        guess = next(
            (
                (hop, function)
                for hop, function in zip(call.chain, entered, strict=True)
                if hop.edge == "fallback" and function in reached and self._named(hop, function)
            ),
            None,
        )
        if guess is None:
            return call
        hop, function = guess
        why = (
            f"entered through a method named at run time ({hop.path}:{hop.line}), `{function}`, "
            f"which the round's start-up calls itself ({_start_up_path(reached, function)}): "
            "likely a setup step, not sent to the loop"
        )
        return lowered(call, "low", why)

    def _named(self, hop: Hop, function: str) -> bool:
        """The call at `hop` reaches `function` as a method named at run time (`getattr(obj,
        name)`), not as the one class defining a method of that name."""
        return any(
            target.name == function and target.via == NAMED
            for resolved in self.program.calls.get(hop.function, ())
            if resolved.call.line == hop.line
            for target in resolved.targets
        )

    def _global(self, function: str, root: str) -> bool:
        """The memo `function` builds is held by a module global it declares."""
        return root in self.program.functions[function].info.global_names

    def _class(self, function: str) -> str | None:
        return class_of(self.program.functions[function])

    def _holders(self, call: BlockingCall) -> Iterator[tuple[str, str]]:
        """The functions on the chain, outermost first, whose memo's build side the chain
        passes through, each with what holds the memo (a `functools` cache inside a build may
        have given the call its cadence: any filled memo around it keeps it from running)."""
        steps = [(hop.function, hop.line) for hop in call.chain]
        for function, line in (*steps, (call.function, call.line)):
            root = self._building(function, line)
            if root is not None:
                yield function, root

    def _building(self, function: str, line: int) -> str | None:
        """What holds the memo on whose build side the call at `line` runs (after `if memo is
        not None: return memo` in the same block, or inside `if self._x is None:`), if any."""
        key = (function, line)
        if key not in self._built:
            self._built[key] = self._find_building(function, line)
        return self._built[key]

    def _find_building(self, function: str, line: int) -> str | None:
        record = self.program.functions.get(function)
        if record is None:
            return None
        for block in _blocks(record.info.body):
            for index, stmt in enumerate(block):
                if stmt.kind != "if":
                    continue
                for shape, rest in ((past_return, block[index + 1 :]), (building, stmt.blocks[0])):
                    if _holds(rest, line) and self.memo_of(record, stmt, shape):
                        return held_by(record, stmt)
        return None

    def _reached_from(self, rnd: Round, owner: str) -> dict[str, list[Hop]]:
        """Every function the constructors of the round's object reach by plain calls (of its
        class, the classes it derives from and those derived from it: the object may be any
        of them), up to the round function: what it runs is the first round, not start-up."""
        key = (owner, rnd.function.qualname)
        found = self._reached.get(key)
        if found is None:
            classes = self.stability.related(owner)
            roots = sorted(f"{c}.{name}" for c in classes for name in CONSTRUCTORS)
            found = reach_from(self.program, roots, ("call",), frozenset((rnd.function.qualname,)))
            self._reached[key] = found
        return found


def _start_up_path(reached: dict[str, list[Hop]], function: str) -> str:
    """How start-up reaches `function`: its constructor, then `function`."""
    chain = reached[function]
    return f"`{chain[0].function}` -> ... -> `{function}`" if chain else f"`{function}`"


def _blocks(body: Sequence[Stmt]) -> Iterator[Sequence[Stmt]]:
    yield body
    for stmt in walk_statements(body):
        yield from stmt.blocks


def _holds(stmts: Sequence[Stmt], line: int) -> bool:
    return any(
        s.line == line or any(c.line == line for c in s.calls) for s in walk_statements(stmts)
    )
