"""Which start-up code a launch may pass by, and why.

A validation holds in a round only if the launch that started the round ran it. Launchers call
the validation from several places; a function every path to which passes an `if` runs in a
mode (what it checks holds only there); one some path reaches past an early return, under a
`with`, a loop or a `try`, or under an `if` another path does without, may be passed by while
another launcher runs it whenever it starts.
`analysis.settings` trusts what runs on every path, drops what runs only in a mode, and keeps
the rest as doubts (`analysis.doubts`) with the reason found here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence

from rankguard.model.arguments import Callers, callers
from rankguard.model.facts import Cond
from rankguard.model.program import Program
from rankguard.summary.ir import CallSite, Segs, Stmt, walk_statements

Premise = tuple[Cond, bool]
# One way in to a function: the calls on it (a hand-over adds the runner's call of the
# parameter), and the function whose own ways in it inherits.
Path = tuple[tuple[tuple[str, CallSite], ...], str]


class LaunchPaths:
    """Per program: the `if` conditions enclosing each call, and the functions a launch may
    pass by."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.callers: Callers = callers(program)
        self._passed_by_table: dict[str, str | None] | None = None
        self._guard_maps: dict[tuple[str, bool], dict[int, list[Premise] | None]] = {}
        self._skippers: dict[str, dict[int, Stmt]] = {}

    def passed_by(self) -> dict[str, str | None]:
        """Functions a launch may pass by, with why: None where they run only in a mode (every
        path to them passes an `if`: what they check holds only there), else the first reason
        met (propagated to their callees): the early return a call runs past (`if
        cfg.model_path == "dummy": return`, before the validation), or a call something
        decides (an `if` on one of several paths, a `with`, a loop, a `try`), which a second
        launcher may take while the first calls it whenever it starts. A function handed to
        another as an argument (`run_hook(validate, cfg)` running `step(cfg)`) is guarded where
        the hand-over is, or the call of the parameter is: not wherever else the runner is
        called with other steps."""
        if self._passed_by_table is not None:
            return self._passed_by_table
        calls: dict[str, set[str]] = defaultdict(set)
        handed: dict[str, set[str]] = defaultdict(set)  # caller -> functions it hands over
        paths: dict[str, list[Path]] = defaultdict(list)
        for caller, resolved in self.program.calls.items():
            for call, targets in resolved:
                for target in targets:
                    if target.kind == "callback" or target.name not in self.program.functions:
                        continue
                    argument = target.via == "argument"
                    sites = list(self._handing_over(caller, target.name)) if argument else []
                    if not sites:  # a plain call, or a hand-over not told here: as any callee
                        calls[caller].add(target.name)
                        paths[target.name].append((((caller, call),), caller))
                    for passer, site in sites:
                        handed[passer].add(target.name)
                        paths[target.name].append((((caller, call), (passer, site)), passer))
        work: list[tuple[str, str]] = []
        for target, found in paths.items():
            for hops, _ in found:
                work.extend((target, why) for why in map(self._hop_reason, hops) if why)
        guarded: dict[str, str | None] = {}
        stack = work[::-1]
        while stack:
            name, why = stack.pop()
            if name not in guarded:
                guarded[name] = why
                stack.extend((n, why) for n in calls.get(name, ()))
                stack.extend((n, why) for n in handed.get(name, ()))
        # What runs only in a mode decides nothing; what it calls keeps the reason it passed on.
        guarded.update(dict.fromkeys(self._modal(paths)))
        self._passed_by_table = guarded
        return guarded

    def _modal(self, paths: Mapping[str, list[Path]]) -> set[str]:
        """Functions every path to which passes an `if` (or comes from such a function): they
        run only in a mode, a kind or a feature that condition chooses. The greatest such set:
        a function that retries itself (`while not ready(): start()`) is still reached only
        through the `if` that first called it."""
        conditional = {
            target: [any(self._in_mode(*hop) for hop in hops) for hops, _ in found]
            for target, found in paths.items()
        }
        inheriting: dict[str, set[str]] = defaultdict(set)
        for target, found in paths.items():
            for _, inherits in found:
                inheriting[inherits].add(target)
        modal = set(paths)
        stack = sorted(modal)
        while stack:
            target = stack.pop()
            if target not in modal:
                continue
            found = paths[target]
            if all(c or found[i][1] in modal for i, c in enumerate(conditional[target])):
                continue
            modal.discard(target)
            stack.extend(t for t in inheriting.get(target, ()) if t in modal)
        return modal

    def _in_mode(self, caller: str, call: CallSite) -> bool:
        """`if` conditions, and only they, decide whether the call runs: a mode, not a launch
        that may pass it by (`_hop_reason`)."""
        return bool(self.guards(caller, call, past_returns=True))

    def _hop_reason(self, hop: tuple[str, CallSite]) -> str:
        """Why a launch may not make this call ("" if it always does, once the caller runs)."""
        caller, call = hop
        if self.guards(caller, call, past_returns=True) != []:
            return self._conditional(caller, call)
        return self.skipped_by(caller, call) if self.guards(caller, call) != [] else ""

    def _handing_over(self, runner: str, function: str) -> Iterator[tuple[str, CallSite]]:
        """The calls of `runner` that pass `function` (by name) as an argument."""
        short = function.rsplit(".", 1)[-1]
        for caller, site in self.callers.get(runner, ()):
            if any(
                operand.ref
                and operand.ref[-1] == short
                and self._names(caller, operand.ref, function)
                for operand in site.operands
            ):
                yield caller, site

    def _names(self, caller: str, ref: Segs, function: str) -> bool:
        return any(v.name == function for v in self.program.evaluate(caller, ref))

    def guards(
        self, function: str, call: CallSite, past_returns: bool = False
    ) -> list[Premise] | None:
        """The `if` conditions (and sides) enclosing `call` in `function`, where nothing else
        decides whether it runs (`_guard_map`); with `past_returns`, an earlier statement
        that may return does not count."""
        table = self._guard_maps.get((function, past_returns))
        if table is None:
            table = self._guard_maps[(function, past_returns)] = {}
            skippers = self._skippers.setdefault(function, {})
            body = self.program.functions[function].info.body
            _guard_map(body, [], table, skippers if past_returns else None)
        return table.get(id(call))

    def skipped_by(self, function: str, call: CallSite) -> str:
        """Why a launch may pass `call` by: the early return it runs past, said for a reader
        ("" if none)."""
        self.guards(function, call, past_returns=True)
        stmt = self._skippers[function].get(id(call))
        if stmt is None:
            return ""
        path = self.program.functions[function].path
        return f"it runs only past the early return under `{stmt.text}` ({path}:{stmt.line})"

    def _conditional(self, function: str, call: CallSite) -> str:
        """Why a launch may pass `call` by, where something other than a setting decides."""
        path = self.program.functions[function].path
        return (
            f"a launch may reach it through the call in `{function}` ({path}:{call.line}), "
            "which a condition, a loop, a `with` or a `try` decides"
        )


