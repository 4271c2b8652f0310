"""The value lattice: a value is uniform (no labels) or varying (labels naming its sources).

A label is either a `Source` (where a varying value is produced) or a symbolic `Node` standing
for a value that comes from outside the function being walked (a parameter, an attribute, a
global, a callee's result); the program-wide solve (`flow.py`) tells which sources each node
stands for. Each label carries the local steps that carried it, so a finding can explain itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any


@dataclass(frozen=True, order=True)
class Source:
    """Where a varying value is produced; `dimension` is a rank id's group dimension ("" when it
    names none, which varies with every group); `generator` names the generator a random draw
    reads (uniform when the program seeds it alike on every rank); `over` the groups collectives
    agreed on what it became (the same over them, and still over what it was the same over)."""

    kind: str  # rank-id | driver | inbox | time | random | host | environment
    text: str
    function: str
    path: str
    line: int
    dimension: str = ""
    generator: str = ""
    over: str = ""  # the groups a collective agreed it over on its way, comma-separated, sorted

    @property
    def way(self) -> tuple[str, str, str]:
        """What besides `over` decides over which groups it varies (`UniformityFlow._differs`)."""
        return (self.kind, self.dimension, self.generator)

    @property
    def agreed(self) -> frozenset[str]:
        return _groups(self.over)

    def agreed_over(self, groups: str) -> Source:
        """The same source, once a collective over `groups` agreed on what it became."""
        dims = sorted({*self.over.split(","), *groups.split(",")} - {""})
        return replace(self, over=",".join(dims))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "text": self.text,
            "function": self.function,
            "path": self.path,
            "line": self.line,
        }
        if self.kind == "rank-id":
            out["dimension"] = self.dimension or None
        if self.over:
            out["agreed_over"] = self.over.split(",")
        return out


@cache
def _groups(over: str) -> frozenset[str]:
    """The groups a comma-separated `over` names (one set per text: the solve asks often)."""
    return frozenset(over.split(",")) - {""}


@dataclass(frozen=True, order=True, slots=True)
class Step:
    """One hop of a flow: in `function`, at `path:line`, `text` carried the value on.
    Slotted: a divergence check of sglang holds 170 k of them (session 18)."""

    function: str
    path: str
    line: int
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"function": self.function, "path": self.path, "line": self.line, "text": self.text}


Node = tuple[str, ...]  # ("ret", fn) | ("param", fn, name) | ("attr", cls, name) | ("global", m, n)
Label = Source | Node
Labels = dict[Label, tuple[Step, ...]]  # label -> the local steps from it to here
MAX_STEPS = 6
CALLED = "()"  # `("param", fn, p, CALLED)`: what the callable handed as `p` returns (`callbacks`)


def merge(into: Labels, more: Labels) -> None:
    for label, steps in more.items():
        if label not in into or len(steps) < len(into[label]):
            into[label] = steps


def union(parts: Iterable[Labels]) -> Labels:
    out: Labels = {}
    for part in parts:
        merge(out, part)
    return out


def through(labels: Labels, step: Step) -> Labels:
    return {label: (step, *steps)[:MAX_STEPS] for label, steps in labels.items()}


Env = dict[str, Labels]  # locals by name; attribute paths (`self.x`) by dotted text


def join(envs: list[Env]) -> Env:
    """Join of branch environments. A local missing from a branch is uniform there; an attribute
    path missing from a branch was not overwritten there, so it falls back to the attribute; a
    local's items (`name#i`, `tuples.py`) are joined apart (`_join_items`)."""
    if len(envs) == 1:
        return envs[0]
    out: Env = {}
    for env in envs:
        for name, labels in env.items():
            if "#" in name or ("." in name and not all(name in other for other in envs)):
                continue
            merge(out.setdefault(name, {}), labels)
    _join_items(envs, out)
    return out


def _join_items(envs: list[Env], out: Env) -> None:
    """A local's items are known after a join when every branch bound it to a tuple of one
    length, or to `None` (`("items", 0)`: it holds none, so unpacking never reads it there)."""
    for key in {k for env in envs for k in env if k.endswith("#")}:
        markers = [env.get(key) for env in envs]
        if any(not marker for marker in markers):
            continue
        counts = {label[1] for marker in markers for label in marker}  # type: ignore[union-attr]
        lengths = counts - {0}
        if len(lengths) > 1 or not all(isinstance(count, int) for count in counts):
            continue
        count = next(iter(lengths), 0)
        out[key] = {("items", count): ()}
        name = key[:-1]
        for index in range(count):
            item = out[f"{name}#{index}"] = {}
            for env, marker in zip(envs, markers, strict=True):
                if ("items", count) in marker:  # type: ignore[operator]
                    merge(item, env.get(f"{name}#{index}", {}))


@dataclass(slots=True)
class FunctionFlow:
    """What one walk of a function found: flows into symbolic nodes, and each condition's labels.
    Slotted: one per function walked, 35 k on sglang (session 18)."""

    edges: dict[Node, Labels] = field(default_factory=dict)
    conditions: dict[int, Labels] = field(default_factory=dict)  # id(Stmt) -> labels
    ret_params: dict[str, tuple[Step, ...]] = field(default_factory=dict)  # param -> to return
    # Parameters whose call's result reaches the return (`callbacks.py`).
    ret_calls: dict[str, tuple[Step, ...]] = field(default_factory=dict)
    # `relays.py`: own parameters it sends point-to-point, and whether it receives any.
    sent: set[str] = field(default_factory=set)
    receives: bool = False
    seeds: dict[str, Labels] = field(default_factory=dict)  # generator -> what seeds it here
    none_only: bool = False  # its decided answer is only whether it returned `None`
    # `tuples.py`: every return gives a tuple of `ret_arity` known items (0: none seen, -1: not
    # so), the own parameters each item holds, and the parameters it unpacks (into how many
    # targets at most).
    ret_arity: int = 0
    ret_items: list[dict[str, tuple[Step, ...]]] = field(default_factory=list)
    unpacked: dict[str, int] = field(default_factory=dict)
    # Whether a finding can ask for its conditions' labels: only in a function the rounds
    # reach (`findings.py`), or anywhere when no rounds are given.
    asked: bool = True

    def condition(self, stmt: Any, labels: Labels) -> None:
        if self.asked:
            self.conditions[id(stmt)] = labels

    def returns(self, fn: str, step: Step, labels: Labels) -> None:
        """What a `return` of `fn` gives: its own parameters are a per-call-site summary
        (`ret_params`; `ret_calls` for what a callable handed in returned); the rest is
        intrinsic, the node `("ret", fn)`."""
        intrinsic: Labels = {}
        for label, steps in labels.items():
            carried = (step, *steps)[:MAX_STEPS]
            if isinstance(label, tuple) and label[0] == "param" and label[1] == fn:
                into = self.ret_calls if label[3:] == (CALLED,) else self.ret_params
                known = into.get(label[2])
                if known is None or len(carried) < len(known):
                    into[label[2]] = carried
            else:
                intrinsic[label] = carried
        self.flow(("ret", fn), intrinsic)

    def flow(self, node: Node, labels: Labels) -> None:
        if labels:
            merge(self.edges.setdefault(node, {}), labels)
