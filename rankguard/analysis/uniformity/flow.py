"""Program-wide uniformity: walk every function once, then solve the flows between them.

The solve is the round-state induction. An attribute is a node fed by every store and every
feed into it, anywhere in the program; it is varying exactly when some varying source reaches
it through those flows (the least fixed point, computed breadth first from the sources). So
state maintained only from uniform inputs (requests broadcast to the group, counts a collective
reduced) stays uniform across rounds, and this is checked over every store, not assumed. Only
the nodes a kept condition or a seed can read from are solved (`_upstream`): on sglang the rest
of the graph cost more than half the solve and its memory.

Group-awareness comes last: a rank id carries its dimension, and `varying(...)` keeps only the
sources that can differ inside the collective's group.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Iterable, Iterator

import networkx as nx

from rankguard.adapters.keyed import KeyedStore
from rankguard.analysis.collectives import CollectiveReach
from rankguard.analysis.reach import FOLLOWED
from rankguard.analysis.uniformity.collectives import CollectiveCalls, Groups
from rankguard.analysis.uniformity.keep import KeptWalks
from rankguard.analysis.uniformity.lattice import (
    FunctionFlow,
    Label,
    Labels,
    Node,
    Source,
    Step,
    merge,
)
from rankguard.analysis.uniformity.roots import size_flags
from rankguard.analysis.uniformity.transfer import Walker
from rankguard.catalogs.rank_sources import RankSourceCatalog
from rankguard.model.load import paused_gc
from rankguard.model.program import Program
from rankguard.summary.ir import CALL, SUBSCRIPT, Stmt, walk_statements

# How many sources a node keeps first come; past that, only one that no kept source covers
# (`_covered`). A plain first-come bound could keep only sources the same over a collective's
# group and drop the one that is not, so the condition looked uniform.
_MAX_SOURCES = 8
Sourced = list[tuple[Source, tuple[Step, ...]]]


class UniformityFlow:
    """Uniformity over a whole program: build once, then ask about conditions."""

    def __init__(
        self,
        program: Program,
        reach: CollectiveReach,
        catalog: RankSourceCatalog,
        reached: Collection[str] = (),
        elsewhere: Collection[str] = (),
        store: KeyedStore | None = None,
        salt: str = "",
    ) -> None:
        """With a `store`, walks are kept across runs (`keep.py`); `salt` names the
        configuration."""
        # Functions the rounds reach: their parameters take values only from callers the rounds
        # also reach (a start-up profiler's synthetic requests are not the round's requests).
        self.reached = frozenset(reached)
        # Functions that run only in another mode's loop (`modes.other_modes_only`) or only on
        # a platform the run does not analyse: what they store is not this round's state.
        self.elsewhere = frozenset(elsewhere)
        self.program = program
        self.reach = reach
        self.sources_catalog = catalog
        self.resolver = program.resolver
        self.calls = CollectiveCalls(program, reach, catalog)
        self.stores = _attribute_stores(program, catalog.feeders)
        self._globals = _module_globals(program)
        self.flags = size_flags(program, catalog, self.calls)
        self.flows: dict[str, FunctionFlow] = {}
        kept = KeptWalks(self, store, salt) if store is not None else None
        for name in _callees_first(program):
            record = program.functions[name]
            self.flows[name] = kept.flow(record) if kept else Walker(self, record).run()
        self.asked = self._asked()  # the only nodes solved: `sources_of` answers no other
        self.sources = self._solve()
        self.seeded = self._seeded()

    def ret_params(self, function: str) -> dict[str, tuple[Step, ...]]:
        """Parameters of `function` whose value reaches its return (known once it was walked;
        callees are walked first, so only recursion sees an empty summary)."""
        flow = self.flows.get(function)
        return flow.ret_params if flow is not None else {}

    def ret_calls(self, function: str) -> dict[str, tuple[Step, ...]]:
        """Parameters of `function` whose call's result reaches its return (`callbacks.py`)."""
        flow = self.flows.get(function)
        return flow.ret_calls if flow is not None else {}

    def returned_items(self, function: str) -> list[dict[str, tuple[Step, ...]]] | None:
        """When every return of `function` gives a tuple of known items: per item, the own
        parameters it holds (`tuples.py`); None otherwise or when not walked yet."""
        flow = self.flows.get(function)
        return flow.ret_items if flow is not None and flow.ret_arity > 0 else None

    def unpacks(self, function: str) -> dict[str, int] | None:
        """The parameters `function` unpacks item by item, each into how many targets at most;
        None when not walked yet."""
        flow = self.flows.get(function)
        return flow.unpacked if flow is not None else None

    def none_only(self, function: str) -> bool:
        """Whether what decides `function`'s answer decides only whether it is `None`."""
        flow = self.flows.get(function)
        return flow is not None and flow.none_only

    def is_global(self, module: str, name: str) -> bool:
        return name in self._globals.get(module, frozenset())

    # -- solving --------------------------------------------------------------------------
    def _solve(self) -> dict[Node, dict[Source, tuple[Step, ...]]]:
        """Breadth first from every source: each node keeps its first few sources, then only
        those no kept one covers (`_covered`), so no group a node varies over is lost. The
        queue holds millions of acyclic tuples: the cyclic collector waits (`paused_gc`).

        Only nodes some question can reach are solved (`_asked`, `_upstream`): what arrives at
        a node comes only from nodes upstream of it, in the same order whether or not the
        others are solved too (each node's sources, cap and cover are its own), so the asked
        nodes' answers are the whole solve's."""
        with paused_gc():
            forward: dict[Label, list[tuple[Node, tuple[Step, ...]]]] = {}
            for name in sorted(self.flows.keys() - self.elsewhere):
                for node, labels in self.flows[name].edges.items():
                    for label, steps in labels.items():
                        forward.setdefault(label, []).append((node, steps))
            wanted = _upstream(forward, self.asked)
            forward = {
                label: [(node, steps) for node, steps in edges if node in wanted]
                for label, edges in forward.items()
                if label in wanted or isinstance(label, Source)
            }
            result: dict[Node, dict[Source, tuple[Step, ...]]] = {}
            kept: dict[tuple[Node, tuple[str, str, str]], set[frozenset[str]]] = {}
            agreed: dict[tuple[Source, str], Source] = {}  # each `agreed_over` made once
            queue: deque[tuple[Node, Source, tuple[Step, ...]]] = deque()
            for source in sorted(label for label in forward if isinstance(label, Source)):
                for node, steps in forward[source]:
                    queue.append((node, source, steps))
            while queue:
                node, source, chain = queue.popleft()
                if node[0] == "over":  # a collective's result: agreed over its groups
                    if (source, node[1]) not in agreed:
                        agreed[source, node[1]] = source.agreed_over(node[1])
                    source = agreed[source, node[1]]
                if node[0] == "arrivals" and source.kind != "inbox" and not source.over:
                    # A size changes with how many messages arrive (from outside the group, or
                    # agreed only within a shard of it), not with their values.
                    continue
                known = result.setdefault(node, {})
                if source in known:
                    continue
                alike = kept.setdefault((node, source.way), set())
                if len(known) >= _MAX_SOURCES and _covered(source, alike):
                    continue
                known[source] = chain
                alike.add(source.agreed)
                for nxt, steps in forward.get(node, ()):
                    queue.append((nxt, source, (*steps, *chain)[:18]))
            return result

    def _asked(self) -> set[Node]:
        """Every node a question may name: the labels of kept conditions (`condition_sources`;
        a flow keeps them only in functions the rounds reach) and of what seeds a generator
        (`_seeded`), the only labels `sources_of` is given."""
        asked: set[Node] = set()
        for name, flow in self.flows.items():
            for labels in flow.conditions.values():
                asked.update(label for label in labels if not isinstance(label, Source))
            if name not in self.elsewhere:
                for labels in flow.seeds.values():
                    asked.update(label for label in labels if not isinstance(label, Source))
        return asked

    def _seeded(self) -> dict[str, list[Source]]:
        """What seeds each generator the program seeds: a draw from it is as uniform as every
        value it is seeded with (each rank draws the same sequence from the same seed). A
        generator seeded nowhere draws this rank's own values."""
        seeds: dict[str, Labels] = {}
        for name in sorted(self.flows.keys() - self.elsewhere):
            for generator, labels in self.flows[name].seeds.items():
                merge(seeds.setdefault(generator, {}), labels)
        return {g: [s for s, _chain in self.sources_of(labels)] for g, labels in seeds.items()}

    def sources_of(self, labels: Labels) -> Sourced:
        """Every source a set of labels stands for, nearest first."""
        found: dict[Source, tuple[Step, ...]] = {}
        for label, steps in labels.items():
            candidates: dict[Source, tuple[Step, ...]]
            if isinstance(label, Source):
                candidates = {label: ()}
            elif label in self.asked:
                candidates = self.sources.get(label, {})
            else:  # never solved: an empty answer would read as uniform
                raise LookupError(f"{label}: not solved (only what conditions and seeds name)")
            for source, chain in candidates.items():
                full = (*steps, *chain)
                if source not in found or len(full) < len(found[source]):
                    found[source] = full
        return sorted(found.items(), key=lambda kv: (len(kv[1]), kv[0]))

    def condition_sources(self, function: str, stmt: Stmt) -> Sourced:
        flow = self.flows.get(function)
        if flow is None:
            return []
        return [
            (source, chain)
            for source, chain in self.sources_of(flow.conditions.get(id(stmt), {}))
            if not (source.kind == "random" and source.generator in self.seeded)
            or self.seeded[source.generator]
        ]

    def varying(self, function: str, stmt: Stmt, groups: Groups) -> Sourced:
        """The condition's sources that can differ between ranks of one of `groups` (their
        dimensions; () when a group cannot be named: then every rank id counts, and no value
        a collective agreed on does)."""
        return [
            (source, chain)
            for source, chain in self.condition_sources(function, stmt)
            if self._differs(source, groups)
        ]

    def _differs(self, source: Source, groups: Groups, seen: frozenset[str] = frozenset()) -> bool:
        """Whether the source can differ inside one of `groups`: not where a collective agreed
        on it over groups that cover that one, nor where its own kind is the same there."""
        catalog = self.sources_catalog
        if source.kind == "random" and source.generator in self.seeded:
            if source.generator in seen:  # seeded from its own draws: as they are
                return False
            seen = seen | {source.generator}
            return any(self._differs(s, groups, seen) for s in self.seeded[source.generator])
        if source.over:
            over = source.over.split(",")
            groups = tuple(g for g in groups if not catalog.within(g, over))
            if not groups:
                return False
        if source.kind == "rank-id":
            dimension = source.dimension or None
            return not groups or any(not catalog.rank_uniform_over(dimension, g) for g in groups)
        return True


