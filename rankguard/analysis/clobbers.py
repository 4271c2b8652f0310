"""What a call may write, so that the facts a path holds on what it writes are forgotten there.

`if batch.mode.is_idle():` makes `batch.mode` IDLE inside, and an inner `if batch.mode.
is_extend():` is cut; but `relabel(batch)` between the two may set the mode, and then the inner
branch runs. Past each call the walk forgets (`forget_past`):

- a fact reading an attribute that something the call may run (its targets, and whatever they
  call, at any depth) assigns on an object of that class (`Stability.writers`, which judges
  writes by name and, where the model knows it, by class; the class is taken for the fact's
  root, `self` or an annotated parameter, or what a settings getter returns, and is unknown
  further in), or a module global that something it may run assigns under `global`, read
  bare or as the root of the attribute (`_CONFIG.mode`);
- every fact on an attribute of an object the call may change in ways no name says: handed to
  code the model cannot see (no target in the program, or a library's, save builtins that
  write nothing), given to `setattr` with a computed name, stored into through `x.__dict__[k]`
  or `vars(x)[k]` (`vars(...)` keeps no argument in the records: any object), here or in a
  callee that receives it (through a parameter, the receiver, or a local bound to one of
  their attributes or elements). A reference passed that way loses the facts on what lies
  below it and its own truth (a list may be emptied), not its identity; and only facts that
  read an attribute some code of the program reassigns after construction: one nothing
  reassigns is settled (`Stability.settled`), which the round's facts trust through every
  call already, unseen code included. What the call changes itself (`xs.append(x)`,
  `setattr(x, name, v)`), or a callee at any depth gives `setattr` a computed name or stores
  into through `__dict__` (`put(batch, key, v)`), ends every fact below it, settled or not.

A call that writes nothing a fact reads keeps the fact (`resize(batch)` that sets `size`
leaves `batch.mode` IDLE). Code only another platform runs is not left out here (more is
forgotten, never less); a property getter the walk enters on a read is not asked.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import networkx as nx

from rankguard.analysis.call_writes import (
    Shape,
    attribute_refs,
    bare_names,
    local_wild,
    mapped,
    mutated,
    named_write,
    own,
    reflected,
    shape,
    stored_wild,
    under,
    under_named,
)
from rankguard.analysis.reach import FOLLOWED
from rankguard.analysis.stability import Stability
from rankguard.model.facts import Cond
from rankguard.model.program import Program
from rankguard.model.records import Target
from rankguard.summary.ir import CALL, SUBSCRIPT, CallSite, Segs, walk_statements

_GLOBAL = "<global>"
_KEPT = 1 << 14  # facts objects remembered at once


class Clobbers:
    """Per program: what each function may write, directly or through what it calls."""

    def __init__(self, program: Program, stability: Stability) -> None:
        self.program = program
        self.stability = stability
        self._bits: dict[str, int] | None = None  # writing function -> its bit
        self._below: dict[str, int] = {}  # function -> the writing functions it may run
        self._masks: dict[tuple[str | None, str], int] = {}
        self._globals: dict[str, list[str]] = {}  # global name -> functions assigning it
        self._wild: dict[str, frozenset[Segs]] | None = None
        self._reflected: dict[str, frozenset[Segs]] | None = None
        self._roots: dict[tuple[str, Segs], str | None] = {}
        # Keyed by identity, each holding its key's object (so no other can take its id).
        self._known: dict[int, tuple[Mapping[Cond, Any], tuple[Any, ...]]] = {}
        self._calls: dict[int, tuple[CallSite, Any]] = {}
        self._facts: dict[tuple[str, int], tuple[Cond, tuple[int, bool]]] = {}

    # -- the walk's question -------------------------------------------------------------------
    def forget_past(
        self,
        function: str,
        call: CallSite,
        targets: Sequence[Target],
        known: Mapping[Cond, Any],
    ) -> Mapping[Cond, Any]:
        """`known` without what the call may make untrue (`known` itself if nothing)."""
        if not known:
            return known
        relevant = self._relevant(known)
        if not relevant:
            return known
        below, wild, named, changed = self._effects(function, call, targets)
        if not (below or wild or named or changed):
            return known
        stale = set()
        for cond, attributes in relevant:
            mask, unsettled = self._fact(function, cond, attributes)
            if (
                (below and mask & below)
                or (wild and unsettled and under(cond, attributes, wild))
                or (named and under_named(cond, named))
                or (changed and under(cond, attributes, changed, 1))
            ):
                stale.add(id(cond))
        return {c: v for c, v in known.items() if id(c) not in stale} if stale else known

    def _relevant(self, known: Mapping[Cond, Any]) -> tuple[tuple[Cond, tuple[Segs, ...]], ...]:
        """The facts a call may end (those reading an attribute or a bare name), once per
        facts object (the walk shares one between states until it changes)."""
        kept = self._known.get(id(known))
        if kept is not None and kept[0] is known:
            return kept[1]
        found = []
        for cond in known:
            attributes = attribute_refs(cond)
            if attributes or bare_names(cond):
                found.append((cond, attributes))
        if len(self._known) > _KEPT:
            self._known.clear()
        self._known[id(known)] = (known, tuple(found))
        return self._known[id(known)][1]

    def _effects(
        self, function: str, call: CallSite, targets: Sequence[Target]
    ) -> tuple[int, tuple[Segs, ...], Segs | None, tuple[Segs, ...]]:
        """(the writers it may run, what it may change any attribute of, the attribute it sets
        by name, what it changes itself: the container it mutates, the object it gives
        `setattr` a computed name), once per call site (the call keeps its id)."""
        kept = self._calls.get(id(call))
        if kept is not None and kept[0] is call:
            return kept[1]
        self._table()
        below = 0
        for target in targets:
            ran = self._runs(target)
            if ran:
                below |= self._below.get(ran, 0)
        changed = [*filter(None, (mutated(call), *reflected(call)))]
        functions, inner_table = self.program.functions, self._reflected_table()
        for target in targets:
            inner = inner_table.get(target.name) if target.name in functions else None
            if inner:
                changed.extend(mapped(functions[target.name], call, inner))
        found = (below, self.wild_of_call(function, call, targets), named_write(call))
        self._calls[id(call)] = (call, (*found, tuple(changed)))
        return self._calls[id(call)][1]

    def _fact(self, function: str, cond: Cond, attributes: tuple[Segs, ...]) -> tuple[int, bool]:
        """The writers of what the fact reads, as `function` reads it, and whether it reads an
        attribute some code reassigns after construction (once per fact there). Code the model
        cannot see is taken to write only those: an attribute no code of the program
        reassigns is one the round facts trust already (`analysis.context`)."""
        key = (function, id(cond))
        kept = self._facts.get(key)
        if kept is not None and kept[0] is cond:
            return kept[1]
        mask, unsettled = 0, False
        for segs in attributes:
            mask |= self._global_mask(segs[0])  # `_CONFIG.mode`: the global rebound
            for index in range(1, len(segs)):
                attr = segs[index]
                if attr not in (CALL, SUBSCRIPT):
                    owner = self._owner(function, segs[:index])
                    mask |= self._mask(owner, attr)
                    unsettled = unsettled or not self.stability.settled(owner, attr)
        for name in bare_names(cond):
            mask |= self._global_mask(name)
        self._facts[key] = (cond, (mask, unsettled))
        return mask, unsettled

    def forget_stored(self, known: Mapping[Cond, Any], target: Segs) -> Mapping[Cond, Any]:
        """Past `x.__dict__[k] = v` or `vars(x)[k] = v`: any attribute of `x` (of any object,
        for `vars`) may be new."""
        wild = stored_wild(target)
        if wild is None:
            return known
        stale = {id(c) for c in known if under(c, attribute_refs(c), (wild,), 1)}
        return {c: v for c, v in known.items() if id(c) not in stale} if stale else known

    # -- named writes --------------------------------------------------------------------------
    def _table(self) -> dict[str, int]:
        """Each function that writes an attribute (or a global) gets a bit; each function the
        bits of every writer it may run, itself included, over strongly connected components
        of the call graph."""
        if self._bits is not None:
            return self._bits
        functions = self.program.functions
        writers: set[str] = set()
        for sites in self.stability.writes().values():
            writers.update(f for f, _ in sites)
        for name in sorted(functions):
            info = functions[name].info
            if info.global_names:
                declared = set(info.global_names)
                for stmt in walk_statements(info.body):
                    for target in stmt.targets:
                        if len(target) == 1 and target[0] in declared:
                            self._globals.setdefault(target[0], []).append(name)
                            writers.add(name)
        self._bits = bits = {name: 1 << i for i, name in enumerate(sorted(writers))}
        edges = self._edges()
        graph = nx.DiGraph()
        graph.add_nodes_from(sorted(functions))
        graph.add_edges_from((caller, callee) for caller, out in edges.items() for callee in out)
        condensed = nx.condensation(graph)
        for part in reversed(list(nx.topological_sort(condensed))):  # callees first
            component = sorted(condensed.nodes[part]["members"])
            mask = 0
            members = set(component)
            for name in component:
                mask |= bits.get(name, 0)
                for callee in edges.get(name, ()):
                    if callee not in members:
                        mask |= self._below[callee]
            for name in component:
                self._below[name] = mask
        return bits

    def _edges(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for caller, resolved in self.program.calls.items():
            found = {
                ran
                for r in resolved
                for t in r.targets
                if t.kind in FOLLOWED and not r.call.deferred and (ran := self._runs(t))
            }
            if found:
                out[caller] = sorted(found)
        return out

    def _runs(self, target: Target) -> str | None:
        """The program function a target runs: itself, or a `__post_init__` a class without an
        `__init__` of the program runs when constructed (a dataclass's); None for none."""
        program = self.program
        if target.name in program.functions:
            return target.name
        if target.via != "constructor" or target.name not in program.classes:
            return None
        for cls in program.mro(target.name):
            method = program.classes[cls].methods.get("__post_init__")
            if method:
                return method
        return None

    def _mask(self, cls: str | None, attr: str) -> int:
        key = (cls, attr)
        found = self._masks.get(key)
        if found is None:
            bits = self._table()
            found = 0
            for name in self.stability.writers(cls, attr):
                found |= bits.get(name, 0)
            self._masks[key] = found
        return found

    def _global_mask(self, name: str) -> int:
        found = self._masks.get((_GLOBAL, name))
        if found is None:
            bits = self._table()
            found = 0
            for function in self._globals.get(name, ()):
                found |= bits[function]
            self._masks[(_GLOBAL, name)] = found
        return found

    def _owner(self, function: str, prefix: Segs) -> str | None:
        """The one program class the model gives the object holding a fact's attribute, where
        that is its root (`self`, an annotated parameter) or what a settings getter returns
        (`get_config()`); None further in, or where not one class."""
        if len(prefix) == 1 or (len(prefix) == 2 and prefix[1] == CALL):
            return self._root_class(function, prefix)
        return None

    def _root_class(self, function: str, root: Segs) -> str | None:
        key = (function, root)
        if key not in self._roots:
            values = self.program.evaluate(function, root)
            names = {v.name for v in values if v.kind == "instance"}
            one = len(values) == len(names) == 1 and next(iter(names)) in self.program.classes
            self._roots[key] = next(iter(names)) if one else None
        return self._roots[key]

    # -- writes no name says -------------------------------------------------------------------
    def wild_of_call(
        self, function: str, call: CallSite, targets: Sequence[Target]
    ) -> tuple[Segs, ...]:
        """What the call may change any attribute of, in the caller's terms."""
        found = list(local_wild(call, targets, self.program))
        wild = self._wild_table()
        functions = self.program.functions
        for target in targets:
            inner = wild.get(target.name) if target.name in functions else None
            if inner:
                found.extend(mapped(functions[target.name], call, inner))
        return tuple(found)

    def _wild_table(self) -> dict[str, frozenset[Segs]]:
        """function -> what it may change any attribute of, rooted at its parameters (or
        `ANY`), over every call it makes, to a fixed point."""
        if self._wild is None:
            self._wild = self._closed(wild=True)
        return self._wild

    def _reflected_table(self) -> dict[str, frozenset[Segs]]:
        """function -> what it, or anything it calls, gives `setattr` a computed name or
        stores into through `__dict__` (`put(obj, name, v)`): settled attributes included."""
        if self._reflected is None:
            self._reflected = self._closed(wild=False)
        return self._reflected

    def _closed(self, wild: bool) -> dict[str, frozenset[Segs]]:
        """Each function's own references, then what its callees gained, to a fixed point.
        Only what a callee gained since it was last taken in goes to its callers (`mapped`
        and `own` answer a union with the union of their answers, so the fixed point is the
        one remapping every callee's whole set gives), and each function's parameters and
        aliases are read once. Remapping whole sets and reading aliases at every step made
        this table most of a warm sglang check after one edit (`benchmarks/README`)."""
        program, functions = self.program, self.program.functions
        table: dict[str, set[Segs]] = {}
        shapes: dict[str, Shape] = {}
        callers: dict[str, list[tuple[str, CallSite]]] = defaultdict(list)
        for name in sorted(functions):
            record = functions[name]
            found, callees = local_references(program, name, wild)
            for callee, call in callees:
                callers[callee].append((name, call))
            known = shapes[name] = shape(record)
            table[name] = own(record, found, known)
        fresh = {n: set(w) for n, w in table.items() if w}  # gained, not yet taken in
        work = sorted(fresh)
        while work:
            callee = work.pop()
            inner = fresh.pop(callee)
            for caller, call in callers.get(callee, ()):
                record = functions[caller]
                found = own(record, mapped(functions[callee], call, inner), shapes[caller])
                grown = found - table[caller]
                if grown:
                    table[caller] |= grown
                    if caller in fresh:
                        fresh[caller] |= grown
                    else:
                        fresh[caller] = grown
                        work.append(caller)
        return {n: frozenset(w) for n, w in table.items() if w}


def local_references(
    program: Program, name: str, wild: bool
) -> tuple[set[Segs], list[tuple[str, CallSite]]]:
    """What `name`'s own statements and calls may change any attribute of (`wild`), or hand
    `setattr` a computed name (not `wild`), before any callee's is mapped in; and the program
    functions each call runs, with the call, through which callees' sets come in."""
    functions = program.functions
    found: set[Segs] = set()
    callees: list[tuple[str, CallSite]] = []
    for stmt in walk_statements(functions[name].info.body):
        for target in stmt.targets:
            stored = stored_wild(target)
            if stored is not None:
                found.add(stored)
        for call in stmt.calls:
            if call.deferred:
                continue
            targets = program.targets_of(name, call)
            found.update(local_wild(call, targets, program) if wild else reflected(call))
            callees += [
                (t.name, call) for t in targets if t.kind in FOLLOWED and t.name in functions
            ]
    return found, callees
