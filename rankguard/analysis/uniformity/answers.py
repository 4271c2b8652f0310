"""Which `return` runs: the control dependence of a function's answer.

A helper returning `False` on one side of a varying test and `True` on the other returns a
varying value, though each constant is uniform. Only the returns that hand back a constant
count (`return False`, `return None`, an enum member), and only when some other return hands
back something else: a return of a value carries that value's own flows, so a helper returning
either of two copies of the same data (`t.to("cpu")` or a pinned copy of `t`) answers with the
data, whichever return runs, while `return None` on one side makes the answer's *existence*
the test's (`existence.py` keeps it for `x is None`); so does returning a helper's answer
(`return pool.alloc(n)`, which is `None` when this rank's pool is short).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rankguard.analysis.uniformity.lattice import Labels, Step, merge, through, union
from rankguard.summary.ir import Segs, Stmt, segs_text, walk_statements


class Answers:
    """The labels of the conditions deciding the current point (`control`), and each return:
    the constant it hands back (None: a computed value) with the control deciding it."""

    def __init__(self, step: Callable[[int, str], Step]) -> None:
        self.step = step
        self.control: Labels = {}
        self.answers: list[tuple[str | None, Labels]] = []
        # Whether the one constant answer is `None`: then what decides the answer decides only
        # whether there is one (`decisions` sets it).
        self.none_only = False
        self.handed: Labels = {}  # what decided the answers of helpers it returns

    @contextmanager
    def deciding(self, stmt: Stmt, labels: Labels) -> Iterator[None]:
        """Inside, the returns also depend on `labels`; after, too, when a block may return
        (an early return decides the returns that follow it)."""
        saved = dict(self.control)
        merge(
            self.control, through(labels, self.step(stmt.line, f"returns decided by {stmt.text}"))
        )
        try:
            yield
        finally:
            if not any(s.kind == "return" for b in stmt.blocks for s in walk_statements(b)):
                self.control = saved

    def returned(self, constant: str | None, handed: Labels) -> None:
        """A `return`: its constant (None: computed), and what decided the answer of a helper
        it hands on (`return g()`: `existence.handed`)."""
        self.answers.append((constant, dict(self.control)))
        merge(self.handed, handed)

    def decisions(self, body: tuple[Stmt, ...]) -> Labels:
        """What decides the function's answer, once `body` was walked."""
        answers = list(self.answers)
        if falls_through(body):
            answers.append(("None", dict(self.control)))
        self.none_only = {a for a, _control in answers if a is not None} == {"None"}
        decided = dict(self.handed)
        if len({answer if answer is not None else "" for answer, _control in answers}) > 1:
            merge(decided, union(control for answer, control in answers if answer is not None))
        return decided


def constant_of(stmt: Stmt, is_class: Callable[[Segs], bool]) -> str | None:
    """The constant a `return` hands back: a literal, nothing (`None`), or a member of a class
    (`Verdict.SKIP`); None when it returns a computed value."""
    shape = stmt.value
    if not stmt.tree:
        return "None"
    if shape[:1] == ("const",):
        return str(shape[1])
    if shape[:1] == ("ref",) and len(shape[1]) >= 2 and is_class(shape[1][:-1]):
        return segs_text(shape[1])
    return None


def falls_through(block: tuple[Stmt, ...]) -> bool:
    """Whether running `block` may reach its end (an implicit `return None` for a body)."""
    if not block:
        return True
    last = block[-1]
    if last.kind in ("return", "raise"):
        return False
    if last.kind == "if" and len(last.blocks) == 2:
        return any(falls_through(b) for b in last.blocks)
    return True


def narrowed(held: Labels, none_only: Callable[[str], bool]) -> Labels:
    """`x` past `if x is None: return`: what decided that a helper answered `None` (its one
    constant answer, `none_only`) says nothing more about `x`, which is not `None`."""
    return {
        label: steps
        for label, steps in held.items()
        if not (isinstance(label, tuple) and label[0] == "decided" and none_only(label[1]))
    }
