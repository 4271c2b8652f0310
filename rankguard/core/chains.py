"""Call chains as a stack dump shows them: one hop per call site, outermost first."""

from __future__ import annotations

from typing import NamedTuple

WEAK_EDGES = frozenset(("fallback", "dispatch", "override", "subclass", "named"))


class Hop(NamedTuple):
    """`function` made the call at `path:line` (the last hop: the call in question).

    `edge` says how the call was resolved when not plainly. Some edges are guesses
    (`WEAK_EDGES`): "fallback" (the only class defining that method name, a method named at
    run time), "dispatch" (a callable held in a table), "override" (a subclass's override of the
    receiver's declared class: the chain holds where the program is configured with that
    subclass), "subclass" (a mixin's `self` as a class derived from it). Others only say how a
    sure call was found ("constructor", "implicit", "decorated", "argument", "advanced", ...).
    """

    function: str
    path: str
    line: int
    edge: str | None = None

    @property
    def weak(self) -> bool:
        """Reached by a guess: the chain holds only in some configurations."""
        return self.edge in WEAK_EDGES

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"function": self.function, "path": self.path, "line": self.line}
        if self.edge:
            out["edge"] = self.edge
        return out

    def text(self) -> str:
        mark = f" [{self.edge}]" if self.edge else ""
        return f"{self.function} ({self.path}:{self.line}){mark}"


def chain_json(chain: list[Hop] | tuple[Hop, ...]) -> list[dict[str, object]]:
    return [hop.to_json() for hop in chain]


def chain_key(chain: list[Hop] | tuple[Hop, ...]) -> str:
    """Line-free identity of a chain, for fingerprints that survive line drift."""
    return " > ".join(hop.function for hop in chain)
