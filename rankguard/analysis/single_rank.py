"""Stragglers need peers: the side of a branch a group takes only when it has one rank.

`if world_size == 1: return x` before a collective skips it only where no other rank exists to
wait, so no rank can straggle on that side. The walks that pair blocking calls with collectives
assume every group has at least two ranks: a comparison of a group's own size (`world_size`,
`get_world_size()`, `get_tp_world_size()`; not a dimension's setting such as `pp_size`) with a
constant is
decided under that assumption and handed to the facts (`model.facts`) with the rest of what is
known, so `if quiet and world_size == 1:` is decided like any other condition.
"""

from __future__ import annotations

from typing import Any

from rankguard.analysis.intervals import MIRRORED
from rankguard.catalogs.rank_sources import RankSourceCatalog
from rankguard.model.facts import Cond, leaf_facts


def peer_facts(cond: Cond, catalog: RankSourceCatalog) -> dict[Cond, Any]:
    """The group-size comparisons inside `cond` (through `not`, `and`, `or`), each with its
    value in a group of two or more ranks: facts for `model.facts` to evaluate `cond` with."""
    return leaf_facts(cond, lambda part: _decided(part, catalog) if part[0] == "cmp" else None)


def _decided(cond: Cond, catalog: RankSourceCatalog) -> bool | None:
    """A comparison of a group size with an integer, where size >= 2 decides it."""
    if len(cond[1]) != 1:
        return None
    op, (left, right) = cond[1][0], cond[2]
    if _is_size(right, catalog) and left[0] == "const":
        op, left, right = MIRRORED.get(op, ""), right, left
    if not (_is_size(left, catalog) and right[0] == "const"):
        return None
    bound = right[1]
    if not isinstance(bound, int) or isinstance(bound, bool):
        return None
    # size >= 2: each comparison is decided when the constant lies at or below the first
    # size that has peers.
    decided = {
        "==": False if bound < 2 else None,
        "!=": True if bound < 2 else None,
        "<": False if bound <= 2 else None,
        "<=": False if bound < 2 else None,
        ">": True if bound < 2 else None,
        ">=": True if bound <= 2 else None,
    }
    return decided.get(op)


def _is_size(operand: Cond, catalog: RankSourceCatalog) -> bool:
    """`self.world_size`, `dist.get_world_size()`, `get_tp_world_size()`: a group's own size.
    A dimension's size (`pp_size == 1`) is an ordinary setting in which other groups still
    have peers, so it decides nothing here."""
    if operand[0] not in ("ref", "call") or not operand[1]:
        return False
    name = operand[1][-1]
    return name.endswith("world_size") and catalog.is_group_size(name)
