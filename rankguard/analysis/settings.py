"""Implications among launch settings that the program's own start-up validation asserts.

Serving engines validate their configuration once, before any loop runs: `if cfg.pp_size > 1:
assert cfg.disable_overlap_schedule`, or `if cfg.pp_size > 1 and not cfg.disable_overlap:
raise ValueError(...)`. Every round runs under a configuration that passed, so where a round
knows `pp_size > 1` (the launcher chose the pipeline loop on it) it also knows overlap
scheduling is off, though the loop reads that setting through another object
(`get_schedule().disable_overlap_schedule`).

A setting is known by its attribute name: the validated object (a parameter or local named like
a configuration: `cfg`, `server_args`, `cfg = view(server_args)`) and the getters the loops
read (`get_parallel().pp_size`) are views of one argument set in these codebases. Only
implications whose every premise and conclusion read settings of the one validated object are
kept; a premise the round does not know decides nothing.
"""

from __future__ import annotations

import builtins
import re
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from rankguard.model.arguments import Callers, callers
from rankguard.model.facts import (
    TRUTHY,
    Cond,
    assume,
    complemented,
    evaluate,
    refs,
    rename,
    truth,
)
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord
from rankguard.model.stores import bound_names
from rankguard.summary.ir import CALL, SUBSCRIPT, Segs, Stmt, walk_statements

SETTING = "<setting>"
# Parameter names a validation function receives the configuration under.
_CONFIG_NAME = re.compile(r"^(cfg|conf|config|args|settings|options|opts)$|_(args|cfg|config)$")
_NOT_GETTERS = frozenset(dir(builtins)) | {"self", "super()"}
_ROUNDS = 4  # implications chain (pp => no overlap => ...); a few steps reach every one used

Premise = tuple[Cond, bool]
Implication = tuple[tuple[Premise, ...], Cond]


class Settings:
    """Per program: the validation's implications, and the getters each setting is read by."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self._implications: list[Implication] | None = None
        self._readers: dict[str, tuple[Segs, ...]] | None = None
        self._callers: Callers | None = None
        self._unguarded: dict[str, bool] = {}
        self._derived: dict[frozenset[tuple[Cond, Any]], dict[Cond, Any]] = {}

    def derive(self, known: Mapping[Cond, Any]) -> dict[Cond, Any]:
        """Facts on settings (as the program reads them through getters) that the known ones
        imply under the validation's asserts; only the new ones."""
        start = {}
        for cond, value in known.items():
            canonical = _canonical_getters(cond)
            if canonical is not None:
                start[canonical] = value
        if not start:
            return {}
        key = frozenset(start.items())
        cached = self._derived.get(key)
        if cached is None:
            cached = self._materialise(self._close(complemented(start)), start)
            self._derived[key] = cached
        return {c: v for c, v in cached.items() if c not in known}

    def _close(self, settings: dict[Cond, Any]) -> dict[Cond, Any]:
        for _ in range(_ROUNDS):
            added = False
            for premises, conclusion in self.implications():
                if conclusion in settings or not all(
                    truth(evaluate(c, settings)) is side for c, side in premises
                ):
                    continue
                if truth(evaluate(conclusion, settings)) is False:
                    continue  # contradicts what the round knows: a check we misread
                settings.update(complemented(assume(conclusion, True)))
                settings.setdefault(conclusion, TRUTHY)
                added = True
            if not added:
                break
        return settings

    def _materialise(self, settings: Mapping[Cond, Any], start: Mapping[Cond, Any]) -> dict:
        """The derived facts restated for every getter the program reads each setting by."""
        out: dict[Cond, Any] = {}
        readers = self.readers()
        for cond, value in settings.items():
            if cond in start:
                continue
            names = {segs[1] for segs in refs(cond)}
            if len(names) != 1:
                continue  # a fact tying two settings: restated only where both are read alike
            (name,) = names
            for getter in readers.get(name, ()):
                out[rename(cond, (SETTING,), getter)] = value
        return out

    # -- what the program says -----------------------------------------------------------------
    def implications(self) -> list[Implication]:
        if self._implications is None:
            found: list[Implication] = []
            for name in sorted(self.program.functions):
                found.extend(self._of_function(self.program.functions[name]))
            self._implications = found
        return self._implications

    def _of_function(self, fn: FunctionRecord) -> Iterator[Implication]:
        roots = {name for name in bound_names(fn) if _CONFIG_NAME.search(name)}
        if not roots:
            return
        if not self._callers_of(fn) or not self._runs_unguarded(fn):
            # What a function run only in some mode checks holds only in that mode; one
            # nothing calls may be a hook a registry runs for one model or feature.
            return
        for guards, check in _checks(fn.info.body, ()):
            for root in roots:
                premises = tuple((_canonical(c, root), side) for c, side in guards)
                conclusion = _canonical(check, root)
                if conclusion is not None and all(c is not None for c, _ in premises):
                    yield premises, conclusion  # type: ignore[misc]
        for resolved in self.program.calls.get(fn.qualname, ()):
            guards = _guards(fn.info.body, resolved.call)
            for target in resolved.targets:
                callee = self.program.functions.get(target.name)
                if callee is None or target.kind != "call" or guards is None:
                    continue
                for root, param in _passed_roots(callee, resolved.call.args, roots):
                    premises = tuple((_canonical(c, root), side) for c, side in guards)
                    if not all(c is not None for c, _ in premises):
                        continue
                    for check in _opening_checks(callee.info.body):
                        conclusion = _canonical(check, param)
                        if conclusion is not None:
                            yield premises, conclusion  # type: ignore[misc]

    def _callers_of(self, fn: FunctionRecord) -> list[tuple[str, Any]]:
        if self._callers is None:
            self._callers = callers(self.program)
        return self._callers.get(fn.qualname, [])

    def _runs_unguarded(self, fn: FunctionRecord) -> bool:
        """Every call of `fn` is unconditional, in a function that itself runs unconditionally,
        up to functions nothing calls (entry points, hooks run from a table): what `fn` checks
        is then checked on every start-up, tied to no mode. A guarded call gives its caller's
        guards as premises instead (`_of_function`)."""
        found = self._unguarded.get(fn.qualname)
        if found is None:
            self._unguarded[fn.qualname] = False  # a cycle proves nothing
            found = all(
                _guards(self.program.functions[caller].info.body, call) == []
                and self._runs_unguarded(self.program.functions[caller])
                for caller, call in self._callers_of(fn)
            )
            self._unguarded[fn.qualname] = found
        return found

    def readers(self) -> dict[str, tuple[Segs, ...]]:
        """Setting name -> the getter calls it is read through (`get_schedule()`)."""
        if self._readers is None:
            found: dict[str, set[Segs]] = defaultdict(set)
            for record in self.program.functions.values():
                for stmt in walk_statements(record.info.body):
                    for segs in stmt.reads:
                        if _getter_read(segs):
                            found[segs[2]].add(segs[:2])
            self._readers = {k: tuple(sorted(v)) for k, v in found.items()}
        return self._readers


