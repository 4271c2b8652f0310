"""The whole-program model that every analysis reads.

Built once from per-file summaries (`build`), it holds every module, class and function under a
qualified name, each call site's resolved targets (kept unresolved, with their text, when we
cannot tell), and a networkx call graph whose edges say how they were found: `call`, `callback`
(a callable passed or stored as a value: it runs later, elsewhere) or `fallback` (the only class
that defines a method of that name).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import networkx as nx

from rankguard.core.errors import ErrorRecord
from rankguard.model.records import ClassRecord, FunctionRecord, ModuleRecord, Resolved, Target
from rankguard.model.resolve import Resolver
from rankguard.summary.ir import CallSite, Segs
from rankguard.summary.lineless import digest, function_digests


@dataclass
class Program:
    root: str
    modules: dict[str, ModuleRecord]
    functions: dict[str, FunctionRecord]
    classes: dict[str, ClassRecord]
    errors: list[ErrorRecord]
    calls: dict[str, list[Resolved]]  # function qualname -> its call sites, resolved
    callbacks: dict[str, list[tuple[str, int]]]  # function -> (callable it passes on, line)
    unresolved: list[tuple[str, str, str, int]]  # (caller, text, path, line)
    subclasses: dict[str, set[str]]
    # The modules' interfaces (`model.load.interface_key`): with a function's line-free
    # record, what its resolution is a function of (`resolution_identity`).
    interfaces: str = ""
    _resolver: Resolver | None = field(default=None, repr=False)
    _graph: nx.MultiDiGraph | None = field(default=None, repr=False)
    _mro: dict[str, list[str]] = field(default_factory=dict, repr=False)
    _targets: dict[str, dict[int, tuple[Target, ...]]] = field(default_factory=dict, repr=False)
    _nested_bound: dict[str, frozenset[str]] | None = field(default=None, repr=False)
    _module_names: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def graph(self) -> nx.MultiDiGraph:
        """The call graph, built on first use from the resolved calls (most audits only walk
        `calls`, so a warm run does not pay for a few hundred thousand edge dictionaries)."""
        if self._graph is None:
            graph = nx.MultiDiGraph()
            graph.add_nodes_from(sorted(self.functions))
            for caller in sorted(self.calls):
                path = self.functions[caller].path
                for call, targets in self.calls[caller]:
                    graph.add_edges_from(
                        (
                            caller,
                            t.name,
                            {
                                "kind": t.kind,
                                "via": t.via,
                                "path": path,
                                "line": call.line,
                                "col": call.col,
                            },
                        )
                        for t in targets
                    )
                graph.add_edges_from(
                    (
                        caller,
                        name,
                        {"kind": "callback", "via": None, "path": path, "line": line, "col": 0},
                    )
                    for name, line in self.callbacks.get(caller, ())
                )
            self._graph = graph
        return self._graph

    @property
    def resolver(self) -> Resolver:
        """The resolver, created on first use (a program loaded from the resolution cache has
        none until an analysis asks for one)."""
        if self._resolver is None:
            self._resolver = Resolver(self)
        return self._resolver

    def evaluate(self, caller: str, segs: Segs) -> tuple:
        """The values (`rankguard.model.values.Value`) a reference may have inside `caller`."""
        record = self.functions.get(caller)
        return self.resolver.evaluate(record, segs) if record is not None else ()

    def resolve_target(self, caller: str, target: Segs) -> list[str]:
        """Functions a call spelled `target` inside `caller` may invoke (empty: unresolved)."""
        record = self.functions.get(caller)
        if record is None:
            return []
        call = CallSite(target, 0, 0)
        return sorted(
            {t.name for t in self.resolver.call_targets(record, call) if t.name in self.functions}
        )

    def resolved_calls(self, function: str) -> list[Resolved]:
        return self.calls.get(function, [])

    def resolution_identity(self, function: str) -> str | None:
        """What resolving anything in `function` is a function of: the modules' interfaces,
        the names its module defines, and its line-free record with those of the functions
        enclosing it (`model.load` reuses resolved calls on the same grounds). None when the
        program was not loaded with its interfaces."""
        record = self.functions.get(function)
        if not self.interfaces or record is None:
            return None
        module = self.modules[record.module]
        digests = function_digests(module.summary)
        names = self._module_names.get(record.module)
        if names is None:
            names = self._module_names[record.module] = digest(*sorted(digests))
        own = digests.get(record.info.qualname)
        return digest(self.interfaces, names, own) if own is not None else None

    def targets_of(self, function: str, call: CallSite) -> tuple[Target, ...]:
        """The resolved targets of one call site of `function` (indexed once per function)."""
        table = self._targets.get(function)
        if table is None:
            table = self._targets[function] = {
                id(r.call): r.targets for r in self.calls.get(function, ())
            }
        return table.get(id(call), ())

    def binds(self, qual: str, name: str) -> bool:
        """Whether `name` may be bound again inside function `qual`: its own body binds it in
        any form (`FunctionInfo.bound`), or a function nested in it does, which may rebind it
        through `nonlocal` (the summaries keep no `nonlocal`, so any nested binding counts)."""
        record = self.functions.get(qual)
        if record is not None and name in record.info.bound:
            return True
        if self._nested_bound is None:
            nested: dict[str, set[str]] = {}
            for inner, found in self.functions.items():
                parts = inner.split(".<locals>.")
                for depth in range(1, len(parts)):
                    nested.setdefault(".<locals>.".join(parts[:depth]), set()).update(
                        found.info.bound
                    )
            self._nested_bound = {scope: frozenset(names) for scope, names in nested.items()}
        return name in self._nested_bound.get(qual, ())

    def mro(self, cls: str) -> list[str]:
        """Python's C3 linearisation over the classes we know (bases outside the program are
        left out); where C3 fails, as for an inconsistent hierarchy, depth-first order."""
        cached = self._mro.get(cls)
        if cached is None:
            cached = self._mro[cls] = self._linearise(cls, frozenset())
        return cached

    def _linearise(self, cls: str, seen: frozenset[str]) -> list[str]:
        if cls not in self.classes or cls in seen:
            return []
        bases = [b for b in self.classes[cls].bases if b in self.classes and b not in seen]
        seqs = [self._linearise(b, seen | {cls}) for b in bases] + [list(bases)]
        order = [cls]
        while seqs := [s for s in seqs if s]:
            head = next((s[0] for s in seqs if not any(s[0] in t[1:] for t in seqs)), None)
            if head is None:  # no consistent order: keep depth-first for the rest
                for seq in seqs:
                    order += [c for c in seq if c not in order]
                return order
            order.append(head)
            seqs = [s[1:] if s[0] == head else s for s in seqs]
        return order

    def function_at(self, path: str, line: int) -> FunctionRecord | None:
        """The innermost function whose body holds `line` of `path`."""
        best: FunctionRecord | None = None
        for record in self.functions.values():
            info = record.info
            inside = record.path == path and info.line <= line <= info.end_line
            if inside and (best is None or info.line >= best.info.line):
                best = record
        return best

    def iter_functions(self) -> Iterator[FunctionRecord]:
        for name in sorted(self.functions):
            yield self.functions[name]
