"""Call chains as a stack dump shows them: one hop per call site, outermost first."""

from __future__ import annotations

from typing import NamedTuple


class Hop(NamedTuple):
    """`function` made the call at `path:line` (the last hop: the call in question)."""

    function: str
    path: str
    line: int

    def to_json(self) -> dict[str, object]:
        return {"function": self.function, "path": self.path, "line": self.line}

    def text(self) -> str:
        return f"{self.function} ({self.path}:{self.line})"


def chain_json(chain: list[Hop] | tuple[Hop, ...]) -> list[dict[str, object]]:
    return [hop.to_json() for hop in chain]


def chain_key(chain: list[Hop] | tuple[Hop, ...]) -> str:
    """Line-free identity of a chain, for fingerprints that survive line drift."""
    return " > ".join(hop.function for hop in chain)
