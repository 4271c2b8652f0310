"""Value facts: where a tensor lives, through locals, attributes, methods, device expressions
and call-site constants; a device sync on a host value is no finding."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_blocking import _assert_marked, _run


def _marked_with_code(tmp_path: Path, body: str) -> tuple[str, list]:
    findings = _assert_marked(tmp_path, body)
    code, _ = _run(tmp_path, body)
    return code, findings


def test_attributes_are_placed_by_every_assignment_in_the_program(tmp_path: Path):
    findings = _assert_marked(
        tmp_path,
        """
        class Batch:
            def __init__(self, n):
                self.lens = torch.zeros(n, device="cuda")
                self.lens_cpu = self.lens.cpu()
                self.mixed = torch.zeros(n)

            def refresh(self, other):
                self.lens_cpu = other.to("cpu")  # expect: handed `b.lens`, a device tensor
                self.mixed = other

        def event_loop(b: Batch):
            while True:
                b.refresh(b.lens)
                x = b.lens_cpu.tolist()
                y = b.lens_cpu[0].item()
                w = b.mixed.tolist()  # expect
                z = b.lens.tolist()  # expect: sure, so nothing after it waits (analysis.drained)
                dist.barrier()
        """,
    )
    confidence = {f.line: f.extra["confidence"] for f in findings}
    assert sorted(confidence.values()) == ["high", "high", "medium"]


def test_methods_keep_or_move_placement(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        def event_loop(device):
            while True:
                a = torch.zeros(3)
                n = a.sum().item()
                m = a.float().max().item()
                b = torch.ones(2, device="cuda").float()
                k = b.sum().item()  # expect
                c = torch.ones(2).cuda(non_blocking=True)  # a copy that waits: test_wait_catalog
                c.tolist()  # expect
                d = b.to("cpu").detach()
                d.tolist()
                e = torch.empty(4, pin_memory=True)
                e.tolist()
                dist.barrier()
        """,
    )


def test_a_device_expression_is_decided_by_call_site_constants(tmp_path: Path):
    code, findings = _marked_with_code(
        tmp_path,
        """
        def send_size(data, force_cpu_device=True):
            device = torch.device(
                "cuda" if torch.cuda.is_available() and not force_cpu_device else "cpu"
            )
            size = torch.tensor([0], dtype=torch.long, device=device)  # expect: a copy there
            dist.broadcast(size, src=0)
            n = size.item()  # expect
            dist.broadcast(torch.empty(n, device=device), src=0)

        def event_loop(x):
            while True:
                send_size(x)
                send_size(x, force_cpu_device=True)
                dist.barrier()
                send_size(x, False)
        """,
    )
    # Only the call that passes force_cpu_device=False can put the size on a device.
    line = code.splitlines().index("        send_size(x, False)") + 1
    assert [f.extra["chain"][0]["line"] for f in findings] == [line, line]


def test_a_cuda_event_wait_is_a_stream_wait(tmp_path: Path):
    # A guard (this held before value facts too): `Event.wait()` orders streams, the host
    # goes on; only `Event.synchronize()` blocks it.
    _assert_marked(
        tmp_path,
        """
        def event_loop():
            while True:
                ev = torch.cuda.Event()
                ev.record()
                ev.wait()
                torch.cuda.Event().wait(torch.cuda.current_stream())
                ev.synchronize()  # expect
                dist.barrier()
        """,
    )


def test_parameters_are_placed_per_call_site(tmp_path: Path):
    code, findings = _marked_with_code(
        tmp_path,
        """
        def write(indices, lens):
            for i in range(3):
                a = indices[i].item()  # expect
                b = lens[i].item()

        def event_loop(ids):
            while True:
                host = torch.tensor(ids, dtype=torch.int64)
                dev = torch.ones(3, device="cuda")
                write(host, host)
                dist.barrier()
                write(dev, host)
                dist.all_reduce(None)
        """,
    )
    # Only the call that passes a device tensor makes `indices[i].item()` a device sync.
    line = code.splitlines().index("        write(dev, host)") + 1
    assert [f.extra["chain"][0]["line"] for f in findings] == [line]
    assert findings[0].extra["confidence"] == "high"


def test_a_name_that_says_host_is_taken_at_its_word_where_nothing_else_is_known(tmp_path: Path):
    """`seq_lens_cpu`, `ids_host`, a buffer's `.np` view: the host copies a scheduler keeps
    beside device tensors. With no assignment that places them, the name decides; an
    assignment that places the value still wins."""
    _assert_marked(
        tmp_path,
        """
        def event_loop(batch, info, buf, dev):
            while True:
                tp0_info_cpu = info.cpu()[0]  # expect
                a = tp0_info_cpu.item()
                b = batch.seq_lens_cpu.max().item()
                c = batch.ids_host.tolist()
                d = buf.np[0].item()
                batch.prepare()  # may launch: the next sync waits by itself
                f = batch.seq_lens.tolist()  # expect
                wrong_cpu = dev.cuda()
                e = wrong_cpu.tolist()  # expect
                dist.barrier()
        """,
    )