def _upstream(
    forward: dict[Label, list[tuple[Node, tuple[Step, ...]]]], asked: set[Node]
) -> set[Label]:
    """`asked` and every label from which a flow reaches one of them."""
    backward: dict[Node, list[Label]] = {}
    for label, edges in forward.items():
        for node, _steps in edges:
            backward.setdefault(node, []).append(label)
    found: set[Label] = set(asked)
    stack: list[Label] = list(asked)
    while stack:
        for label in backward.get(stack.pop(), ()):  # type: ignore[call-overload]
            if label not in found:
                found.add(label)
                stack.append(label)
    return found


def _covered(source: Source, alike: Collection[frozenset[str]]) -> bool:
    """Whether a kept source of the same way (`Source.way`), agreed over one of `alike`'s
    group sets, varies over every group `source` does, at this node and wherever both flow on:
    agreed over no more groups, and over some iff `source` is (a size counts arrivals only of
    agreed values, `_solve`). Unions with the groups later collectives agree over keep both.
    The solve keeps each group set once (a set): the same set covers at once."""
    agreed = source.agreed
    return agreed in alike or any(
        other <= agreed and bool(other) == bool(agreed) for other in alike
    )


def _callees_first(program: Program) -> list[str]:
    """Function names, callees before callers (strongly connected parts in any order)."""
    graph = nx.DiGraph()
    graph.add_nodes_from(sorted(program.functions))
    for caller, resolved in program.calls.items():
        if caller not in program.functions:
            continue
        for item in resolved:
            for target in item.targets:
                known = target.name in program.functions and target.name != caller
                if target.kind in FOLLOWED and known:
                    graph.add_edge(caller, target.name)
    condensed = nx.condensation(graph)
    order: list[str] = []
    for component in reversed(list(nx.lexicographical_topological_sort(condensed))):
        order.extend(sorted(condensed.nodes[component]["members"]))
    return order


