"""Implications among launch settings that the program's own start-up validation asserts.

Serving engines validate their configuration once, before any loop runs: `if cfg.pp_size > 1:
assert cfg.disable_overlap_schedule`, or `if cfg.pp_size > 1 and not cfg.disable_overlap:
raise ValueError(...)`. Every round runs under a configuration that passed, so where a round
knows `pp_size > 1` (the launcher chose the pipeline loop on it) it also knows overlap
scheduling is off, though the loop reads that setting through another object
(`get_schedule().disable_overlap_schedule`).

A setting is known by its attribute name: the validated object (a parameter or local named like
a configuration: `cfg`, `server_args`, `cfg = view(server_args)`) and the getters the loops
read (`get_parallel().pp_size`) are views of one argument set in these codebases. A group's
field (`get_exec().moe.elastic_ep_backend`) is the setting where no getter reads the name
directly, no other group holds it, and the getter's object has no attribute of that name of its
own (a draft model's `get_exec().draft.pp_size` is not the pipeline's `pp_size`). Only
implications whose every premise and conclusion read settings of the one validated object are
kept; a premise the round does not know decides nothing.
"""

from __future__ import annotations

import builtins
import re
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal, overload

from rankguard.analysis.doubts import Skippable
from rankguard.analysis.intervals import decided
from rankguard.analysis.launch_paths import LaunchPaths, Premise, may_return, raises
from rankguard.analysis.stability import SELF
from rankguard.model.binding import bind
from rankguard.model.facts import (
    TRUTHY,
    Cond,
    assume,
    complemented,
    refs,
    rename,
)
from rankguard.model.program import Program
from rankguard.model.records import FunctionRecord
from rankguard.model.stores import bound_names
from rankguard.summary.ir import CALL, SUBSCRIPT, CallSite, Segs, Stmt, walk_statements

SETTING = "<setting>"
# Parameter names a validation function receives the configuration under.
_CONFIG_NAME = re.compile(r"^(cfg|conf|config|args|settings|options|opts)$|_(args|cfg|config)$")
# What a getter is not: `getattr(x, n).device` reads an object, not a setting.
NOT_GETTERS = frozenset(dir(builtins)) | {"self", "super()"}
_CHAIN_STEPS = 4  # implications chain (pp => no overlap => ...); a few steps reach every one used

Implication = tuple[tuple[Premise, ...], Cond]


