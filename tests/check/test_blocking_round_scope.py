"""blocking-before-collective over a configured round function that has no `while` loop.

Such a function (a training step, a pipeline schedule) is called once per round by a caller
outside the analysed tree: its whole body is the round, wrapping from the body's end back to
its first collective. Its first `for` loop (the warm-up micro-batches) is not the round, so a
sync after that loop and before the final reduction is in it. A function with a `while` loop
keeps its loop as the round, and discovery (no rounds configured) keeps loops as rounds.

Failed first (the patch steps of HELPERS.md, rankguard/ at main 25a183d): the training step's
sync after the first loop was not reported (the round was the warm-up loop), nor its tail; the
function without a loop was an input error ("has no loop", exit 2). The `while True` and
discovery cases passed before and stay as guards.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from rankguard.rules.blocking_before_collective import BlockingBeforeCollective
from tests.check.helpers import HEAD, check_files, marked_lines

RULE = [BlockingBeforeCollective]

TRAIN_STEP = """
def wait_for_grads():
    torch.cuda.synchronize()  # expect


def finalize_grads(grads):
    dist.all_reduce(grads)


def train_step(model, batches, warmup):
    for i in range(warmup):
        out = model(batches[i])
        dist.send(out, 1)
    for i in range(warmup, len(batches)):
        out = model(batches[i])
        dist.send(out, 1)
        dist.recv(out, 1)
    wait_for_grads()
    finalize_grads(model.grads)
    gc.collect()  # expect
"""


def _findings(tmp_path: Path, body: str, settings: dict | None = None):
    code = HEAD + textwrap.dedent(body)
    result = check_files(tmp_path, {"mod.py": code}, RULE, settings)
    return code, result.findings


def test_a_training_step_is_a_round_from_its_first_line_to_its_last(tmp_path: Path):
    code, found = _findings(tmp_path, TRAIN_STEP, {"rounds": ["*.train_step"]})
    assert sorted({f.line for f in found}) == marked_lines(code)
    sync = [f for f in found if f.extra["blocking"]["callee"] == "torch.cuda.synchronize"]
    assert len(sync) == 1
    (finding,) = sync
    call_line = code.splitlines().index("    wait_for_grads()") + 1
    assert finding.extra["round"] == "mod.train_step"
    assert finding.extra["round_tail"] is False
    assert finding.extra["collective"]["callee"] == "torch.distributed.all_reduce"
    sync_line = code.splitlines().index("    torch.cuda.synchronize()  # expect") + 1
    assert [(h["function"], h["line"]) for h in finding.extra["chain"]] == [
        ("mod.train_step", call_line),
        ("mod.wait_for_grads", sync_line),
    ]
    # The round wraps: what runs after the final reduction delays the next step's first
    # collective (a send of either loop, or the reduction when both loops run zero times).
    tail = [f for f in found if f.extra["blocking"]["callee"] == "gc.collect"]
    assert tail and all(f.extra["round_tail"] for f in tail)
    assert {f.extra["collective"]["callee"] for f in tail} <= {
        "torch.distributed.send",
        "torch.distributed.all_reduce",
    }


def test_a_configured_function_without_a_loop_is_a_round(tmp_path: Path):
    code, found = _findings(
        tmp_path,
        """
        def step(x):
            torch.cuda.synchronize()  # expect
            dist.all_reduce(x)
            gc.collect()  # expect
            if x is None:
                return
            dist.barrier()
        """,
        {"rounds": ["*.step"]},
    )
    assert sorted({f.line for f in found}) == marked_lines(code)
    by_callee = {f.extra["blocking"]["callee"]: f.extra for f in found}
    sync, collect = by_callee["torch.cuda.synchronize"], by_callee["gc.collect"]
    assert (sync["collective"]["callee"], sync["round_tail"]) == (
        "torch.distributed.all_reduce",
        False,
    )
    # An early return ends the round as the body's end does: the collection delays this
    # round's barrier, and on the path that returns, the next round's all_reduce (which
    # runs every round, so it is the one named).
    assert [c["callee"] for c in collect["collectives"]] == [
        "torch.distributed.barrier",
        "torch.distributed.all_reduce",
    ]
    assert (collect["collective"]["callee"], collect["round_tail"]) == (
        "torch.distributed.all_reduce",
        True,
    )


def test_an_event_loop_keeps_its_while_loop_as_the_round(tmp_path: Path):
    """Start-up before the loop and a `for` loop before the `while` stay outside the round."""
    code, found = _findings(
        tmp_path,
        """
        def event_loop(items):
            torch.cuda.synchronize()
            dist.barrier()
            for item in items:
                gc.collect()
                dist.broadcast(item, 0)
            while True:
                time.sleep(1)  # expect
                dist.broadcast(None, 0)
        """,
        {"rounds": ["*.event_loop"]},
    )
    assert sorted(f.line for f in found) == marked_lines(code)


def test_discovered_rounds_stay_loops(tmp_path: Path):
    """With no rounds configured, a training function's `for` loop is the round (discovered
    rounds are loops by definition): work before the loop is start-up."""
    code, found = _findings(
        tmp_path,
        """
        def train(steps, x):
            torch.cuda.synchronize()
            dist.barrier()
            for step in range(steps):
                time.sleep(1)  # expect
                dist.all_reduce(x)
        """,
    )
    assert sorted(f.line for f in found) == marked_lines(code)


def test_a_poll_loop_reaching_no_collective_is_not_the_round(tmp_path: Path):
    """A `while` that only polls (`while not ready(): pass`) reaches no collective: the
    round is a `while` that does, else the whole body (review 13; failed first at a162301:
    the poll loop was the round, so nothing was reported)."""
    code, found = _findings(
        tmp_path,
        """
        def ready():
            return True

        def step(x):
            while not ready():
                pass
            dist.all_reduce(x)
            torch.cuda.synchronize()  # expect

        def serve(x, running):
            while not ready():
                pass
            while running:
                time.sleep(1)  # expect
                dist.all_reduce(x)
        """,
        {"rounds": ["*.step", "*.serve"]},
    )
    assert sorted(f.line for f in found) == marked_lines(code)
