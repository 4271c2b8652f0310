"""Where the divergence rule's flow graph ties state into one knot (issue #18).

A condition varies when a varying source reaches it through the program-wide flow graph
(`rankguard/analysis/uniformity/flow.py`: parameters, returns, attributes and containers as
nodes, each walk's flows as edges). On sglang 0.5.23 almost every false finding sits downstream
of one strongly connected component of that graph that spans the scheduler's state, the KV pools
and the model's layers: a source that enters it anywhere reaches everything it feeds, so taking
one source away lets the next one in (the eleventh session's "no single cut moves a site"). This
prints that component: its size, how many varying conditions read it or what it feeds, which
sources reach it, and the flows that enter it and that lead back out of the nodes of one module
prefix (`--split`), each named by the step that makes it (function, file:line, text).

A collective's agreement node (`over`) is left out: what passes one is marked agreed by the
solve, so the knot is what stays tied without any collective. The run is the ordinary `check`
(`--select rank-divergent-collective`), in process, with the flow graph kept.

    python3 benchmarks/uniformity_knot.py SRC --config two.toml [--top 25] [--split PREFIX ...]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from collections import Counter
from collections.abc import Iterable
from typing import Any

import networkx as nx

from rankguard.analysis.uniformity import flow as flow_module
from rankguard.analysis.uniformity.lattice import Source, Step
from rankguard.cli import main as rankguard_main


def _run(argv: list[str]) -> tuple[Any, list[tuple[str, int, list[Any]]]]:
    """`rankguard check` in process; the flow it built and each condition found varying."""
    kept: dict[str, Any] = {}
    varying: list[tuple[str, int, list[Any]]] = []
    init, ask = flow_module.UniformityFlow.__init__, flow_module.UniformityFlow.varying

    def keep(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        kept["flow"] = self

    def record(self: Any, function: str, stmt: Any, groups: Any) -> Any:
        found = ask(self, function, stmt, groups)
        if found:
            labels = self.flows[function].conditions.get(id(stmt), {})
            varying.append((function, stmt.line, list(labels)))
        return found

    flow_module.UniformityFlow.__init__ = keep  # type: ignore[method-assign]
    flow_module.UniformityFlow.varying = record  # type: ignore[method-assign]
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
            rankguard_main(["check", *argv, "--select", "rank-divergent-collective"])
    finally:
        flow_module.UniformityFlow.__init__ = init  # type: ignore[method-assign]
        flow_module.UniformityFlow.varying = ask  # type: ignore[method-assign]
    if "flow" not in kept:
        sys.exit("no uniformity flow was built (no round reached, or the results were cached)")
    return kept["flow"], varying


def _agreement(label: Any) -> bool:
    return isinstance(label, tuple) and label[:1] == ("over",)


def _graph(flow: Any) -> nx.DiGraph:
    """Every flow edge label -> node, with the first step that carried it."""
    graph = nx.DiGraph()
    for function_flow in flow.flows.values():
        for node, labels in function_flow.edges.items():
            if _agreement(node):
                continue
            for label, steps in labels.items():
                if not _agreement(label):
                    graph.add_edge(label, node, step=steps[0] if steps else None)
    return graph


def _closure(graph: nx.DiGraph, start: Iterable[Any], backwards: bool = False) -> set[Any]:
    seen = set(start)
    stack = list(seen)
    while stack:
        node = stack.pop()
        for nxt in graph.predecessors(node) if backwards else graph.successors(node):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def _where(step: Step | None) -> str:
    if step is None:
        return "(no step)"
    return f"{step.function} ({step.path}:{step.line}) {step.text}"


def _owner(node: Any) -> str:
    return node[1] if isinstance(node, tuple) and len(node) > 1 and isinstance(node[1], str) else ""


def report(
    flow: Any, varying: list[tuple[str, int, list[Any]]], top: int, split: list[str]
) -> None:
    """Print the knot's tables (see the module docstring)."""
    graph = _graph(flow)
    knot = max(nx.strongly_connected_components(graph), key=len)
    kinds = Counter(node[0] for node in knot)
    print(f"flow graph: {graph.number_of_nodes()} nodes, {graph.number_of_edges()} edges")
    print(f"largest knot: {len(knot)} nodes {dict(kinds.most_common())}")
    fed = _closure(graph, knot)
    conditions = {(function, line): labels for function, line, labels in varying}
    downstream = sum(1 for labels in conditions.values() if any(lab in fed for lab in labels))
    print(f"varying conditions: {len(conditions)}; reading the knot or what it feeds: {downstream}")
    upstream = _closure(graph, knot, backwards=True)
    sources = Counter(n.kind for n in graph.nodes if isinstance(n, Source) and n in upstream)
    print(f"sources reaching the knot: {dict(sources.most_common())}")
    entries: Counter[str] = Counter()
    for node in knot:
        for label in graph.predecessors(node):
            if label not in knot:
                entries[_where(graph.edges[label, node]["step"])] += 1
    print(f"\nflows entering the knot ({sum(entries.values())}), by the step that makes them:")
    for where, count in entries.most_common(top):
        print(f"  {count:5d}  {where}")
    if split:
        inside = {n for n in knot if _owner(n).startswith(tuple(split))}
        rest = knot - inside
        back: Counter[str] = Counter()
        for node in rest:
            for label in graph.predecessors(node):
                if label in inside:
                    back[_where(graph.edges[label, node]["step"])] += 1
        print(f"\nknot nodes under {', '.join(split)}: {len(inside)}; flows from them back: ")
        for where, count in back.most_common(top):
            print(f"  {count:5d}  {where}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=25, help="rows per table")
    parser.add_argument("--split", nargs="*", default=[], help="module prefixes of one side")
    ours, check_args = parser.parse_known_args(argv)
    flow, varying = _run(check_args)
    report(flow, varying, ours.top, ours.split)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
