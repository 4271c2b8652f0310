"""The flow solve bounds what each node keeps, and never by dropping a varying source.

A node (an attribute every store feeds) can be reached by many sources. Which of them vary is
decided only later, per collective group (`UniformityFlow.varying`), so a bound on the solve that
keeps "the first few" may keep only sources that are the same over the group and drop the one
that is not: the condition then looks uniform and its collective goes unreported.
"""

from __future__ import annotations

from rankguard.analysis.uniformity.flow import _covered
from rankguard.analysis.uniformity.lattice import Source
from tests.uniformity.programs import lines, run

GROUPS = "def get_tp_group():\n    return _TP\n\n"


def _fed(stores: int) -> str:
    """`self.mark` fed by `stores` pipeline ranks (each the same over one stage's TP group) and
    by one clock reading (this rank's own), read by a round before a TP barrier."""
    pp = "".join(
        f"        self.mark = get_pipeline_model_parallel_rank() + {i}\n" for i in range(stores)
    )
    return GROUPS + (
        "class S:\n"
        "    def setup(self):\n"
        f"{pp}\n"
        "    def tick(self):\n"
        "        self.mark = time.monotonic()\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            self.tick()\n"
        "            if self.mark > 1.0:\n"
        "                dist.barrier(group=get_tp_group().cpu_group)\n"
    )


def test_few_uniform_sources_leave_the_clock_varying(program_of) -> None:
    code = _fed(2)
    assert lines(run(program_of, code)) == [code.count("\n")]


def test_many_uniform_sources_never_crowd_out_the_clock(program_of) -> None:
    code = _fed(12)
    found = run(program_of, code)
    assert lines(found) == [code.count("\n")]
    assert found[0].sources[0][0].kind == "time"


def test_a_kept_source_covers_another_only_if_agreed_over_no_more_groups() -> None:
    def clock(over: str) -> Source:
        return Source("time", "time.monotonic()", "m.f", "m.py", 1, over=over)

    assert _covered(clock("tp,pp"), [clock("tp").agreed])
    assert not _covered(clock("tp"), [clock("tp,pp").agreed])  # it varies over pp, that not
    assert not _covered(clock("pp"), [clock("tp").agreed])
    # An agreed value counts as arriving messages and a raw one does not: neither covers.
    assert not _covered(clock("tp"), [clock("").agreed])
    assert not _covered(clock(""), [clock("tp").agreed])
    assert _covered(clock(""), [clock("").agreed])