def _targets(stmts: Iterable[Stmt], feeders: frozenset[str]) -> Iterator[str]:
    for stmt in stmts:
        for target in stmt.targets:
            cut = [s for s in target if s != SUBSCRIPT]
            if len(cut) >= 2 and CALL not in cut:
                yield cut[-1]
        for call in stmt.calls:
            if len(call.target) >= 3 and call.target[-1] in feeders:
                yield call.target[-2]


def _attribute_stores(program: Program, feeders: frozenset[str]) -> dict[str, frozenset[str]]:
    """Attribute names each function assigns or feeds (a call into it forgets those paths)."""
    return {
        name: frozenset(_targets(walk_statements(record.info.body), feeders))
        for name, record in program.functions.items()
    }


def _module_globals(program: Program) -> dict[str, frozenset[str]]:
    """Each module's globals: what its body assigns, and what its functions declare `global`."""
    found: dict[str, set[str]] = {module: set() for module in program.modules}
    for record in program.functions.values():
        names = found.get(record.module)
        if names is None:
            continue
        if record.is_module_body:
            names.update(
                t[0]
                for s in record.info.body
                if s.kind == "assign"
                for t in s.targets
                if len(t) == 1
            )
        names.update(record.info.global_names)
    return {module: frozenset(names) for module, names in found.items()}
