"""The staleness fixpoint (`Flows.run`) evaluates a function again in a later round only when
something it read changed since its last evaluation: an attribute, module global or argument
table entry it read, or the return of a function it called. Otherwise its last evaluation is
replayed (its callees asked again in order, its stores and arguments put again), which gives
what evaluating it again gives: the rows are those of evaluating everything every round."""

from __future__ import annotations

import textwrap
from pathlib import Path

from rankguard.adapters.sources import read_directory
from rankguard.analysis.staleness import staleness
from rankguard.analysis.staleness.flow import Flows
from rankguard.catalogs.driver_terms import term_catalog
from rankguard.core.config import Config
from rankguard.model import load_program
from tests.staleness.conftest import short

FILES = {
    "pkg/__init__.py": "",
    "pkg/mem.py": """
        import torch


        def free_bytes():
            return torch.cuda.mem_get_info()[0]


        class Pool:
            def refresh(self):
                self.cached_free = free_bytes()

            def budget(self, reserve):
                return self.cached_free - reserve


        def admit(pool, need, reserve):
            if need <= pool.budget(reserve):
                return True
            return need + reserve < free_bytes()


        def headroom(pool):
            return pool.budget(0) + free_bytes()
    """,
}


def _program(tmp_path: Path):
    root = tmp_path / "src"
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return load_program(read_directory(root))


def test_a_function_whose_inputs_did_not_change_is_not_evaluated_again(tmp_path: Path):
    program, config = _program(tmp_path), Config()
    flows = Flows(program, term_catalog(config.driver_terms), config)
    analysis = flows.run()
    assert analysis.rounds == 3  # the term reaches the attribute, then its readers
    # `budget` reads the attribute `refresh` stores: evaluated again once it is there, and so
    # is `headroom`, which read nothing that changed but whose callee `budget` now returns the
    # term (its replay stops there). Without replays: 16 evaluations.
    assert dict(flows.evaluations) == {
        "pkg.mem.free_bytes": 1,
        "pkg.mem.Pool.refresh": 1,
        "pkg.mem.Pool.budget": 2,
        "pkg.mem.admit": 1,
        "pkg.mem.headroom": 2,
    }
    assert analysis.evaluated == 7


def test_rows_are_those_of_evaluating_every_round(tmp_path: Path):
    report = staleness(_program(tmp_path), Config())
    assert short(report) == [
        ("torch.cuda.mem_get_info", "budget", 13, "added", "widens", "", "n/a"),
        ("torch.cuda.mem_get_info", "admit", 17, "compared", "widens", "", "n/a"),
        ("torch.cuda.mem_get_info", "admit", 19, "compared", "widens", "", "n/a"),
        ("torch.cuda.mem_get_info", "headroom", 23, "added", "widens", "", "n/a"),
    ]
    chains = [[hop.function.rsplit(".", 1)[-1] for hop in row.chain] for row in report.rows]
    assert chains == [
        ["free_bytes", "refresh"],
        ["free_bytes", "refresh", "admit"],
        ["free_bytes", "admit"],
        ["free_bytes", "headroom"],
    ]
