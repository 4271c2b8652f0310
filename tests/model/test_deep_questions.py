"""Resolution asks lazily and recursively: a return type asks the returns it is made of, so the
first question about the head of a long chain goes as deep as the chain. Which question comes
first depends on what is already known (a warm run after an edit asks in another order than a
cold one: on sglang one edit turned a cold run's gradual answers into a single deep question
and the check stopped with `RecursionError`). Building the program has the rules' stack room."""

from __future__ import annotations

import sys
from pathlib import Path

from rankguard.adapters.sources import read_directory
from rankguard.model.load import load_program

DEPTH = 400  # a few frames per link: past Python's default limit of 1,000


def _chain() -> str:
    links = [f"def f{i}():\n    return f{i + 1}()\n\n\n" for i in range(DEPTH)]
    return (
        "class Worker:\n    def go(self):\n        pass\n\n\n"
        + "".join(links)
        + f"def f{DEPTH}():\n    return Worker()\n\n\n"
        + "def use():\n    w = f0()\n    w.go()\n"
    )


def test_a_return_chain_deeper_than_the_default_stack_resolves(tmp_path: Path):
    (tmp_path / "m.py").write_text(_chain())
    limit = sys.getrecursionlimit()
    program = load_program(read_directory(tmp_path, ()))
    targets = {r.call.text: [t.name for t in r.targets] for r in program.calls["m.use"]}
    assert targets["w.go"] == ["m.Worker.go"]
    assert sys.getrecursionlimit() == limit  # the caller's limit, as it was
