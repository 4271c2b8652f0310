"""A warm run (summaries and resolution from the cache) answers exactly as a cold one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rankguard.cli import main
from tests.conftest import EXAMPLE


@pytest.mark.parametrize("command", ["rounds", "check", "staleness", "graph"])
def test_warm_run_equals_cold_run(capsys, tmp_path: Path, command: str):
    argv = [command, str(EXAMPLE), "--format", "json", "--cache-dir", str(tmp_path)]
    cold_code = main(argv)
    cold = capsys.readouterr().out
    assert list((tmp_path / "programs").glob("*.pickle")), "resolution was not cached"
    warm_code = main(argv)
    assert (warm_code, capsys.readouterr().out) == (cold_code, cold)


def test_cached_check_results_follow_options_and_content(capsys, tmp_path: Path):
    """Results are cached per file set, rules and options: a switch or an edit is never
    answered from the cache of another run."""
    from tests.conftest import write_tree

    root = write_tree(
        tmp_path / "src",
        {
            "sched.py": """
                import time
                import torch.distributed as dist

                class S:
                    def event_loop(self):
                        while True:
                            dist.barrier()
                            time.sleep(1)
            """
        },
    )
    cache = str(tmp_path / "cache")

    def check(*extra: str) -> str:
        main(["check", str(root), "--format", "json", "--cache-dir", cache, *extra])
        return capsys.readouterr().out

    plain, tail = check("--no-round-tail"), check()
    assert '"time.sleep"' not in plain and '"time.sleep"' in tail  # only the tail has it
    assert check("--no-round-tail") == plain and check() == tail

    def sleep_line(out: str) -> int:
        return json.loads(out)["findings"][0]["blocking"]["line"]

    assert sleep_line(tail) == 8
    moved = (root / "sched.py").read_text().replace("import time\n", "import time\n\n")
    (root / "sched.py").write_text(moved)  # the sleep moves to line 9
    assert sleep_line(check()) == 9
