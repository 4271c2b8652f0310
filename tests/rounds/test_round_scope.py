"""What a round is: the `while` loop of a round function that has one, else (configured) its
whole body, which a caller outside it runs once per round; discovered rounds stay loops.

`rankguard rounds --format json` says which (`scope`: "loop" or "body"; `loop_line` keeps its
meaning from before body rounds: the round loop's line, for a body round its first loop, null
only with no loop at all); `line` stays the def line for both. A pattern whose every match has
no loop and reaches no collective stays an error (exit 2), as it was ("has no loop"). Another
configured round that reaches no collective is named on stderr and in the JSON's `warnings`
(it can have no finding, so a gate on it would pass silently); the exit code stays what the
findings make it.

Failed first (the patch steps of HELPERS.md, rankguard/ at main 25a183d): there was no `scope`;
the training step's round was its warm-up loop (loop_line 11, one collective); a configured
function without a loop was an input error (exit 2); a configured round reaching no collective
was listed with no word on stderr. The event-loop and discovery rows passed before except for
the new `scope` field.

Review 13 (failed first against de7c487/b55341f): `loop_line` was null for a body round with a
`for` loop (6 before body rounds); a pattern matching only a loop-less function reaching no
collective exited 0 with a warning (2 before); the warning on a nested match said it "runs
within its round".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rankguard.cli import main
from tests.conftest import write_tree

SCHEDULE = """
import torch
import torch.distributed as dist


def finalize_grads(grads):
    torch.cuda.synchronize()
    dist.all_reduce(grads)


def train_step(model, batches, warmup):
    for i in range(warmup):
        out = model(batches[i])
        dist.send(out, 1)
    for i in range(warmup, len(batches)):
        out = model(batches[i])
        dist.send(out, 1)
        dist.recv(out, 1)
    finalize_grads(model.grads)


def log_step(model):
    print(model)


class Server:
    def event_loop(self):
        dist.barrier()
        for item in self.items:
            dist.broadcast(item, 0)
        while True:
            dist.all_reduce(self.x)
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return write_tree(tmp_path, {"pkg/__init__.py": "", "pkg/sched.py": SCHEDULE})


def _json(capsys, *argv: str) -> tuple[int, dict, str]:
    code = main([*argv, "--format", "json", "--no-cache"])
    out = capsys.readouterr()
    return code, json.loads(out.out), out.err


def _rows(data: dict) -> dict[str, dict]:
    return {r["round"]: r for r in data["rounds"]}


def test_a_configured_training_step_is_its_whole_body(project: Path, capsys):
    code, data, err = _json(capsys, "rounds", "pkg", "--round", "*.train_step")
    assert (code, err) == (0, "")
    row = _rows(data)["pkg.sched.train_step"]
    # `loop_line` keeps its meaning (the first loop, as before `scope`); `scope` says body.
    assert (row["line"], row["scope"], row["loop_line"]) == (10, "body", 11)
    # Both loops' collectives and the final reduction after them: the whole step.
    assert [(c["callee"], c["line"]) for c in row["collectives"]] == [
        ("torch.distributed.send", 13),
        ("torch.distributed.send", 16),
        ("torch.distributed.recv", 17),
        ("torch.distributed.all_reduce", 7),
    ]


def test_an_event_loop_keeps_its_while_loop(project: Path, capsys):
    code, data, _ = _json(capsys, "rounds", "pkg", "--round", "*.event_loop")
    assert code == 0
    row = _rows(data)["pkg.sched.Server.event_loop"]
    assert (row["line"], row["scope"], row["loop_line"]) == (26, "loop", 30)
    assert [c["callee"] for c in row["collectives"]] == ["torch.distributed.all_reduce"]


