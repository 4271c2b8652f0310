"""A kept uniformity walk as stored (`keep.KeptWalks`): its trace, its flow with conditions
keyed by statement position, and the first line of every function the flow names, so that on
the way out each line moves by as much as its function moved."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from rankguard.analysis.uniformity.lattice import FunctionFlow, Labels, Source, Step
from rankguard.model.records import FunctionRecord
from rankguard.summary.ir import walk_statements

Question = tuple[Any, ...]
Trace = list[tuple[Question, Any]]


class Entry:
    """A kept flow: its trace, the flow (conditions by statement position) and the first line
    of every function its steps, sources and nodes name, as they were."""

    def __init__(
        self, trace: Trace, flow: FunctionFlow, starts: dict[str, int], resolved: str | None
    ) -> None:
        self.trace = trace
        self.flow = flow
        self.starts = starts
        self.resolved = resolved  # the resolution its answers were last given under

    @classmethod
    def of(
        cls,
        record: FunctionRecord,
        trace: Trace,
        flow: FunctionFlow,
        start: Callable[[str], int],
        resolved: str | None,
    ) -> Entry | None:
        position = {id(s): i for i, s in enumerate(walk_statements(record.info.body))}
        if not flow.conditions.keys() <= position.keys():
            return None  # a condition outside its own statements: not kept
        conditions = {position[k]: v for k, v in flow.conditions.items()}
        named = {record.qualname, *_named(flow)}
        starts = {f: start(f) for f in named}
        return cls(trace, replace(flow, conditions=conditions), starts, resolved)

    def flow_for(self, record: FunctionRecord, start: Callable[[str], int]) -> FunctionFlow:
        moved = {f: start(f) - line for f, line in self.starts.items()}
        flow = self.flow
        if any(moved.values()):
            flow = _Lines(moved.__getitem__).flow(flow)
        statements = list(walk_statements(record.info.body))
        conditions = {id(statements[k]): v for k, v in flow.conditions.items()}
        return replace(flow, conditions=conditions)


def _named(flow: FunctionFlow) -> set[str]:
    """Every function a flow's steps, sources and `over` nodes name."""
    named: set[str] = set()

    def steps(found: tuple[Step, ...]) -> None:
        named.update(step.function for step in found)

    def labels(found: Labels) -> None:
        for label, chain in found.items():
            if isinstance(label, Source):
                named.add(label.function)
            elif label[0] == "over":
                named.add(label[2])
            steps(chain)

    for node, found in flow.edges.items():
        if node[0] == "over":
            named.add(node[2])
        labels(found)
    for found in (*flow.conditions.values(), *flow.seeds.values()):
        labels(found)
    for chain in (*flow.ret_params.values(), *flow.ret_calls.values()):
        steps(chain)
    for item in flow.ret_items:
        for chain in item.values():
            steps(chain)
    return named


class _Lines:
    """Moves every line a flow names by how far its function moved (`by`)."""

    def __init__(self, by: Callable[[str], int]) -> None:
        self.by = by

    def step(self, step: Step) -> Step:
        moved = self.by(step.function)
        return replace(step, line=step.line + moved) if moved else step

    def steps(self, steps: tuple[Step, ...]) -> tuple[Step, ...]:
        return tuple(self.step(s) for s in steps)

    def label(self, label: Any) -> Any:
        if isinstance(label, Source):
            moved = self.by(label.function)
            return replace(label, line=label.line + moved) if moved else label
        if label[0] == "over":  # ("over", groups, function, line, tag)
            moved = self.by(label[2])
            return (*label[:3], str(int(label[3]) + moved), *label[4:]) if moved else label
        return label

    def labels(self, labels: Labels) -> Labels:
        return {self.label(k): self.steps(v) for k, v in labels.items()}

    def flow(self, flow: FunctionFlow) -> FunctionFlow:
        return replace(
            flow,
            edges={self.label(n): self.labels(v) for n, v in flow.edges.items()},
            conditions={k: self.labels(v) for k, v in flow.conditions.items()},
            ret_params={k: self.steps(v) for k, v in flow.ret_params.items()},
            ret_calls={k: self.steps(v) for k, v in flow.ret_calls.items()},
            seeds={k: self.labels(v) for k, v in flow.seeds.items()},
            ret_items=[{k: self.steps(v) for k, v in item.items()} for item in flow.ret_items],
        )
