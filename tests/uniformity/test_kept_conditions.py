"""A condition's labels are kept only where a finding can ask for them: in a function the rounds
reach (`UniformityFlow.condition_sources`); every function is still walked, for what it stores."""

from __future__ import annotations

from rankguard.analysis.collectives import CollectiveReach
from rankguard.analysis.uniformity.flow import UniformityFlow
from rankguard.catalogs.catalog import collective_catalog
from rankguard.catalogs.rank_sources import rank_source_catalog
from tests.uniformity.programs import HEAD, lines, run

CODE = """\
def start(s):
    if dist.get_rank() == 0:
        s.configure(dist.get_rank())

class S:
    def __init__(self):
        self.late = False

    def configure(self, r):
        self.late = r == 1

    def event_loop(self):
        while True:
            t = torch.zeros(1)
            if self.late:
                dist.all_reduce(t)
"""


def test_conditions_are_kept_only_in_reached_functions(program_of) -> None:
    program = program_of({"m.py": HEAD + CODE})
    reach = CollectiveReach(program, collective_catalog())
    flow = UniformityFlow(program, reach, rank_source_catalog(), ["m.S.event_loop"])
    assert flow.flows["m.S.event_loop"].conditions
    assert not flow.flows["m.start"].conditions


def test_flows_from_unreached_functions_still_count(program_of) -> None:
    assert lines(run(program_of, CODE)) == [16]
