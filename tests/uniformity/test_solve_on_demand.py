"""The solve answers only the nodes a question can reach (`UniformityFlow._solve`): the labels of
kept conditions (in functions the rounds reach) and of what seeds a generator. A node none of
them depends on is never solved, however much varying data flows into it; the answers at the
nodes that are asked about stay those of the whole solve (its breadth-first order restricted to
them), so findings do not change."""

from __future__ import annotations

import pytest

from rankguard.analysis.collectives import CollectiveReach
from rankguard.analysis.uniformity import flow as flow_module
from rankguard.analysis.uniformity.flow import UniformityFlow
from rankguard.catalogs.catalog import collective_catalog
from rankguard.catalogs.rank_sources import rank_source_catalog
from tests.uniformity.programs import HEAD, lines, run

CODE = """\
class Stats:
    def __init__(self):
        self.seen = 0
        self.load = 0

    def note(self):
        self.seen = dist.get_rank()
        self.load = time.time() + self.seen


class S:
    def __init__(self):
        self.late = False
        self.stats = Stats()

    def configure(self, r):
        self.late = r == 1

    def event_loop(self):
        self.configure(dist.get_rank())
        while True:
            self.stats.note()
            t = torch.zeros(1)
            if self.late:
                dist.all_reduce(t)
"""


def _flow(program_of) -> UniformityFlow:
    program = program_of({"m.py": HEAD + CODE})
    reach = CollectiveReach(program, collective_catalog())
    return UniformityFlow(program, reach, rank_source_catalog(), ["m.S.event_loop"])


def test_nodes_no_question_reaches_are_not_solved(program_of) -> None:
    flow = _flow(program_of)
    solved = {node for node, found in flow.sources.items() if found}
    assert ("attr", "m.S", "late") in solved  # the guard's condition reads it
    assert not {n for n in solved if n[0] == "attr" and n[1] == "m.Stats"}
    with pytest.raises(LookupError):  # asked anyway: an error, never a silent "uniform"
        flow.sources_of({("attr", "m.Stats", "seen"): ()})


def test_the_asked_nodes_keep_their_sources(program_of) -> None:
    flow = _flow(program_of)
    late = flow.sources[("attr", "m.S", "late")]
    assert [s.kind for s in late] == ["rank-id"]
    assert lines(run(program_of, CODE)) == [25]


_MANY = "".join(
    f"    def feed{i}(self):\n        self.a = {src}\n        self.other = self.a\n\n"
    for i, src in enumerate(
        [
            "dist.get_rank()",
            "time.time()",
            "random.random()",
            "os.getpid()",
            "time.monotonic()",
            "torch.rand(1)",
            "dist.get_rank() + 1",
            "time.perf_counter()",
            "random.randint(0, 9)",
            "os.getpid() + 1",
            "time.time() * 2",
        ]
    )
)
MANY = f"""\
class S:
    def __init__(self):
        self.a = 0
        self.b = 0
        self.other = 0

{_MANY}    def event_loop(self):
        while True:
            self.feed0()
            self.b = self.a
            t = torch.zeros(1)
            if self.b:
                dist.all_reduce(t)
"""


@pytest.mark.parametrize("code", [CODE, MANY], ids=["one", "many"])
def test_asked_nodes_answer_as_in_the_whole_solve(program_of, monkeypatch, code) -> None:
    """Past the cap of sources per node (`_MAX_SOURCES`) which ones are kept depends on the
    order they arrive in: that order is the whole solve's."""
    program = program_of({"m.py": HEAD + code})
    reach = CollectiveReach(program, collective_catalog())
    catalog = rank_source_catalog()
    on_demand = UniformityFlow(program, reach, catalog, ["m.S.event_loop"])

    def everything(forward, asked):
        return {*forward, *(node for edges in forward.values() for node, _ in edges)}

    monkeypatch.setattr(flow_module, "_upstream", everything)
    whole = UniformityFlow(program, reach, catalog, ["m.S.event_loop"])
    assert on_demand.asked
    assert {n: on_demand.sources.get(n) for n in on_demand.asked} == {
        n: whole.sources.get(n) for n in on_demand.asked
    }
    assert set(whole.sources) > set(on_demand.sources)
