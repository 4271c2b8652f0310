"""`model.cycles`: memoised answers over a graph of questions with cycles are the same in
whatever order the questions are asked (the resolver's tables follow this protocol)."""

from __future__ import annotations

import itertools
import random

from rankguard.model.cycles import Cycles


class Graph:
    """Question q's answer: its own name, plus the answers of the questions it asks, in order;
    a question still open answers what it has so far (nothing)."""

    def __init__(self, edges: dict[str, list[str]]) -> None:
        self.edges = edges
        self.memo: dict[str, frozenset[str]] = {}
        self.cycles = Cycles()
        self.computed = 0

    def ask(self, q: str) -> frozenset[str]:
        cached = self.memo.get(q)
        if cached is not None:
            self.cycles.read(q)
            return cached
        return self.cycles.answer(q, self.memo, q, frozenset(), lambda: self._compute(q))

    def _compute(self, q: str) -> frozenset[str]:
        self.computed += 1
        found = {q}
        for child in self.edges[q]:
            answer = self.ask(child)
            # Data-dependent: a question asks further only where its child answered enough.
            if len(answer) % 3 != 2:
                found |= answer
        return frozenset(found)


def _random_graph(rng: random.Random, size: int) -> dict[str, list[str]]:
    names = [chr(ord("a") + i) for i in range(size)]
    return {n: rng.sample(names, rng.randint(0, min(3, size))) for n in names}


def test_answers_do_not_depend_on_the_order_asked():
    rng = random.Random(7)
    for _ in range(150):
        edges = _random_graph(rng, rng.randint(2, 6))
        names = sorted(edges)
        expected = None
        for order in itertools.islice(itertools.permutations(names), 40):
            graph = Graph(edges)
            answers = {q: graph.ask(q) for q in order}
            for q in reversed(order):  # asked again, from the memo
                assert graph.ask(q) == answers[q]
            expected = expected or answers
            assert answers == expected, (edges, order)


def test_a_cycle_is_answered_once_entered_at_its_least_member():
    graph = Graph({"a": ["b"], "b": ["a", "c"], "c": []})
    entered_at_b = graph.ask("b")  # answered again from `a`, the cycle's least member
    assert set(graph.memo) == {"a", "b", "c"}
    before = graph.computed
    assert graph.ask("a") == Graph(graph.edges).ask("a")
    assert graph.ask("b") == entered_at_b
    assert graph.computed == before