class Settings:
    """Per program: the validation's implications, and the getters each setting is read by."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self._implications: list[Implication] | None = None
        self._readers: dict[str, tuple[Segs, ...]] | None = None
        self._paths: LaunchPaths | None = None
        self._skippable: list[tuple[Implication, str]] | None = None
        self._grouped: frozenset[tuple[str, Segs]] = frozenset()
        self._derived: dict[frozenset[tuple[Cond, Any]], dict[Cond, Any]] = {}

    def _start(self, known: Mapping[Cond, Any]) -> dict[Cond, Any]:
        """The known facts that read settings, over `<setting>.name` refs."""
        start = {}
        for cond, value in known.items():
            canonical = self.canonical(cond)
            if canonical is not None:
                start[canonical] = value
        return start

    def derive(self, known: Mapping[Cond, Any]) -> dict[Cond, Any]:
        """Facts on settings (as the program reads them through getters) that the known ones
        imply under the validation's asserts; only the new ones."""
        start = self._start(known)
        if not start:
            return {}
        key = frozenset(start.items())
        cached = self._derived.get(key)
        if cached is None:
            cached = self._materialise(self._close(complemented(start)), start)
            self._derived[key] = cached
        return {c: v for c, v in cached.items() if c not in known}

    def skippable(self, known: Mapping[Cond, Any]) -> Skippable | None:
        """What the checks the launcher runs only past an early return would add to `derive`
        (`analysis.doubts`), with which checks and early returns; None if nothing. A check
        is named only where it alone, with the trusted ones, gives some of those facts."""
        start = self._start(known)
        skippable = self.implications(skippable=True)
        if not start or not skippable:
            return None
        trusted = self._close(complemented(start))

        def adds(more: Sequence[tuple[Implication, str]]) -> dict[Cond, Any]:
            widened = self._close(dict(trusted), more)
            new = {c: v for c, v in widened.items() if c not in trusted}
            return {c: v for c, v in self._materialise(new, start).items() if c not in known}

        added = adds(skippable)
        if not added:
            return None
        reasons = {why for one, why in skippable if adds([(one, why)]).keys() & added.keys()}
        return Skippable(tuple(sorted(added.items(), key=repr)), "; ".join(sorted(reasons)))

    def _close(
        self, settings: dict[Cond, Any], more: Sequence[tuple[Implication, str]] = ()
    ) -> dict[Cond, Any]:
        """Apply the implications until nothing new follows: forwards (premises hold, so the
        conclusion does) and backwards (the conclusion fails, every premise but one holds, so
        that one fails: `elastic EP => pp_size == 1` and `pp_size > 1` give no elastic EP)."""
        implications = [(i, "") for i in self.implications()] + list(more)
        for _ in range(_CHAIN_STEPS):
            added = False
            for (premises, conclusion), _ in implications:
                held = [decided(c, settings) is side for c, side in premises]
                if all(held):
                    if conclusion in settings or decided(conclusion, settings) is False:
                        continue  # known, or contradicts what the round knows: misread
                    settings.update(complemented(assume(conclusion, True)))
                    settings.setdefault(conclusion, TRUTHY)
                    added = True
                elif held.count(False) == 1 and decided(conclusion, settings) is False:
                    cond, side = premises[held.index(False)]
                    if decided(cond, settings) is None:
                        settings.update(complemented(assume(cond, not side)))
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
    @overload
    def implications(self, skippable: Literal[False] = ...) -> list[Implication]: ...
    @overload
    def implications(self, skippable: Literal[True]) -> list[tuple[Implication, str]]: ...
    def implications(
        self, skippable: bool = False
    ) -> list[Implication] | list[tuple[Implication, str]]:
        """What the validation asserts wherever the launcher runs it; with `skippable`, what
        checks it runs only past an early return assert, each with why it may not run."""
        if self._implications is None or self._skippable is None:
            found: list[tuple[Implication, str]] = []
            for name in sorted(self.program.functions):
                found.extend(self._of_function(self.program.functions[name]))
            # A check under no condition decides nothing alone: the function may still run
            # only for one model or feature, by a path the call graph does not show.
            self._implications = [(p, c) for (p, c), why in found if p and not why]
            self._skippable = [((p, c), why) for (p, c), why in found if p and why]
        return self._skippable if skippable else self._implications

    def _of_function(self, fn: FunctionRecord) -> Iterator[tuple[Implication, str]]:
        """Each implication `fn` asserts, with "" where it runs whenever the launcher does, or
        why a launch may pass it by (`LaunchPaths.passed_by`)."""
        roots = {name for name in bound_names(fn) if _CONFIG_NAME.search(name)}
        paths = self._launch_paths()
        if not roots or not paths.callers.get(fn.qualname):
            return  # one nothing calls may be a hook a registry runs for one model or feature
        skipped = paths.passed_by().get(fn.qualname, "")
        if skipped is None:
            return  # what a function run only in some mode checks holds only in that mode
        own = skipped and _skip_note(fn, skipped)
        for guards, check in _checks(fn.info.body, ()):
            for root in roots:
                premises = tuple((_canonical(c, root), side) for c, side in guards)
                conclusion = _canonical(check, root)
                if conclusion is not None and all(c is not None for c, _ in premises):
                    yield (premises, conclusion), own  # type: ignore[misc]
        for resolved in self.program.calls.get(fn.qualname, ()):
            guards = paths.guards(fn.qualname, resolved.call, past_returns=True)
            early = skipped or paths.skipped_by(fn.qualname, resolved.call)
            for target in resolved.targets:
                callee = self.program.functions.get(target.name)
                if callee is None or target.kind != "call" or guards is None:
                    continue
                why = early and _skip_note(callee, early)
                for root, param in _passed_roots(callee, resolved.call, roots):
                    premises = tuple((_canonical(c, root), side) for c, side in guards)
                    if not all(c is not None for c, _ in premises):
                        continue
                    for check in _opening_checks(callee.info.body):
                        conclusion = _canonical(check, param)
                        if conclusion is not None:
                            yield (premises, conclusion), why  # type: ignore[misc]

    def _launch_paths(self) -> LaunchPaths:
        if self._paths is None:
            self._paths = LaunchPaths(self.program)
        return self._paths

    def readers(self) -> dict[str, tuple[Segs, ...]]:
        """Setting name -> the getter calls it is read through (`get_schedule()`), or the one
        settings group that holds it (`get_exec().moe`, `_grouped`)."""
        if self._readers is None:
            found: dict[str, set[Segs]] = defaultdict(set)
            groups: dict[str, set[Segs]] = defaultdict(set)
            getters: dict[Segs, FunctionRecord] = {}
            for record in self.program.functions.values():
                for stmt in walk_statements(record.info.body):
                    for segs in stmt.reads:
                        if _getter_read(segs):
                            found[segs[2]].add(segs[:2])
                        elif _getter_read(segs[:3]) and _getter_read(segs[:2] + segs[3:]):
                            groups[segs[3]].add(segs[:3])
                            getters.setdefault(segs[:3], record)
            for name, held in groups.items():
                if name not in found and len(held) == 1:
                    (group,) = held
                    if not self._holds_own(getters[group], group[:2], name):
                        found[name].add(group)
            self._readers = {k: tuple(sorted(v)) for k, v in found.items()}
            self._grouped = frozenset(
                (name, getter) for name, held in self._readers.items() for getter in held
            )
        return self._readers

    def _holds_own(self, record: FunctionRecord, getter: Segs, name: str) -> bool:
        """The object `getter` returns (or may: unknown counts) has an attribute `name` of its
        own, so `getter().group.name` is another setting than `name` (a draft model's own)."""
        classes = [v.name for v in self.program.evaluate(record.qualname, getter)]
        if not classes or any(c not in self.program.classes for c in classes):
            return True
        for cls in classes:
            for owner in self.program.mro(cls):
                info = self.program.classes[owner]
                if any(attr == name for attr, _ in info.info.attributes):
                    return True
                for method in info.methods.values():
                    body = self.program.functions[method].info.body
                    if any((SELF, name) in stmt.targets for stmt in walk_statements(body)):
                        return True
        return False

    def canonical(self, cond: Cond) -> Cond | None:
        """`cond` over `<setting>.name` refs, if it reads only settings through getters (or
        through the one group that holds a setting)."""
        self.readers()
        found = list(refs(cond))
        if not found:
            return None
        for segs in found:
            if _getter_read(segs):
                continue
            if len(segs) != 4 or (segs[3], segs[:3]) not in self._grouped:
                return None
        for prefix in {s[:3] if len(s) == 4 else s[:2] for s in found}:
            cond = rename(cond, prefix, (SETTING,))
        return cond


