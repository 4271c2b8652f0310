"""Line-free identities of functions, so a summary made in an earlier run can answer for a
function whose lines moved.

A function's *local digest* covers what an analysis reads of the function itself: its record
with every line number taken relative to the function's own first line (an edit above it
shifts nothing), and what the analysis asks the model about it (resolved targets, values of
references: the caller of `FunctionKeys` supplies those). Its *key* adds the keys of every
function it may call, over strongly connected components of that graph (a cycle has one key,
made from all its members), and a salt for the configuration and the program-wide tables the
analysis reads. A summary is then a function of (key, entry context), and an edit changes the
keys of the edited function and of the functions that may call it, no other.

Inside a cycle an analysis that cuts recursion answers according to where the cycle was
entered, so `cyclic` tells which functions sit on one: the blocking analysis records which of
them a summary's walk entered, and reuses it only where none of those is on the stack.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import networkx as nx

from rankguard.summary.ir import FunctionInfo

# (digest material, functions it may call) for one function.
Local = Callable[[str], tuple[str, Sequence[str]]]
_ATOMS = (str, int, float, bool, type(None), bytes)
_FIELDS: dict[type, tuple[str, ...]] = {}


def digest(*parts: str) -> str:
    hashed = hashlib.blake2b(digest_size=20)
    for part in parts:
        hashed.update(part.encode("utf-8", "surrogatepass"))
        hashed.update(b"\0")
    return hashed.hexdigest()


def lineless(value: Any, base: int) -> Any:
    """`value` (an IR record, or tuples of them) as plain tuples, with every line number made
    relative to `base`; columns and everything else kept."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is tuple or kind is list:
        return tuple(lineless(v, base) for v in value)
    if kind is dict:
        return tuple((lineless(k, base), lineless(v, base)) for k, v in value.items())
    names = _FIELDS.get(kind)
    if names is None:
        if not dataclasses.is_dataclass(value):
            return repr(value)
        names = _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(value))
    out: list[Any] = [kind.__name__]
    for name in names:
        item = getattr(value, name)
        if name in ("line", "end_line"):
            out.append(item - base)
        elif name == "value_refs" and kind is FunctionInfo:
            out.append(tuple((segs, line - base) for segs, line in item))
        else:
            out.append(lineless(item, base))
    return tuple(out)


class FunctionKeys:
    """Keys for one program and one analysis, computed on first demand for everything the
    function asked about may reach."""

    def __init__(self, salt: str, local: Local) -> None:
        self.salt = salt
        self._local = local
        self._keys: dict[str, str] = {}
        self._cyclic: set[str] = set()

    def key(self, name: str) -> str:
        if name not in self._keys:
            self._extend(name)
        return self._keys[name]

    def cyclic(self, name: str) -> bool:
        """`name` lies on a cycle of calls (through another function: a function that calls
        only itself is cut the same way wherever it is entered)."""
        if name not in self._keys:
            self._extend(name)
        return name in self._cyclic

    def _extend(self, root: str) -> None:
        graph = nx.DiGraph()
        graph.add_node(root)
        local: dict[str, str] = {}
        calls: dict[str, Sequence[str]] = {}
        todo = [root]
        while todo:
            name = todo.pop()
            text, callees = self._local(name)
            local[name] = digest(text)
            calls[name] = callees
            for callee in callees:
                if callee in self._keys:
                    continue
                if callee not in graph:
                    todo.append(callee)
                graph.add_edge(name, callee)
        condensed = nx.condensation(graph)
        for node in reversed(list(nx.topological_sort(condensed))):
            group = condensed.nodes[node]["members"]
            members = sorted(group)
            outside = sorted({self._keys[c] for m in members for c in calls[m] if c not in group})
            shared = digest(self.salt, *(f"{m}\0{local[m]}" for m in members), *outside)
            for member in members:
                self._keys[member] = digest(shared, member)
            if len(members) > 1:
                self._cyclic.update(members)
