"""A warm run (summaries and resolution from the cache) answers exactly as a cold one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rankguard.adapters.sources import read_directory
from rankguard.cli import main
from rankguard.model.load import load_program
from rankguard.summary.parse import SummaryCache
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


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a function returning a reference (a decorator's wrapper) is read by its callers' modules
        ("    return inner\n", "    return local\n"),
        # a generator's yields are what a `for` over it holds, in another module too
        ("def feed():\n    return []\n", "def feed():\n    yield SINK\n"),
        # naming a class as a value makes it a receiver that class-hierarchy dispatch keeps
        ("def make():\n    return None\n", "def make():\n    REGISTRY.append(Loud)\n"),
    ],
    ids=["returned reference", "generator", "class now instantiated"],
)
def test_an_edit_that_changes_what_other_modules_see_is_not_answered_warm(
    tmp_path: Path, old: str, new: str
):
    from tests.conftest import write_tree

    root = write_tree(
        tmp_path / "src",
        {
            "a.py": """
                import time


                class Base:
                    def run(self):
                        pass


                class Quiet(Base):
                    def run(self):
                        pass


                class Loud(Base):
                    def run(self):
                        time.sleep(1)


                class Sink:
                    def put(self):
                        time.sleep(1)


                SINK = Sink()
                REGISTRY = []


                def dec(f):
                    def inner():
                        f()

                    def local():
                        time.sleep(1)

                    return inner


                def feed():
                    return []


                def make():
                    return None


                def quiet():
                    return Quiet()
            """,
            "b.py": """
                import torch.distributed as dist
                from a import Base, dec, feed


                @dec
                def h():
                    pass


                def event_loop(base: Base):
                    while True:
                        h()
                        base.run()
                        for sink in feed():
                            sink.put()
                        dist.barrier()
            """,
        },
    )

    def edges(cache: SummaryCache) -> set[tuple[str, str]]:
        program = load_program(read_directory(root, ()), cache)
        return {(f, t.name) for f, calls in program.calls.items() for r in calls for t in r.targets}

    edges(SummaryCache(tmp_path / "cache"))
    (root / "a.py").write_text((root / "a.py").read_text().replace(old, new))
    assert edges(SummaryCache(tmp_path / "cache")) == edges(SummaryCache(None))