def _checks(body: Sequence[Stmt], guards: tuple[Premise, ...]) -> Iterator[tuple[tuple, Cond]]:
    """(enclosing guards, what must hold) for every assert and every `if C: raise`, up to the
    first statement that may return early (what follows it is itself conditional), past an
    `if C: return` with `C` false among the guards."""
    for stmt in body:
        if stmt.kind == "expr" and stmt.cond:
            yield guards, stmt.cond
        elif stmt.kind == "if" and stmt.cond:
            if raises(stmt.blocks[0]):
                yield from _refuted(stmt.cond, guards)
            else:
                yield from _checks(stmt.blocks[0], (*guards, (stmt.cond, True)))
            if len(stmt.blocks) > 1:
                yield from _checks(stmt.blocks[1], (*guards, (stmt.cond, False)))
        if may_return(stmt):
            if not _early_return(stmt):
                return
            guards = (*guards, (stmt.cond, False))


def _early_return(stmt: Stmt) -> bool:
    """`if C: ...; return` with no `else`: only where `C` holds does the function stop."""
    body = stmt.blocks[0] if stmt.kind == "if" and stmt.cond and stmt.blocks else ()
    orelse = stmt.blocks[1] if len(stmt.blocks) > 1 else ()
    return bool(body) and body[-1].kind == "return" and not orelse


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


def _skip_note(check: FunctionRecord, why: str) -> str:
    """Why a check may not have run: where it is, and how a launch passes it by."""
    return f"the start-up check in `{check.info.qualname}` ({check.path}) did not run: {why}"


def _passed_roots(
    callee: FunctionRecord, call: CallSite, roots: set[str]
) -> Iterator[tuple[str, str]]:
    """(caller's configuration name, callee's parameter) for each root passed as a bare name
    (the receiver of `checker.check(cfg)` binds `self`, not `cfg`)."""
    for param, operand in bind(callee, call).passed.items():
        if operand.ref is not None and len(operand.ref) == 1 and operand.ref[0] in roots:
            yield operand.ref[0], param


def _canonical(cond: Cond, root: str) -> Cond | None:
    """`cond` over `<setting>.name` refs, if it reads only `root.name` settings."""
    found = list(refs(cond))
    if not found or any(len(s) != 2 or s[0] != root for s in found):
        return None
    return rename(cond, (root,), (SETTING,))


def _getter_read(segs: Segs) -> bool:
    """`get_schedule().name`: a setting read through a module-level getter (not a builtin's
    result such as `getattr(x, n).device`). A settings group's field (`get_exec().moe.name`)
    is the setting only where `Settings.readers` finds it unambiguous: groups may repeat field
    names, and by name alone one group's `name` would be taken for another's."""
    return (
        len(segs) == 3
        and segs[1] == CALL
        and segs[0] not in NOT_GETTERS
        and segs[2] not in (CALL, SUBSCRIPT)
    )
