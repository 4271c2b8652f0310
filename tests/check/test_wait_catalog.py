"""The wait catalog, completed: host reads of device tensors through builtins and `if`,
pageable host-to-device copies, futures, asyncio waits, and `Work.wait()` after a poll."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.check.test_blocking import _assert_marked


def test_builtins_and_truth_tests_read_device_tensors(tmp_path: Path):
    findings = _assert_marked(
        tmp_path,
        """
        def event_loop(x):
            while True:
                done = torch.zeros(1, device="cuda")
                flag = torch.zeros(1)
                n = int(done)  # expect
                f = float(flag)
                b = bool(x)
                if done:  # expect
                    pass
                if flag:
                    pass
                dist.barrier()
        """,
    )
    assert {f.extra["blocking"]["kind"] for f in findings} == {"device-sync"}


def test_a_test_computed_from_a_device_tensor_reads_it(tmp_path: Path):
    # `if torch.any(mask):`, `if x.sum() > 0:`, `if x.any():` test a device tensor's
    # value on the host; a count of elements, a comparison with None, or a host tensor's
    # reduction read nothing from the device.
    _assert_marked(
        tmp_path,
        """
        def event_loop():
            while True:
                x = torch.zeros(4, device="cuda")
                h = torch.zeros(4)
                if torch.any(x):  # expect
                    pass
                if x.any():  # expect
                    pass
                if not x.sum() > 0:  # expect
                    pass
                if x.numel() > 0:
                    pass
                if x is not None:
                    pass
                if h.sum() > 0:
                    pass
                dist.barrier()
        """,
    )


def test_comparing_a_device_tensor_in_a_test_reads_it(tmp_path: Path):
    # `if n > 0:` on a device tensor makes a device boolean and reads it on the host, like
    # `if n.sum() > 0:`; its shape, a count of its elements, its dtype or device, another
    # device name, and a host tensor's comparison read nothing from the device.
    _assert_marked(
        tmp_path,
        """
        def event_loop(dev):
            while True:
                n = torch.zeros([], device="cuda")
                h = torch.zeros([])
                if n > 0:  # expect
                    pass
                if 0 < n <= 8:  # expect
                    pass
                if n == h:  # expect
                    pass
                if n.shape[0] > 0:
                    pass
                if n.numel() > 1:
                    pass
                if n.dtype == torch.float32:
                    pass
                if n.device == dev:
                    pass
                if h > 0:
                    pass
                dist.barrier()
        """,
    )


def test_each_operand_of_a_combined_test_is_read(tmp_path: Path):
    # `flag and torch.any(x)` reads the tensor wherever `flag` holds; `0 in x` searches a
    # device tensor on the host's behalf; `0 in ids_list` searches a list.
    _assert_marked(
        tmp_path,
        """
        def event_loop(flag, ids_list):
            while True:
                x = torch.zeros(4, device="cuda")
                if flag and torch.any(x):  # expect
                    pass
                if not (x.all() or flag):  # expect
                    pass
                if 0 in x:  # expect
                    pass
                if 0 in ids_list or flag:
                    pass
                if x is not None and flag:
                    pass
                dist.barrier()
        """,
    )


def test_pageable_host_to_device_copies(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        def event_loop(ids):
            while True:
                a = torch.tensor(ids, device="cuda")  # expect
                b = torch.tensor(ids)
                c = torch.as_tensor(ids, device="cpu")
                dist.barrier()
        """,
    )


def test_a_copy_to_a_device_the_model_cannot_name_is_reported_at_low(tmp_path: Path):
    # A runner's `self.device` is set from a parameter: which device is not known, so
    # `torch.tensor(ids, device=self.device)` is a blocking copy only where it names an
    # accelerator (low, saying why: a labelled sample of such copies on sglang was half false,
    # every true one behind an opt-in feature); a device known to be the host, or none, makes no
    # copy.
    findings = _assert_marked(
        tmp_path,
        """
        class Runner:
            def __init__(self, device):
                self.device = device

            def event_loop(self, ids, dev):
                while True:
                    a = torch.tensor(ids, device=self.device)  # expect
                    k = a @ a
                    b = torch.as_tensor(ids, device=dev)  # expect
                    c = torch.tensor(ids, device="cpu")
                    d = torch.tensor(ids)
                    k = b @ b
                    e = torch.tensor(ids, device="cuda")  # expect
                    f = torch.tensor(ids, device="meta")
                    g = torch.tensor([], device=self.device)
                    dist.barrier()
        """,
    )
    confidence = {
        f.extra["blocking"]["text"].split("(")[0]: f.extra["confidence"] for f in findings
    }
    assert sorted(f.extra["confidence"] for f in findings) == ["high", "low", "low"]
    assert all(f.extra["blocking"]["kind"] == "h2d-copy" for f in findings), confidence


