"""Fault 2: a wait for an event or a stream of unknown kind becomes a head, and the tensor
read after it is folded into it as a follower.

`ev.synchronize()` (untyped receiver, matched by name) waits for an event's recorded point or
for one stream; it does not drain the queue the matmul `w @ w` went to. `out.ids.tolist()`
therefore waits for that matmul wherever `out.ids` is on the device, whatever `ev` is: a
wait of its own. The code knows this for the follower side ("A stream or event may hold work
of its own: only a tensor's read is the earlier's follower", `maybe_drained`) but `after()`
still sets SYNCED for the stream/event wait, so the read is `drained_by` it and disappears
into its `followers` with the message "waiting in its place where this call's tensor is on
the host" (an event has no such tensor). At 84adc74 `out.ids.tolist()` was its own finding."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_blocking import _assert_marked


def test_a_read_after_an_event_wait_is_not_its_follower(tmp_path: Path):
    findings = _assert_marked(
        tmp_path,
        """
        class Out:
            ids: torch.Tensor

        def commit(out: Out, ev, w):
            y = w @ w
            ev.synchronize()  # expect
            ids = out.ids.tolist()  # expect

        def loop(out: Out, ev, w):
            while True:
                commit(out, ev, w)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )
    assert all(not f.extra.get("followers") for f in findings)
