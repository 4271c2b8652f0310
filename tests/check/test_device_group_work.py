"""A Work handle of a collective on a device (NCCL) group: `wait()` makes the current CUDA
stream wait for the collective and returns (PyTorch's documented semantics for CUDA
collectives), so the host does not straggle there. lmdeploy 0.18.0 broadcasts its next tokens
with `dist.broadcast(..., group=tp_gpu_group, async_op=True)` and waits on the handle a step
later: both labelled false (lmd-31, lmd-32). A barrier's Work synchronizes the host on NCCL
too; on a CPU (gloo) group, or one whose kind its name does not say, `wait()` blocks the host
until every peer has joined, as before. The handle is not a tensor: testing or printing it
reads nothing from the device.
"""

from __future__ import annotations

from pathlib import Path

from tests.check.test_blocking import _assert_marked


def test_a_device_groups_work_is_a_stream_wait(tmp_path: Path) -> None:
    _assert_marked(
        tmp_path,
        """
        def on_device(t, tp_gpu_group):
            while True:
                handle = dist.broadcast(t, src=0, group=tp_gpu_group, async_op=True)
                handle.wait()
                dist.barrier()

        def on_a_stored_device_group(t, pg):
            while True:
                work = dist.all_reduce(t, group=pg.device_group, async_op=True)
                work.wait()
                dist.barrier()

        def on_host(t, tp_cpu_group):
            while True:
                handle = dist.broadcast(t, src=0, group=tp_cpu_group, async_op=True)
                handle.wait()  # expect
                dist.barrier()

        def on_gloo(t, gloo_group):
            while True:
                work = dist.all_reduce(t, group=gloo_group, async_op=True)
                work.wait()  # expect
                dist.barrier()

        def on_an_unnamed_group(t, group):
            while True:
                handle = dist.broadcast(t, src=0, group=group, async_op=True)
                handle.wait()  # expect
                dist.barrier()

        def on_the_default_group(t):
            while True:
                handle = dist.all_reduce(t, async_op=True)
                handle.wait()  # expect
                dist.barrier()
        """,
    )


def test_a_barriers_work_still_holds_the_host(tmp_path: Path) -> None:
    _assert_marked(
        tmp_path,
        """
        def f(t, tp_gpu_group):
            while True:
                work = dist.barrier(group=tp_gpu_group, async_op=True)
                work.wait()  # expect
                dist.all_reduce(t)
        """,
    )


def test_a_device_groups_work_is_no_device_tensor(tmp_path: Path) -> None:
    _assert_marked(
        tmp_path,
        """
        def finish(h):
            if h:
                h.wait()

        def f(t, tp_gpu_group):
            while True:
                handle = dist.broadcast(t, src=0, group=tp_gpu_group, async_op=True)
                assert handle
                name = f"pending {str(handle)}"
                finish(handle)
                dist.barrier()
        """,
    )


def test_only_torch_collectives_make_a_work(tmp_path: Path) -> None:
    # A program's own function taking `async_op` returns what its body says: a device tensor.
    _assert_marked(
        tmp_path,
        """
        def fetch(t, group=None, async_op=False):
            dist.broadcast(t, src=0, group=group)
            return t.cuda()

        def f(t, tp_cpu_group, tp_gpu_group):
            while True:
                x = fetch(t, group=tp_cpu_group, async_op=True)
                n = x.item()  # expect
                dist.barrier()
        """,
    )
