"""Properties over generated programs, with a fixed example budget so CI is repeatable:

- every analysis terminates and never raises on any syntactically valid module;
- output is deterministic: the same input gives the same bytes;
- unrelated lines inserted above a finding change its line numbers, never its fingerprint.
"""

from __future__ import annotations

import contextlib
import io
import json
import pickle
import tempfile
import textwrap
from pathlib import Path

import hypothesmith
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankguard.cli import main
from rankguard.summary.parse import parse_bytes

BUDGET = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def _run(root: Path, *argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main([*argv, str(root), "--no-cache", "--format", "json"])
    return code, out.getvalue()


@BUDGET
@given(hypothesmith.from_grammar())
def test_any_valid_module_is_summarised_without_raising_and_deterministically(source: str):
    data = source.encode("utf-8", "surrogatepass")
    parsed = parse_bytes(data)  # the property: this returns (a summary or a reason), never raises
    assert pickle.dumps(parsed) == pickle.dumps(parse_bytes(data))  # and the same every time


# Statements a round may contain: blocking calls, collectives, helpers, branches, loops.
STATEMENTS = st.sampled_from(
    [
        "torch.cuda.synchronize()",
        "time.sleep(0.1)",
        "free, total = torch.cuda.mem_get_info()",
        "dist.all_reduce(t)",
        "dist.broadcast(t, 0)",
        "self.helper()",
        "if self.flag:\n    time.sleep(1)\nelse:\n    dist.barrier()",
        "for _ in range(3):\n    q.get()",
        "x = 1",
    ]
)


def _program(body: list[str], padding: list[str]) -> str:
    round_body = textwrap.indent("\n".join(body), " " * 12)
    return "\n".join(
        [
            "import queue",
            "import time",
            "import torch",
            "import torch.distributed as dist",
            "q = queue.Queue()",
            *padding,
            "class Scheduler:",
            "    def helper(self):",
            "        torch.cuda.memory_stats()",
            "        dist.all_gather_object([], 1)",
            "    def event_loop_normal(self):",
            "        t = torch.zeros(1)",
            "        while True:",
            round_body,
            "",
        ]
    )


PADDING = st.lists(
    st.sampled_from(["# a comment", "", "def unrelated():\n    return 2", "CONSTANT = 3"]),
    min_size=1,
    max_size=6,
)


def _check(source: str) -> tuple[int, dict]:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "sched.py").write_text(source)
        # The round is named: a generated body may reach no collective, and then discovery
        # (rightly) finds no round and exits 2.
        (root / "pyproject.toml").write_text('[tool.rankguard]\nrounds = ["*.event_loop_normal"]\n')
        code, out = _run(root, "check")
    return code, json.loads(out)


@BUDGET
@given(st.lists(STATEMENTS, min_size=1, max_size=8), PADDING)
def test_findings_are_deterministic_and_fingerprints_survive_inserted_lines(body, padding):
    plain = _program(body, [])
    code, first = _check(plain)
    assert (code, first) == _check(plain)  # same input, same output
    moved_code, moved = _check(_program(body, padding))
    assert moved_code == code
    before = sorted(f["fingerprint"] for f in first["findings"])
    after = sorted(f["fingerprint"] for f in moved["findings"])
    assert before == after
    shift = sum(p.count("\n") + 1 for p in padding)
    assert sorted(f["line"] + shift for f in first["findings"]) == sorted(
        f["line"] for f in moved["findings"]
    )


@BUDGET
@given(st.lists(STATEMENTS, min_size=1, max_size=8))
def test_rounds_and_graph_are_deterministic(body):
    source = _program(body, [])
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "sched.py").write_text(source)
        for command in ("rounds", "graph"):
            assert _run(root, command) == _run(root, command)


def test_the_generated_programs_do_have_findings():
    """Guards the property above against passing vacuously."""
    code, result = _check(_program(["time.sleep(0.1)", "dist.all_reduce(t)", "self.helper()"], []))
    assert code == 1
    assert {f["blocking"]["callee"] for f in result["findings"]} == {
        "time.sleep",
        "torch.cuda.memory_stats",
    }
