"""What only another platform's code stores is not this round's state (issue #18).

The platforms catalog already keeps the blocking walk out of modules named for hardware the run
does not analyse (`hardware_backend.npu.graph_runner` on a CUDA deployment). The state
induction fed every read of an attribute with the stores of those modules too (sglang 0.5.23:
the NPU graph runner copying `seq_lens` into its buffers was a hop of 3 of 172 shown source
chains; each finding stayed, through another source).
"""

from __future__ import annotations

from rankguard.analysis.blocking import BlockingAnalysis
from rankguard.analysis.collectives import CollectiveReach
from rankguard.analysis.uniformity import find_divergent_calls
from rankguard.catalogs.catalog import blocking_catalog, collective_catalog
from rankguard.catalogs.platforms import platform_catalog
from tests.uniformity.programs import HEAD

ROUND = HEAD + (
    "class Batch:\n"
    "    def __init__(self):\n"
    "        self.pending = 0\n\n"
    "class Scheduler:\n"
    "    def __init__(self, tp_group):\n"
    "        self.tp_group = tp_group\n"
    "        self.batch = Batch()\n\n"
    "    def event_loop(self):\n"
    "        while True:\n"
    "            if self.batch.pending > 0:\n"
    "                dist.barrier(group=self.tp_group)\n"
)
RUNNER = (
    "import time\n"
    "from m import Batch\n\n"
    "def execute(batch: Batch):\n"
    "    batch.pending = time.monotonic()\n"
)


def _found(program_of, runner_module: str, platforms: tuple[str, ...] = ()) -> list:
    program = program_of({"m.py": ROUND, f"{runner_module}.py": RUNNER})
    reach = CollectiveReach(program, collective_catalog())
    facts = BlockingAnalysis(
        program, reach.catalog, blocking_catalog(), platforms=platform_catalog(platforms)
    )
    return find_divergent_calls(program, ["m.Scheduler.event_loop"], reach, facts=facts)


def test_a_store_only_another_platforms_module_makes_is_not_the_rounds_state(program_of) -> None:
    assert _found(program_of, "npu_runner") == []


def test_the_store_counts_where_the_run_analyses_that_platform(program_of) -> None:
    assert len(_found(program_of, "npu_runner", ("npu",))) == 1
    assert len(_found(program_of, "npu_runner", ("*",))) == 1


def test_a_module_named_for_no_platform_runs_everywhere(program_of) -> None:
    assert len(_found(program_of, "runner")) == 1
