"""Placement through what a program computes: arithmetic and tensor functions keep the
placement of their tensor operands, `.to(dtype)` keeps it, an assert (or a branch) on a
tensor's device places it, and an argument made by a call is placed at its call site. A value
of unknown placement stays a finding."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_value_facts import _marked_with_code


def test_operators_and_tensor_functions_keep_the_placement_of_their_operands(tmp_path: Path):
    _marked_with_code(
        tmp_path,
        """
        import torch.nn.functional as F

        def event_loop(n, k, m):
            while True:
                lens = torch.zeros(n)
                dev = torch.ones(n, device="cuda")
                a = (lens % k).tolist()
                b = (lens % k == 0).tolist()
                c = F.pad(torch.cumsum(lens, dim=0), (1, 0)).tolist()
                pages = (lens + k - 1) // k
                d = pages.sum().item()
                e = (pages - lens).clamp(min=0).sum().item()
                f = torch.clamp(pages, min=0).max().item()
                g = (dev % k).tolist()  # expect
                h = (lens + dev).sum().item()  # expect
                s = lens.sum().item()
                i = (m * s).sum().item()  # expect
                j = (m + 1).tolist()  # expect
                dist.barrier()
        """,
    )


def test_to_a_dtype_keeps_placement_and_to_a_device_moves_it(tmp_path: Path):
    _marked_with_code(
        tmp_path,
        """
        def event_loop(n, other):
            while True:
                dev = torch.ones(n, device="cuda")
                lut = dev.detach().to("cpu").to(torch.int64)  # expect
                a = lut[0].item()
                b = dev.to(device="cpu").tolist()  # expect
                c = torch.zeros(n).to(dtype=torch.float32).tolist()
                d = dev.to(torch.int64).tolist()  # expect
                e = torch.zeros(n).to(dev, non_blocking=True).tolist()  # expect
                f = torch.zeros(n).to(other, non_blocking=True).tolist()  # expect
                dist.barrier()
        """,
    )  # `.to("cpu")` is `.cpu()`: the copy waits, what is read from its result does not;
    # non_blocking: the copies themselves do not wait (test_wait_catalog covers those that do)


def test_an_assert_or_branch_on_a_tensors_device_places_it(tmp_path: Path):
    _marked_with_code(
        tmp_path,
        """
        def new_pages(lens, prefix, size):
            cpu_device = torch.device("cpu")
            assert lens.device == cpu_device
            assert prefix.device.type == "cpu"
            after = (lens + size - 1) // size
            before = (prefix + size - 1) // size
            total = torch.sum(after - before).to(torch.int64)
            return total.item()

        def flags(x, y, z):
            assert x.is_cpu and y.device == "cpu"
            a = x.tolist()
            b = y.tolist()
            if z.is_cpu:
                d = z.tolist()
            if z.device.type != "cpu":
                e = z.tolist()  # expect
            else:
                f = z.tolist()
            c = z.tolist()  # expect

        def event_loop(a, b):
            while True:
                new_pages(a, b, 4)
                flags(a, b, a)
                dist.barrier()
        """,
    )


def test_an_argument_made_by_a_call_is_placed_at_its_call_site(tmp_path: Path):
    code, findings = _marked_with_code(
        tmp_path,
        """
        def meta(indices):
            return indices.tolist()  # expect

        def preprocess(keys, indices):
            return meta(indices)

        def describe(n):
            return preprocess([""], torch.arange(n, dtype=torch.int64, device="cpu"))

        def event_loop(n):
            while True:
                describe(n)
                dist.barrier()
                meta(torch.arange(n, device="cuda"))
                dist.all_reduce(None)
        """,
    )
    # Only the call that makes its argument on a device makes `indices.tolist()` a sync.
    line = code.splitlines().index('        meta(torch.arange(n, device="cuda"))') + 1
    assert [f.extra["chain"][0]["line"] for f in findings] == [line]


def test_what_a_loop_or_comprehension_takes_from_a_host_value_is_host_data(tmp_path: Path):
    _marked_with_code(
        tmp_path,
        """
        def event_loop(n, lens_cpu, other):
            while True:
                host = torch.zeros(n)
                dev = torch.ones(n, device="cuda")
                for row in host:
                    a = row.item()
                for row in dev:
                    b = row.item()  # expect
                for v in dev.tolist():  # expect
                    c = v.item() if isinstance(v, torch.Tensor) else v
                lens = lens_cpu if isinstance(lens_cpu, list) else lens_cpu.tolist()
                d = [int(v.item()) if isinstance(v, torch.Tensor) else int(v) for v in lens]
                dev = dev + 1  # work queued again (`analysis.drained`)
                e = [int(v.item()) for v in dev]  # expect
                other = [x * 2 for x in other]  # work queued again (`analysis.drained`)
                f = [int(v.item()) for v in other]  # expect
                dist.barrier()
        """,
    )


def test_tensors_listed_to_a_tensor_function_and_tensors_copied_by_a_factory(tmp_path: Path):
    _marked_with_code(
        tmp_path,
        """
        def event_loop(n, ids):
            while True:
                a = torch.zeros(n)
                dev = torch.ones(n, device="cuda")
                b = torch.cat([a, a + 1]).tolist()
                c = torch.stack((a, dev)).tolist()  # expect
                d = torch.tensor(ids).tolist()
                e = torch.as_tensor(dev).tolist()  # expect
                f = torch.tensor(dev, dtype=torch.int64).tolist()  # expect
                dist.barrier()
        """,
    )