def test_a_device_named_by_a_tensor_is_where_that_tensor_lives(tmp_path: Path):
    # `device=ids.device` builds where `ids` lives: on the host when the caller made `ids` there
    # (passed by keyword, through a static method, then positionally), so neither the factory
    # nor `.to(ids.device)` copies anything; a tensor made on the device names the device (high),
    # one the model cannot place stays low.
    findings = _assert_marked(
        tmp_path,
        """
        def rope(ids=None, **kwargs):
            deltas = torch.tensor([1, 2], device=ids.device)
            pos = torch.arange(4).to(ids.device)
            return deltas, pos

        class Emb:
            @staticmethod
            def index(a, ids=None, **kwargs):
                return rope(ids)

        def compute(ids):
            t = torch.tensor(ids, dtype=torch.long).unsqueeze(0)
            return Emb.index(1, ids=t)

        def event_loop(ids, unplaced):
            while True:
                compute(ids)
                g = torch.zeros(4, device="cuda")
                a = torch.tensor([1, 2], device=g.device)  # expect
                k = g @ g
                b = torch.tensor([1, 2], device=unplaced.device)  # expect
                dist.barrier()
        """,
    )
    assert sorted(f.extra["confidence"] for f in findings) == ["high", "low"]


def test_a_blocking_copy_of_a_host_tensor_to_a_device_waits_for_the_stream(tmp_path: Path):
    # `.to(device)` / `.cuda()` of a host tensor without `non_blocking=True` synchronises the
    # current stream after the copy (every kernel queued before it); with `non_blocking=True`,
    # a dtype, the host as target, or a tensor already on the device, it does not.
    findings = _assert_marked(
        tmp_path,
        """
        def event_loop(ids, dev):
            while True:
                h = torch.tensor(ids)
                g = torch.zeros(4, device="cuda")
                a = h.to("cuda")  # expect
                k = g @ g
                b = h.cuda()  # expect
                k = g @ g
                c = h.to(dev)  # expect
                k = g @ g
                d = h.to(device="cuda:0", dtype=torch.int32)  # expect
                k = g @ g
                e = h.to("cuda", non_blocking=True)
                f = h.cuda(non_blocking=True)
                i = h.to(torch.int32)
                j = h.to("cpu")
                k = g.to("cuda")
                dist.barrier()
        """,
    )
    assert sorted(f.extra["confidence"] for f in findings) == ["high", "high", "high", "low"]


def test_a_copy_right_after_a_sync_waits_only_for_itself(tmp_path: Path):
    # A copy to a known device synchronises the stream: a second one (or a read) right after
    # it, with nothing launched between, waits for nothing queued before it. A copy to a device
    # the model cannot name drains the queue only if it is an accelerator: the next copy of that
    # kind is its follower, listed with it (it waits in its place where the first was a no-op),
    # as a read of unknown placement is.
    findings = _assert_marked(
        tmp_path,
        """
        class Runner:
            def __init__(self, device):
                self.device = device

            def event_loop(self, x, y, z, w):
                while True:
                    a = torch.tensor(x, device="cuda")  # expect
                    b = torch.tensor(y, device="cuda")
                    n = a.sum().item()
                    m = a @ a
                    c = torch.tensor(z, device=self.device)  # expect
                    d = torch.tensor(w, device=self.device)
                    dist.barrier()
        """,
    )
    assert [f.extra["confidence"] for f in sorted(findings, key=lambda f: f.line)] == [
        "high",
        "low",
    ]
    assert "torch.tensor(w, device=self.device)" in findings[-1].message


