"""be3492c: an event's wait drains the queue only where that event was recorded last on the
current stream, with nothing launched since."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_blocking import _assert_marked


def test_an_event_recorded_on_a_named_stream_drains_not_the_current_one(tmp_path: Path):
    # `record(stream=side)` is a record on the side stream: its wait leaves the current
    # stream's queue (`y * 2`) running, so the read after it waits by itself.
    _assert_marked(
        tmp_path,
        """
        class Engine:
            def __init__(self):
                self.end = torch.cuda.Event()
                self.side = torch.cuda.Stream()

            def step(self, ids: torch.Tensor, y: torch.Tensor):
                z = y * 2
                self.end.record(stream=self.side)
                self.end.synchronize()  # expect
                done = ids.tolist()  # expect

            def loop(self, ids, y):
                while True:
                    self.step(ids, y)
                    dist.barrier()
        """,
        {"rounds": ["mod.Engine.loop"]},
    )


def test_an_event_rebound_after_its_record_was_not_recorded(tmp_path: Path):
    # `end = other` after `end.record()`: the wait is on another event, never recorded here.
    _assert_marked(
        tmp_path,
        """
        class Engine:
            def __init__(self):
                self.end = torch.cuda.Event()
                self.other = torch.cuda.Event()

            def step(self, ids: torch.Tensor, y: torch.Tensor):
                z = y * 2
                end = self.end
                end.record()
                end = self.other
                end.synchronize()  # expect
                done = ids.tolist()  # expect

            def loop(self, ids, y):
                while True:
                    self.step(ids, y)
                    dist.barrier()
        """,
        {"rounds": ["mod.Engine.loop"]},
    )


def test_an_event_recorded_under_a_side_stream_drains_not_the_current_one(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        class Engine:
            def __init__(self):
                self.end = torch.cuda.Event()
                self.side = torch.cuda.Stream()

            def step(self, ids: torch.Tensor, y: torch.Tensor):
                z = y * 2
                with torch.cuda.stream(self.side):
                    self.end.record()
                self.end.synchronize()  # expect
                done = ids.tolist()  # expect

            def loop(self, ids, y):
                while True:
                    self.step(ids, y)
                    dist.barrier()
        """,
        {"rounds": ["mod.Engine.loop"]},
    )


def test_a_fresh_event_was_not_recorded(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        class Engine:
            def __init__(self):
                self.end = torch.cuda.Event()

            def step(self, ids: torch.Tensor, y: torch.Tensor):
                z = y * 2
                self.end.record()
                self.end = torch.cuda.Event()
                self.end.synchronize()  # expect
                done = ids.tolist()  # expect

            def loop(self, ids, y):
                while True:
                    self.step(ids, y)
                    dist.barrier()
        """,
        {"rounds": ["mod.Engine.loop"]},
    )
