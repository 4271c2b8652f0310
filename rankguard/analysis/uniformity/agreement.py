"""What a collective agrees on: its result, and the buffer it fills in place.

A collective's result is the same on every rank of its group and keeps what its inputs were the
same over. It is a node (`over`, the groups) the inputs flow into; the program-wide solve
(`flow.py`) marks each source through it as agreed over those groups. Which member a rank is
(`src=`, `group=`, a rank id handed to a broadcast) is the protocol, not data.
"""

from __future__ import annotations

from collections.abc import Callable

from rankguard.analysis.uniformity.collectives import CollectiveCalls
from rankguard.analysis.uniformity.lattice import FunctionFlow, Labels, Step, through, union
from rankguard.catalogs.rank_sources import RankSourceCatalog
from rankguard.model.records import FunctionRecord
from rankguard.summary.ir import CallSite, Operand

# Where an in-place collective takes the buffer it fills (first positional, or these keywords).
_BUFFER_KEYWORDS = ("tensor", "object_list", "tensor_list", "output_tensor_list", "output")
# Arguments that say how a collective runs (who sends, over which group), not what it agrees on.
_PROTOCOL_KEYWORDS = frozenset(
    {"src", "dst", "group", "group_src", "group_dst", "async_op", "op", "dist_group"}
)


class Agreement:
    """The agreements one function's collective calls make (`Walker` asks, per call)."""

    def __init__(
        self,
        calls: CollectiveCalls,
        catalog: RankSourceCatalog,
        record: FunctionRecord,
        out: FunctionFlow,
        step: Callable[[int, str], Step],
    ) -> None:
        self.calls = calls
        self.catalog = catalog
        self.record = record
        self.fn = record.qualname
        self.out = out
        self.step = step

    def agreed(
        self,
        call: CallSite,
        primitive: bool,
        operands: list[tuple[Operand, Labels]],
        targets: list[str],
    ) -> Labels:
        """What a collective call returns is the same on every rank of its group, and keeps
        what its inputs were the same over: agreed over a shard (one DP replica's attention-TP
        group), a value read from this rank's clock still differs between shards, the shard's
        own index still does not. The result is a node (`over`, its groups) the inputs flow
        into; the solve marks each source through it as agreed over those groups (`flow.py`).
        The world, or a group we cannot name, agrees everywhere. A wrapper's result is agreed
        only when the call hands it its group (`broadcast_pyobj(x, g.rank, g.cpu_group)`): a
        helper that runs collectives inside returns whatever it returns. Which member a rank is
        (`src=`, its rank id) is the protocol, not data."""
        calls = self.calls
        named = calls.names.named_groups(self.record, call)
        groups = calls.names.groups(self.record, call) if primitive else tuple(sorted(named))
        if not groups or "world" in groups:
            return {}
        # A broadcast sends its data: an argument computed from a rank id tells it which
        # member this rank is (`tp_size * pp_rank + tp_rank`), whichever position it takes.
        broadcast = calls.broadcast(self.record, call, targets)
        inputs = [
            labels
            for operand, labels in operands
            if operand.keyword not in _PROTOCOL_KEYWORDS
            and not any(
                self.catalog.is_rank_name(ref[-1])
                for ref in (operand.reads if broadcast else (operand.ref or (),))
                if ref
            )
            and not (broadcast and any(self.catalog.is_rank_call(c[-1]) for c in operand.calls))
        ]
        return self.over(groups, call.line, f"{call.text}(…)", str(call.col), union(inputs))

    def over(
        self, groups: tuple[str, ...], line: int, text: str, tag: str, labels: Labels
    ) -> Labels:
        """A value agreed over `groups`: a node `labels` flow into (the solve marks each source
        through it as agreed over them)."""
        node = ("over", ",".join(groups), self.fn, str(line), tag)
        self.out.flow(node, through(labels, self.step(line, f"{text} over {', '.join(groups)}")))
        return {node: ()}

    def buffer(self, call: CallSite, agreed: Labels) -> list[tuple[str, Labels]]:
        """A tensor reduced or broadcast in place holds the agreed value from here on: the
        local or attribute path it is bound to, with that value."""
        buffer = next((o for o in call.operands if o.keyword is None), None)
        buffer = buffer or next((o for o in call.operands if o.keyword in _BUFFER_KEYWORDS), None)
        if buffer is not None and buffer.ref and buffer.ref != ("self",):
            return [(".".join(buffer.ref), agreed)]
        return []