def test_futures_and_asyncio_waits(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        import asyncio
        import concurrent.futures

        async def event_loop(fs, pool: concurrent.futures.ThreadPoolExecutor):
            q = asyncio.Queue()
            ev = asyncio.Event()
            lock = asyncio.Lock()
            while True:
                fut = pool.submit(print)
                r = fut.result()  # expect
                done, _ = concurrent.futures.wait(fs)  # expect
                done, _ = concurrent.futures.wait(fs, timeout=1)
                item = await q.get()  # expect
                await ev.wait()  # expect
                await lock.acquire()  # expect
                item = await asyncio.wait_for(q.get(), timeout=1)
                dist.barrier()
        """,
    )


def test_work_wait_after_a_completion_poll_is_not_a_wait(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        def event_loop():
            while True:
                work = dist.irecv(torch.ones(1), src=0)
                if work.is_completed():
                    work.wait()
                if not work.is_completed():
                    continue
                work.wait()
                other = dist.isend(torch.ones(1), dst=1)
                if other.is_completed() or True:
                    other.wait()  # expect
                dist.barrier()
        """,
    )


def test_a_wait_past_a_loop_polling_for_completion_returns_at_once(tmp_path: Path):
    """`while not w.is_completed(): await asyncio.sleep(t)` leaves only once the operation is
    complete, so the `w.wait()` after it (or in the loop's `else`) returns at once; a loop left
    by `break` may leave before, and a `for` loop tests nothing."""
    _assert_marked(
        tmp_path,
        """
        import asyncio
        import threading

        async def event_loop(reqs, t: threading.Thread):
            while True:
                work = dist.irecv(torch.ones(1), src=0)
                while not work.is_completed():
                    await asyncio.sleep(0.001)
                work.wait()
                other = dist.isend(torch.ones(1), dst=1)
                while not other.is_completed():
                    await asyncio.sleep(0.001)
                else:
                    other.wait()
                third = dist.isend(torch.ones(1), dst=1)
                while not third.is_completed():
                    if reqs:
                        break
                third.wait()  # expect
                fourth = dist.isend(torch.ones(1), dst=1)
                for _ in reqs:
                    pass
                fourth.wait()  # expect
                while t.is_alive():
                    await asyncio.sleep(0.1)
                t.join()
                dist.barrier()
        """,
    )


def test_an_attribute_polled_for_completion_is_complete_until_something_may_rebind_it(
    tmp_path: Path,
):
    # `self.worker` is polled, then waited on with nothing between: the wait returns at once.
    _assert_marked(
        tmp_path,
        """
        import asyncio

        class Gather:
            def __init__(self, t):
                self.worker = dist.all_gather_into_tensor(t, t, async_op=True)

            async def async_wait(self):
                while not self.worker.is_completed():
                    await asyncio.sleep(0.001)
                self.worker.wait()

        async def event_loop(t):
            while True:
                await Gather(t).async_wait()
                dist.barrier()
        """,
    )


@pytest.mark.parametrize(
    "program",
    [
        # the handle polled is not the one waited on: the name is bound again between
        """
        import asyncio

        async def event_loop():
            while True:
                work = dist.irecv(torch.ones(1), src=0)
                while not work.is_completed():
                    await asyncio.sleep(0.001)
                work = dist.irecv(torch.ones(1), src=1)
                work.wait()  # expect
                dist.barrier()
        """,
        # an attribute any call may rebind: no fact past the loop
        """
        import asyncio

        class S:
            def refresh(self):
                self.work = dist.irecv(torch.ones(1), src=1)

            async def event_loop(self):
                while True:
                    self.work = dist.irecv(torch.ones(1), src=0)
                    while not self.work.is_completed():
                        await asyncio.sleep(0.001)
                    self.refresh()
                    self.work.wait()  # expect
                    dist.barrier()
        """,
        # the thread polled is not the one joined
        """
        import threading

        def event_loop(t: threading.Thread, u: threading.Thread):
            while True:
                while t.is_alive():
                    time.sleep(0.1)  # expect
                t = u
                t.join()  # expect
                dist.barrier()
        """,
        # the same, under `if` (a review of the loop-exit change found it there first)
        """
        def event_loop():
            while True:
                work = dist.irecv(torch.ones(1), src=0)
                if work.is_completed():
                    work = dist.irecv(torch.ones(1), src=1)
                    work.wait()  # expect
                dist.barrier()
        """,
    ],
    ids=["rebound", "attribute", "thread", "if-rebound"],
)
def test_a_completion_test_says_nothing_of_what_is_bound_after_it(tmp_path: Path, program: str):
    _assert_marked(tmp_path, program)