def _checks(body: Sequence[Stmt], guards: tuple[Premise, ...]) -> Iterator[tuple[tuple, Cond]]:
    """(enclosing guards, what must hold) for every assert and every `if C: raise`, up to the
    first statement that may return early (what follows it is itself conditional)."""
    for stmt in body:
        if stmt.kind == "expr" and stmt.cond:
            yield guards, stmt.cond
        elif stmt.kind == "if" and stmt.cond:
            if _raises(stmt.blocks[0]):
                yield from _refuted(stmt.cond, guards)
            else:
                yield from _checks(stmt.blocks[0], (*guards, (stmt.cond, True)))
            if len(stmt.blocks) > 1:
                yield from _checks(stmt.blocks[1], (*guards, (stmt.cond, False)))
        if _may_return(stmt):
            return


def _refuted(cond: Cond, guards: tuple[Premise, ...]) -> Iterator[tuple[tuple, Cond]]:
    """`if a and b: raise`: with `a` known, `b` cannot hold (and with `b`, `a`)."""
    parts = cond[1] if cond[0] == "and" else (cond,)
    for index, part in enumerate(parts):
        others = tuple((p, True) for i, p in enumerate(parts) if i != index)
        yield (*guards, *others), ("not", part)


def _opening_checks(body: Sequence[Stmt]) -> Iterator[Cond]:
    """What a function asserts before anything can return: it holds wherever it returns."""
    for guards, check in _checks(body, ()):
        if not guards:
            yield check


def _raises(block: Sequence[Stmt]) -> bool:
    return bool(block) and block[-1].kind == "raise" and not any(_may_return(s) for s in block)


def _may_return(stmt: Stmt) -> bool:
    return any(s.kind == "return" for s in walk_statements((stmt,)))


def _guards(body: Sequence[Stmt], call: Any) -> list[Premise] | None:
    """The (condition, side) pairs enclosing `call`, if only `if`s enclose it and nothing
    before it in its function can return."""
    for stmt in body:
        if any(c is call for c in stmt.calls):
            return []
        for index, block in enumerate(stmt.blocks):
            inner = _guards(block, call)
            if inner is None:
                continue
            if stmt.kind != "if" or not stmt.cond:
                return None
            return [(stmt.cond, index == 0), *inner]
        if _may_return(stmt):
            return None
    return None


def _passed_roots(
    callee: FunctionRecord, args: Sequence[str], roots: set[str]
) -> Iterator[tuple[str, str]]:
    """(caller's configuration name, callee's parameter) for each root passed positionally."""
    params = [p.name for p in callee.info.params if not p.name.startswith("*")]
    for index, text in enumerate(args):
        if text in roots and index < len(params):
            yield text, params[index]


def _canonical(cond: Cond, root: str) -> Cond | None:
    """`cond` over `<setting>.name` refs, if it reads only `root.name` settings."""
    found = list(refs(cond))
    if not found or any(len(s) != 2 or s[0] != root for s in found):
        return None
    return rename(cond, (root,), (SETTING,))


def _getter_read(segs: Segs) -> bool:
    """`get_schedule().name`: a setting read through a module-level getter (not a builtin's
    result such as `getattr(x, n).device`)."""
    return (
        len(segs) == 3
        and segs[1] == CALL
        and segs[0] not in _NOT_GETTERS
        and segs[2] not in (CALL, SUBSCRIPT)
    )


def _canonical_getters(cond: Cond) -> Cond | None:
    """`cond` over `<setting>.name` refs, if it reads only settings through getters."""
    found = list(refs(cond))
    if not found or not all(_getter_read(s) for s in found):
        return None
    for getter in {s[:2] for s in found}:
        cond = rename(cond, getter, (SETTING,))
    return cond
