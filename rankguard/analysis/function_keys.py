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
entered, so `cycle` tells which functions sit on one, and which: the blocking analysis walks a
cycle afresh each time it is entered from outside, so that answer does not depend on what ran
before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import networkx as nx

from rankguard.summary.lineless import digest

# (digest material, functions it may call) for one function.
Local = Callable[[str], tuple[str, Sequence[str]]]


class FunctionKeys:
    """Keys for one program and one analysis, computed on first demand for everything the
    function asked about may reach."""

    def __init__(self, salt: str, local: Local) -> None:
        self.salt = salt
        self._local = local
        self._keys: dict[str, str] = {}
        self._cycles: dict[str, str] = {}  # function on a cycle -> its cycle's id

    def key(self, name: str) -> str:
        if name not in self._keys:
            self._extend(name)
        return self._keys[name]

    def cycle(self, name: str) -> str | None:
        """The cycle of calls `name` lies on, as an id its members share (through another
        function: a function that calls only itself is cut the same way wherever it is
        entered); None when it lies on none."""
        if name not in self._keys:
            self._extend(name)
        return self._cycles.get(name)

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
                self._cycles.update(dict.fromkeys(members, shared))
