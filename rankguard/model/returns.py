"""Where what a function returns lives (`ReturnPlacement`), read as `model.placement` reads an
attribute: program-wide, from the function's own body."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from rankguard.model.placement import Attrs, agree, of_tree
from rankguard.summary.ir import Stmt, walk_statements

TUPLE = "tuple"  # in the table: what follows is a tuple display's placements, position by position


class ReturnPlacement:
    """Program-wide: where what each function returns lives, when every `return` in it agrees
    (position by position for a tuple: `return order, rows[order]`), read with the locals it
    binds once (as `AttributePlacement` reads them), its parameters unknown. A `return` of
    nothing or of None gives no tensor, so it leaves the answer to the others. Functions in
    `opaque` (a generator, a function a decorator wraps) are not read."""

    def __init__(
        self,
        bodies: Mapping[str, tuple[Stmt, ...]],
        params: Mapping[str, frozenset[str]],
        opaque: frozenset[str],
        attrs: Attrs,
    ) -> None:
        self._bodies, self._params, self._opaque = bodies, params, opaque
        self._attrs = attrs
        self._table: dict[str, tuple[str | None, ...]] | None = None

    def of(self, function: str, count: int) -> tuple[str | None, ...] | None:
        """Where each of `count` targets bound to what `function` returns lives: one target
        takes a value returned as such, several the positions of a tuple returned as one."""
        found = self.table().get(function)
        if found is None:
            return None
        if found[0] == TUPLE:
            return found[1:] if count == len(found) - 1 and count > 1 else None
        return found if count == 1 else None

    def table(self) -> dict[str, tuple[str | None, ...]]:
        if self._table is None:
            self._table = {}
            for function, body in self._bodies.items():
                found = self._returned(function, body)
                if found is not None and any(p is not None for p in found):
                    self._table[function] = found
        return self._table

    def _returned(self, function: str, body: tuple[Stmt, ...]) -> tuple[str | None, ...] | None:
        if function in self._opaque:
            return None
        flat = list(walk_statements(body))
        single = Counter(t[0] for s in flat for t in s.targets if len(t) == 1)
        single.update(self._params.get(function, ()))
        env: dict[str, str] = {}
        for stmt in flat:
            if stmt.kind != "assign" or not stmt.tree:
                continue
            place = of_tree(stmt.tree, env, {}, self._attrs)
            for target in stmt.targets:
                if len(target) == 1 and place is not None and single[target[0]] == 1:
                    env = {**env, target[0]: place}
        shapes = set()
        for stmt in flat:
            tree = stmt.tree
            if stmt.kind != "return" or not tree or tree == ("const", None):
                continue
            if tree[0] == "tuple" and any(part[0] == "other" for part in tree[1]):
                return None  # `return (*rows, last)`: positions not known from here
            parts = tree[1] if tree[0] == "tuple" else (tree,)
            places = tuple(of_tree(t, env, {}, self._attrs) for t in parts)
            shapes.add((tree[0] == "tuple", places))
        if not shapes or len({(display, len(p)) for display, p in shapes}) != 1:
            return None  # a tuple here and a value there, or tuples of other lengths
        display, out = shapes.pop()
        for _, places in shapes:
            out = tuple(agree(a, b) for a, b in zip(out, places, strict=True))
        return (TUPLE, *out) if display else out
