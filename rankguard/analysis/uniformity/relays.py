"""A hand-rolled fan-out relays one rank's value to the others, as a broadcast does.

`relay(data, ranks, is_leader)`: the leader sends `data` point-to-point to each peer and returns
it; every peer returns what it received. What it returns is then the leader's value on every
rank it reaches, though no collective names the group (a leader chain over a list of ranks).
A function relays a parameter when it sends it point-to-point (or hands it to a function that
relays or sends it), receives point-to-point (a primitive it calls, or a return that gives what
a receiving function returned), and returns no other parameter: a caller then takes its
intrinsic result only, as from a collective over a group it cannot name (`agreement.py`), not
the argument it passed. Sending and returning an argument while receiving nothing, or only what
it does not return (an acknowledgement), is not a relay: that rank keeps its own value. Not
told apart: a function that calls a receive primitive itself and returns what it sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rankguard.analysis.uniformity.lattice import Labels
from rankguard.summary.ir import CallSite, Operand

if TYPE_CHECKING:
    from rankguard.analysis.uniformity.transfer import Walker

# Arguments that say where a point-to-point transfer goes, not what it carries.
_ROUTING = frozenset({"src", "dst", "tag", "group", "group_src", "group_dst", "peer"})


class Relays:
    """What one walk sends and receives point-to-point (`Walker`)."""

    def __init__(self, walker: Walker) -> None:
        self.w = walker

    def primitive(
        self, call: CallSite, targets: list[str], operands: list[tuple[Operand, Labels]]
    ) -> None:
        """A point-to-point primitive: `isend(t, dst=d)` sends what `t` holds; `irecv` receives."""
        kinds = [t.rsplit(".", 1)[-1] for t in targets if self.w.f.reach.catalog.kind(t) == "p2p"]
        if any("recv" in name for name in kinds):
            self.w.out.receives = True
        if any("send" in name for name in kinds):
            for operand, labels in operands:
                if operand.keyword not in _ROUTING:
                    self._sent(labels)

    def relayed(self, function: str) -> bool:
        """Whether `function` relays what it is handed (and returns no other parameter)."""
        flow = self.w.f.flows.get(function)
        return (
            flow is not None
            and bool(flow.sent)
            and flow.receives
            and flow.ret_params.keys() <= flow.sent
        )

    def called(self, target: str, passed: dict[str, Labels]) -> None:
        """A call of a program function: what it sends or relays, this function sends."""
        flow = self.w.f.flows.get(target)
        if flow is None:
            return
        for param, labels in passed.items():
            if param in flow.sent:
                self._sent(labels)

    def returned(self, labels: Labels) -> None:
        """A return that gives what a receiving function returned hands on what it received."""
        for label in labels:
            if isinstance(label, tuple) and label[0] == "ret" and label[1] in self.w.f.flows:
                self.w.out.receives = self.w.out.receives or self.w.f.flows[label[1]].receives

    def _sent(self, labels: Labels) -> None:
        for label in labels:
            if isinstance(label, tuple) and label[:2] == ("param", self.w.fn) and len(label) == 3:
                self.w.out.sent.add(label[2])
