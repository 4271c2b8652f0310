"""Fault 8 (pre-existing, same mechanism as fault 2): a known event's `synchronize()` is a
"sure" sync, and `after()` takes every sure sync to drain the whole queue (`DRAINED: True`).

An event sync waits only until the stream reaches the event's record point (the catalog's own
reason says so: "waits until the event's stream reaches it on the device"). `y = w @ w` is
queued after `ev.record()`, so `out.ids.tolist()` waits for the matmul wherever `out.ids` is on
the device; it is dropped as drained (`dominated`). The same holds for a side stream's
`s.synchronize()`. Expected: only a device-wide sync (`torch.cuda.synchronize()`) drains
everything; an event or stream wait leaves the later read its own finding."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_blocking import _assert_marked


def test_an_event_wait_does_not_drain_work_queued_after_its_record(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        class Out:
            ids: torch.Tensor

        def commit(out: Out, w):
            ev = torch.cuda.Event()
            ev.record()
            y = w @ w
            ev.synchronize()  # expect
            ids = out.ids.tolist()  # expect

        def loop(out: Out, w):
            while True:
                commit(out, w)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )


def test_a_side_streams_wait_does_not_drain_the_current_stream(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        class Out:
            ids: torch.Tensor

        def commit(out: Out, w):
            s = torch.cuda.Stream()
            y = w @ w
            s.synchronize()  # expect
            ids = out.ids.tolist()  # expect

        def loop(out: Out, w):
            while True:
                commit(out, w)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )
