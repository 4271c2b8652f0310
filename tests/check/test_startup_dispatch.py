"""A method named at run time that the round object's start-up already calls.

An RPC worker loop runs whatever method a message names (`getattr(self.worker, method)(...)`):
the model cannot tell which names are sent, so every method of the worker is a guessed callee
(a "fallback" hop). Where the object's constructor calls that method itself (`init_device`,
`load_model`), it is a setup step the constructor has done; what it reaches is reported at low
confidence, naming the start-up call. A method start-up never calls keeps its confidence.
"""

from __future__ import annotations

from pathlib import Path

from rankguard.rules.blocking_before_collective import BlockingBeforeCollective
from tests.check.helpers import HEAD, check_files

LOOP = (
    HEAD
    + """
class Worker:
    def init_device(self):
        torch.cuda.synchronize()

    def execute_model(self):
        torch.cuda.synchronize()


class WorkerProc:
    def __init__(self, mq):
        self.mq = mq
        self.worker = Worker()
        self.worker.init_device()

    def worker_busy_loop(self):
        while True:
            method, args = self.mq.dequeue()
            func = getattr(self.worker, method)
            output = func(*args)
            dist.broadcast_object_list([output])
"""
)


def test_a_method_named_at_run_time_that_start_up_calls_is_low(tmp_path: Path):
    result = check_files(
        tmp_path,
        {"mod.py": LOOP},
        [BlockingBeforeCollective],
        {"rounds": ["*.worker_busy_loop"]},
    )
    got = {f.extra["chain"][-1]["function"]: f.extra["confidence"] for f in result.findings}
    assert got == {"mod.Worker.init_device": "low", "mod.Worker.execute_model": "high"}
    (low,) = [f for f in result.findings if f.extra["confidence"] == "low"]
    assert "mod.WorkerProc.__init__" in low.extra["confidence_note"], low.extra["confidence_note"]


def test_a_method_guessed_by_its_name_alone_keeps_its_confidence(tmp_path: Path):
    """The constructor warms up by calling `execute_model` itself, and the loop calls it on an
    untyped executor (the one class defining the name: a guess, but not a name a message
    carries): every round runs it, so it stays high."""
    code = (
        HEAD
        + """
class Worker:
    def __init__(self):
        self.execute_model(None)

    def execute_model(self, batch):
        torch.cuda.synchronize()

    def event_loop(self, executor, batch):
        while True:
            executor.execute_model(batch)
            dist.barrier()
"""
    )
    result = check_files(
        tmp_path, {"mod.py": code}, [BlockingBeforeCollective], {"rounds": ["*.event_loop"]}
    )
    assert [f.extra["confidence"] for f in result.findings] == ["high"]