def test_a_zero_sleep_yields_and_does_not_wait(tmp_path: Path):
    """`time.sleep(0)` gives other threads the GIL and returns: no time passes on this rank."""
    _assert_marked(
        tmp_path,
        """
        import time

        def event_loop(pause):
            while True:
                time.sleep(0)
                time.sleep(0.0)
                time.sleep(pause)  # expect
                time.sleep(0.5)  # expect
                dist.barrier()
        """,
    )


def test_an_output_sized_by_device_data_waits_for_it(tmp_path: Path):
    # `nonzero`, `unique`, `masked_select` size their output by the tensor's contents, so on a
    # device tensor the host reads the count back first (PyTorch's sync debug mode lists
    # them); on a host tensor they read nothing from a device.
    _assert_marked(
        tmp_path,
        """
        def event_loop(ids):
            while True:
                g = torch.zeros(4, device="cuda")
                h = torch.zeros(4)
                a = g.nonzero()  # expect
                k = g @ g
                b = torch.unique(g)  # expect
                k = g @ g
                c = torch.masked_select(g, g > 0)  # expect
                k = g @ g
                d = torch.nonzero(g, as_tuple=True)  # expect
                k = g @ g
                e = h.nonzero()
                f = torch.unique(h)
                dist.barrier()
        """,
    )


def test_copies_between_host_and_device_wait_for_the_stream(tmp_path: Path):
    # `.to("cpu")` is `.cpu()`; `dst.copy_(src)` between the host and a device synchronises
    # the stream unless `non_blocking=True`; the legacy `torch.Tensor(data)` builds on the
    # host. A copy within one side waits for nothing.
    findings = _assert_marked(
        tmp_path,
        """
        def event_loop(ids, dev):
            while True:
                g = torch.zeros(4, device="cuda")
                h = torch.zeros(4)
                a = g.to("cpu")  # expect
                k = g @ g
                b = g.to(torch.device("cpu"), non_blocking=True)
                c = h.to("cpu")
                g.copy_(h)  # expect
                k = g @ g
                h.copy_(g)  # expect
                k = g @ g
                g.copy_(g @ g)
                g.copy_(h, non_blocking=True)
                h.copy_(torch.zeros(4))
                legacy = torch.Tensor([1, 2]).to("cuda")  # expect
                k = g @ g
                m = g.to(dev.device)
                dist.barrier()
        """,
    )
    assert [f.extra["blocking"]["kind"] for f in findings] == [
        "device-sync", "h2d-copy", "device-sync", "h2d-copy"
    ]  # fmt: skip


def test_a_summary_writer_flush_writes_its_file(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        from torch.utils.tensorboard import SummaryWriter

        class Trainer:
            def __init__(self):
                self.writer = SummaryWriter("runs")

            def event_loop(self):
                while True:
                    self.writer.flush()  # expect
                    dist.barrier()
        """,
    )


def test_an_assert_tests_and_a_formatted_tensor_is_read(tmp_path: Path):
    # `assert t > 0` reads its test as `if` does; `f"{t:.4f}"` formats the tensor (its value is
    # copied to the host to be printed: `Tensor.__format__` calls `.item()`), and so do `!s`
    # and `!r`. A host value, or a device tensor's shape, prints without a device read.
    _assert_marked(
        tmp_path,
        """
        def event_loop(ids, log):
            while True:
                g = torch.zeros(4, device="cuda")
                t = g.sum()
                h = torch.zeros(4)
                assert t > 0.0  # expect
                k = g @ g
                clip = 1.0 / (g.norm() + 1e-6)
                if clip < 1:  # expect
                    pass
                k = g @ g
                log(f"loss {t:0.4f}")  # expect
                k = g @ g
                log(f"grad {g!r}")  # expect
                k = g @ g
                log(f"{h} {g.shape} {len(ids)}")
                assert h.sum() > 0
                dist.barrier()
        """,
    )
