"""Memoised answers that are the same whichever question is asked first.

The resolver learns values lazily: what a function returns, an attribute's values, a
function's locals, a module's names, each memoised, and each guarded while it is computed (a
question that comes back to itself gets "nothing yet", or the part built so far). An answer
computed while *another* question on the stack was still open read that one's partial answer:
memoised, it would stand for its question ever after, and which answer a question gets would
depend on which question the run asked first. A cold build asks in the order of the functions'
names; a warm run, which takes most of its resolution from the cache, asks what the edited
module and the analyses need, in their own order: such answers made warm checks differ from
`--no-cache`.

So an answer is memoised only if it read no partial answer but its own: one that read another
open question's belongs to a cycle of questions and is computed again each time it is asked,
from the top of the cycle it is asked at. Every answer is then a function of its question
alone. (A question reading its own partial table while it builds it is no cycle: it reads the
same partial state wherever it is asked.)
"""

from __future__ import annotations

from collections.abc import Hashable

_CLEAN = 1 << 62


class Cycles:
    """The questions being answered, innermost last, and for each the outermost open
    question whose partial answer it (or a question it asked) read."""

    def __init__(self) -> None:
        self._open: dict[Hashable, int] = {}
        self._low: list[int] = []

    def open(self, key: Hashable) -> None:
        self._open[key] = len(self._low)
        self._low.append(_CLEAN)

    def is_open(self, key: Hashable) -> bool:
        return key in self._open

    def partial(self, key: Hashable) -> None:
        """The open question `key`'s partial answer was read (its guard answered)."""
        index = self._open[key]
        top = len(self._low) - 1
        if index < top and index < self._low[top]:
            self._low[top] = index

    def close(self, key: Hashable) -> bool:
        """`key`'s answer is complete: whether it may be memoised (it read no partial answer
        of another question)."""
        index = self._open.pop(key)
        low = self._low.pop()
        if low < index:  # read a question still open further out: so did the one that asked
            self._low[-1] = min(self._low[-1], low)
        return low == _CLEAN
