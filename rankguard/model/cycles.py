"""Memoised answers that are the same whichever question is asked first.

The resolver learns values lazily: what a function returns, an attribute's values, a
function's locals, a module's names, each memoised, and each guarded while it is computed (a
question that comes back to itself gets "nothing yet", or the part built so far). Questions
can form a cycle (`make_a` returns what `make_b` returns, which may return `make_a()`), and
then each member's answer depends on which member the computation entered first: memoised as
they came, the answers would depend on which question the run asked first. A cold build asks
in the order of the functions' names; a warm run, which takes most of its resolution from the
cache, asks what the edited module and the analyses need, in their own order: such answers made
warm checks differ from `--no-cache`.

So:
- an answer that read no partial answer but its own (a question reading its own table while it
  builds it reads the same partial state wherever it is asked) is memoised as it is;
- an answer that read the partial answer of a question further out (or an answer held so)
  belongs to that question's cycle: it is held until the cycle's first question completes;
- when the first question of a cycle completes, the cycle is answered again from its canonical
  member (the least question), unless that is the one just answered, and every member's answer
  from that computation is memoised. Every cycle is thus entered at the same member, whichever
  member a run asked first, and every answer is a function of its question alone.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, MutableMapping
from typing import Any, TypeVar

_CLEAN = 1 << 62
_V = TypeVar("_V")


class _Question:
    __slots__ = ("compute", "guard", "into", "key", "low", "members", "name", "table")

    def __init__(
        self,
        name: Hashable,
        table: MutableMapping[Any, Any],
        key: Hashable,
        guard: Any,
        compute: Callable[[], Any],
    ) -> None:
        self.name = name
        self.table = table
        self.key = key
        self.guard = guard
        self.compute = compute
        self.low = _CLEAN  # the outermost open question whose partial answer it read
        self.members: dict[Hashable, tuple[_Question, Any]] = {}  # of the cycle it begins
        self.into: _Question | None = None  # the cycle it turned out to be a member of


class Cycles:
    """The questions being answered, innermost last, and the answers held for open cycles."""

    def __init__(self) -> None:
        self._open: dict[Hashable, int] = {}
        self._stack: list[_Question] = []
        self._held: dict[Hashable, _Question] = {}  # answer -> the cycle that holds it

    def read(self, name: Hashable) -> None:
        """A memoised or partial answer to `name` was read by the innermost question."""
        index = self._open.get(name)
        if index is not None:
            if index < len(self._stack) - 1:  # its own partial table is no cycle
                self._saw(index)
            return
        cycle = self._held.get(name)
        if cycle is not None:
            while cycle.into is not None:
                cycle = cycle.into
            self._saw(self._open[cycle.name])

    def _saw(self, low: int) -> None:
        """The innermost question depends on the partial answer of open question `low` (on
        itself, when `low` is it: it then begins a cycle)."""
        question = self._stack[-1]
        if low < question.low:
            question.low = low

    def answer(
        self,
        name: Hashable,
        table: MutableMapping[Any, Any],
        key: Hashable,
        guard: Any,
        compute: Callable[[], _V],
    ) -> _V:
        """`compute()`, with `table[key]` answering `guard` meanwhile, memoised as above."""
        return self._run(_Question(name, table, key, guard, compute))

    def _run(self, question: _Question) -> Any:
        table, key, name = question.table, question.key, question.name
        table[key] = question.guard
        index = len(self._stack)
        self._open[name] = index
        self._stack.append(question)
        try:
            value = question.compute()
        except BaseException:
            self._close(question)
            table.pop(key, None)
            raise
        self._close(question)
        low = question.low
        if low == _CLEAN:
            table[key] = value
            return value
        members = question.members
        members[name] = (question, value)
        if low < index:  # a member of the cycle an outer question begins: held till it ends
            cycle = self._stack[low]
            question.into = cycle
            cycle.members.update(members)
            table[key] = value
            self._held[name] = cycle
            self._saw(low)
            return value
        first = min(members, key=repr)  # it begins a cycle: enter it at its least member
        for member, answered in members.values():
            self._held.pop(member.name, None)
            if first == name:
                member.table[member.key] = answered
            else:
                member.table.pop(member.key, None)
        if first == name:
            return value
        canonical = members[first][0]
        self._run(_Question(first, canonical.table, canonical.key, canonical.guard,
                            canonical.compute))  # fmt: skip
        if key in table:
            return table[key]
        return self._run(_Question(name, table, key, question.guard, question.compute))

    def _close(self, question: _Question) -> None:
        self._stack.pop()
        del self._open[question.name]