def test_discovered_rounds_stay_loops(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    trainer = SCHEDULE.replace("def train_step(", "def train(").split("def log_step")[0]
    write_tree(tmp_path, {"pkg/__init__.py": "", "pkg/sched.py": trainer})
    code, data, err = _json(capsys, "rounds", "pkg")
    assert code == 0 and "rounds discovered: pkg.sched.train" in err
    row = _rows(data)["pkg.sched.train"]
    assert (row["scope"], row["loop_line"]) == ("loop", 11)


def test_a_configured_function_without_a_loop_is_a_round(project: Path, capsys):
    code, data, err = _json(capsys, "rounds", "pkg", "--round", "*.finalize_grads")
    assert (code, err) == (0, "")
    row = _rows(data)["pkg.sched.finalize_grads"]
    assert (row["line"], row["scope"], row["loop_line"]) == (5, "body", None)
    assert [c["callee"] for c in row["collectives"]] == ["torch.distributed.all_reduce"]


WARNING = (
    "rankguard: warning: sched.py: round pkg.sched.log_step (pattern '*_step') reaches "
    "no collective, so nothing can be reported for it; if it is not a round, narrow the "
    "pattern; if it calls the project's collectives through wrappers the analysis does not "
    "resolve, name them in `collectives`\n"
)


def test_a_round_reaching_no_collective_is_named(project: Path, capsys):
    code, data, err = _json(capsys, "rounds", "pkg", "--round", "*_step")
    assert code == 0
    assert err == WARNING
    assert _rows(data)["pkg.sched.log_step"]["collectives"] == []
    assert data["warnings"] == [
        {"path": "sched.py", "message": WARNING.split("sched.py: ", 1)[1].rstrip("\n")}
    ]


def test_check_names_it_too_and_keeps_its_exit_code(project: Path, capsys):
    (project / "rg.toml").write_text('[tool.rankguard]\nrounds = ["*_step"]\n')
    code, data, err = _json(capsys, "check", "pkg", "--config", "rg.toml")
    assert code == 1  # the sync before the final reduction; a warning is no error
    assert err == WARNING
    assert data["errors"] == [] and len(data["warnings"]) == 1
    assert {f["blocking"]["callee"] for f in data["findings"]} == {"torch.cuda.synchronize"}


def test_a_pattern_matching_only_loopless_functions_reaching_nothing_is_an_error(
    project: Path, capsys
):
    """Exit 2 before body rounds ("has no loop"), so still exit 2: a CI gate on such a
    pattern must not start passing (DESIGN 4)."""
    (project / "rg.toml").write_text('[tool.rankguard]\nrounds = ["*.log_step"]\n')
    for argv in (
        ["check", "pkg", "--config", "rg.toml"],
        ["rounds", "pkg", "--round", "*.log_step"],
    ):
        assert main([*argv, "--no-cache"]) == 2
        out = capsys.readouterr()
        assert out.out == ""
        assert (
            "round pattern '*.log_step' matches pkg.sched.log_step, which has no loop " in out.err
        )
        assert "reaches no collective" in out.err


def test_a_loop_function_reaching_no_collective_stays_a_warning(
    tmp_path: Path, monkeypatch, capsys
):
    """It was exit 0 before body rounds; it stays exit 0, now with a warning."""
    monkeypatch.chdir(tmp_path)
    src = "def poll_step(items):\n    for item in items:\n        print(item)\n"
    write_tree(tmp_path, {"pkg/__init__.py": "", "pkg/poll.py": src})
    code, data, err = _json(capsys, "rounds", "pkg", "--round", "*.poll_step")
    assert code == 0 and "reaches no collective" in err
    row = _rows(data)["pkg.poll.poll_step"]
    assert (row["scope"], row["loop_line"], row["collectives"]) == ("body", 2, [])


NESTED = """
import torch.distributed as dist


def train_step(model, batches):
    def send_helper(out):
        dist.send(out, 1)

    def loop_helper(outs):
        for out in outs:
            dist.recv(out, 1)

    for batch in batches:
        send_helper(model(batch))
    loop_helper(model.outs)
    dist.all_reduce(model.grads)
"""


def test_functions_defined_inside_a_round_are_part_of_it(tmp_path: Path, monkeypatch, capsys):
    """`*` spans dots, so `*train_step*` matches the closures of `train_step` too; they run
    within its round (twice reported if they were rounds as well), and the warning says so."""
    monkeypatch.chdir(tmp_path)
    write_tree(tmp_path, {"pkg/__init__.py": "", "pkg/step.py": NESTED})
    code, data, err = _json(capsys, "rounds", "pkg", "--round", "*train_step*")
    assert code == 0
    assert list(_rows(data)) == ["pkg.step.train_step"]
    assert [(c["callee"], c["line"]) for c in data["rounds"][0]["collectives"]] == [
        ("torch.distributed.send", 6),
        ("torch.distributed.recv", 10),
        ("torch.distributed.all_reduce", 15),
    ]
    assert err == (
        "rankguard: warning: step.py: round pkg.step.train_step (pattern '*train_step*'): the "
        "pattern also matches 2 function(s) defined inside it (loop_helper, send_helper); "
        "they are not rounds of their own and are analysed only where the round calls them\n"
    )


CONTRACT = """
import torch
import torch.distributed as dist


def train_step(xs):
    for x in xs:
        dist.all_reduce(x)
    torch.cuda.synchronize()
"""


def test_loop_line_of_a_body_round_is_its_first_loop(tmp_path: Path, monkeypatch, capsys):
    """`loop_line` was 6 here before body rounds (the first loop, then the round): it keeps
    that value, and only `scope` says the round is the body (DESIGN 4)."""
    monkeypatch.chdir(tmp_path)
    write_tree(tmp_path, {"pkg/__init__.py": "", "pkg/mod.py": CONTRACT})
    code, data, _ = _json(capsys, "rounds", "pkg", "--round", "*.train_step")
    assert code == 0
    row = _rows(data)["pkg.mod.train_step"]
    assert (row["scope"], row["loop_line"]) == ("body", 6)


POLL = """
import torch.distributed as dist


def ready():
    return True


def step(x):
    while not ready():
        pass
    dist.all_reduce(x)
"""


def test_a_poll_loop_reaching_no_collective_leaves_the_round_to_the_body(
    tmp_path: Path, monkeypatch, capsys
):
    """`scope` says body; `loop_line` stays the loop the rule picked before (the poll)."""
    monkeypatch.chdir(tmp_path)
    write_tree(tmp_path, {"pkg/__init__.py": "", "pkg/mod.py": POLL})
    code, data, err = _json(capsys, "rounds", "pkg", "--round", "*.step")
    assert (code, err) == (0, "")
    row = _rows(data)["pkg.mod.step"]
    poll = (tmp_path / "pkg/mod.py").read_text().splitlines().index("    while not ready():")
    assert (row["scope"], row["loop_line"]) == ("body", poll + 1)
    assert [c["callee"] for c in row["collectives"]] == ["torch.distributed.all_reduce"]
