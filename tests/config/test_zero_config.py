"""Zero configuration and loud failures: discovered rounds, and misconfigurations that exit 2.

Each misconfiguration once gave `0 findings` and exit 0, a gate passing silently; each message
is held here exactly, so it keeps saying what to do.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from rankguard.cli import main

TRAINER = """
import torch
import torch.distributed as dist


class Model:
    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
            dist.all_reduce(x)
        return x


class Trainer:
    def __init__(self):
        self.model = Model()

    def train(self):
        for step in range(self.steps):
            loss = self.model.forward(self.batch())
            torch.cuda.synchronize()
            dist.all_reduce(loss)

    def batch(self):
        return torch.ones(3)
"""

SERVER = """
import asyncio
import torch
import torch.distributed as dist


class Server:
    async def serve_forever(self):
        while not self.stopped:
            await asyncio.sleep(0)
            torch.cuda.synchronize()
            dist.barrier()
"""


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--no-cache"])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return write(tmp_path, {"pkg/__init__.py": "", "pkg/train.py": TRAINER})


def test_training_project_without_config_discovers_its_round(project: Path, capsys):
    code, out, err = run(capsys, "check", "pkg")
    assert code == 1, out + err
    assert err.splitlines()[0] == (
        "rankguard: rounds discovered: pkg.train.Trainer.train "
        "(set [tool.rankguard] rounds to choose)"
    )
    assert "torch.cuda.synchronize" in out
    # Text paths are relative to the current folder, so a terminal can open them.
    assert "(pkg/train.py:" in out


def test_async_serving_loop_until_stopped_is_discovered(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, {"srv/__init__.py": "", "srv/server.py": SERVER})
    code, out, err = run(capsys, "check", "srv")
    assert code == 1, out + err
    assert "rounds discovered: srv.server.Server.serve_forever " in err


def test_discover_lists_candidates_with_evidence(project: Path, capsys):
    code, out, _ = run(capsys, "rounds", "pkg", "--discover", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["used"] == ["pkg.train.Trainer.train"]
    by_name = {c["round"]: c["evidence"] for c in data["candidates"]}
    assert by_name["pkg.train.Trainer.train"] == [
        "for ... in range(self.steps) loop reaches 2 collective(s)",
        "conventional round name",
    ]
    # The per-layer loop runs inside the training round: listed, never used.
    assert by_name["pkg.train.Model.forward"][-1] == (
        "nested: reached from the round of pkg.train.Trainer.train"
    )


SUPERVISED = """
import torch.distributed as dist


class Scheduler:
    def event_loop_normal(self):
        while not self.stopped:
            self.recv()
            dist.barrier()

    def recv(self):
        while self.pending:  # a work list, not a round
            self.pending.pop()
            dist.all_reduce(self.t)


def run_supervisor():
    while True:
        Scheduler().event_loop_normal()
"""


def test_a_supervisor_restarting_an_event_loop_is_not_the_round(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, {"srv/__init__.py": "", "srv/sched.py": SUPERVISED})
    code, out, _ = run(capsys, "rounds", "srv", "--discover", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["used"] == ["srv.sched.Scheduler.event_loop_normal"]
    by_name = {c["round"]: c["evidence"] for c in data["candidates"]}
    assert by_name["srv.sched.run_supervisor"][-1] == (
        "supervisor: its loop runs the round of srv.sched.Scheduler.event_loop_normal"
    )
    assert by_name["srv.sched.Scheduler.event_loop_normal"] == [
        "while not self.stopped loop reaches 2 collective(s)",
        "loop runs until stopped",
        "conventional round name",
    ]
    assert by_name["srv.sched.Scheduler.recv"] == [
        "while self.pending loop reaches 1 collective(s)",
        "loop runs until stopped",
        "nested: reached from the round of srv.sched.Scheduler.event_loop_normal",
    ]


def test_no_round_found_is_an_error_saying_what_to_configure(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, {"lib/__init__.py": "", "lib/util.py": "def f():\n    return 1\n"})
    code, out, err = run(capsys, "check", "lib")
    assert code == 2 and out == ""
    assert err == (
        "rankguard: error: lib: no round found: no function runs a loop that reaches a "
        'collective. Set [tool.rankguard] rounds = ["pkg.mod.Class.loop_method"] (fnmatch '
        "patterns over qualified names) and, for project wrappers, collectives = [...]; "
        "`rankguard rounds --discover` lists what was considered\n"
    )
    assert run(capsys, "rounds", "lib", "--discover")[0] == 2


def test_config_file_without_the_table(project: Path, capsys):
    (project / "rg.toml").write_text("[tool.ruff]\nline-length = 99\n")
    code, out, err = run(capsys, "check", "pkg", "--config", "rg.toml")
    assert (code, out) == (2, "")
    assert err == (
        "rankguard: error: rg.toml: no [tool.rankguard] table (and no settings at the top "
        "level); add the table, or leave out --config to use the nearest pyproject.toml\n"
    )


def test_near_miss_table_name_is_named(project: Path, capsys):
    (project / "rg.toml").write_text('[tool.rankgaurd]\nrounds = ["*.train"]\n')
    code, _, err = run(capsys, "check", "pkg", "--config", "rg.toml")
    assert code == 2
    assert err == (
        "rankguard: error: rg.toml: [tool.rankgaurd] looks like a misspelling of "
        "[tool.rankguard]; rename the table (nothing in it is read)\n"
    )
    # The same typo in a pyproject.toml found above PATH.
    (project / "rg.toml").rename(project / "pyproject.toml")
    code, _, err = run(capsys, "check", "pkg")
    assert code == 2 and "pyproject.toml: [tool.rankgaurd] looks like a misspelling" in err


def test_round_pattern_matching_nothing_lists_the_closest_names(project: Path, capsys):
    (project / "pyproject.toml").write_text('[tool.rankguard]\nrounds = ["*.Trainer.trian"]\n')
    code, out, err = run(capsys, "check", "pkg")
    assert (code, out) == (2, "")
    assert err == (
        f"rankguard: error: {project / 'pyproject.toml'}: round pattern '*.Trainer.trian' "
        "matches no function; closest: pkg.train.Trainer.train\n"
    )


def test_round_pattern_on_a_function_reaching_no_collective(project: Path, capsys):
    """An error ("has no loop") before a configured function without a loop became a round by
    its whole body (`analysis.reach.round_scope`); a pattern whose every match has no loop and
    reaches no collective stays an error, so a gate on it never starts passing (DESIGN 4)."""
    code, out, err = run(capsys, "rounds", "pkg", "--round", "*.Trainer.batch")
    assert (code, out) == (2, "")
    assert err == (
        "rankguard: error: --round: round pattern '*.Trainer.batch' matches "
        "pkg.train.Trainer.batch, which has no loop and reaches no collective; a round "
        "function runs the loop whose iterations are rounds, or is called once per round "
        "and reaches the round's collectives\n"
    )


def test_a_path_that_does_not_exist(project: Path, capsys):
    code, out, err = run(capsys, "check", "pkg/nope.py")
    assert (code, out) == (2, "")
    assert err == "rankguard: error: pkg/nope.py: no such file or folder\n"
    code, _, err = run(capsys, "check", "pkg", "pkg/nope.py")
    assert code == 2 and err == "rankguard: error: pkg/nope.py: no such file or folder\n"