def raises(block: Sequence[Stmt]) -> bool:
    """The block ends in a `raise` it cannot return before: the code after it runs only where
    the block's test was false."""
    return bool(block) and block[-1].kind == "raise" and not any(may_return(s) for s in block)


def may_return(stmt: Stmt) -> bool:
    """What follows `stmt` may not run: it holds a `return` somewhere."""
    return any(s.kind == "return" for s in walk_statements((stmt,)))


def _guard_map(
    body: Sequence[Stmt],
    guards: list[Premise] | None,
    out: dict[int, list[Premise] | None],
    skippers: dict[int, Stmt] | None = None,
    skipper: Stmt | None = None,
) -> bool:
    """Every call's enclosing `if` conditions into `out` (by `id`), or None where something
    else decides whether it runs: a loop, a `try`, a `with`, an earlier statement that may
    return, or the call being one operand of `a or f()` / `f() if c else x` (only a call that
    is its statement's whole value runs whenever the statement does). True if `body` may
    return. With `skippers`, an earlier statement that may return does not count: each call
    past one is put in `skippers` with the first such statement."""
    returns = False
    for stmt in body:
        for call in stmt.calls:
            out[id(call)] = list(guards) if guards is not None and _whole(stmt, call) else None
            if skippers is not None and skipper is not None:
                skippers[id(call)] = skipper
        through = _completes_through(stmt)
        for index, block in enumerate(stmt.blocks):
            inner = None
            if guards is not None and stmt.kind == "if" and stmt.cond:
                inner = [*guards, (stmt.cond, index == 0)]
            elif guards is not None and index in through:
                inner = guards
            returns = _guard_map(block, inner, out, skippers, skipper) or returns
        if stmt.kind == "return":
            returns = True
        if returns and skippers is None:
            guards = None  # what follows a statement that may return is conditional
        elif returns:
            skipper = skipper or stmt
    return returns


def _completes_through(stmt: Stmt) -> tuple[int, ...]:
    """The blocks of a `try` that run whenever the function goes on past it: body, `else` and
    `finally`, where every handler raises again (`except BaseException: mark(); raise`) and
    the `finally` lets the exception go on (a `return`, `break` or `continue` there swallows
    it), so no path goes on without them; none otherwise."""
    if stmt.kind != "try" or not all(raises(handler) for handler in stmt.blocks[3:]):
        return ()
    final = stmt.blocks[2] if len(stmt.blocks) > 2 else ()
    if any(s.kind in ("return", "break", "continue") for s in walk_statements(final)):
        return ()
    return (0, 1, 2)


def _whole(stmt: Stmt, call: CallSite) -> bool:
    """The call is what its statement evaluates: `check(cfg)`, `ok = check(cfg)` (for an
    expression statement, its outermost call: evaluated last)."""
    if stmt.kind == "expr":
        return not stmt.cond and stmt.calls[-1] is call
    return stmt.kind == "assign" and stmt.value[:2] == ("call", call.target)
