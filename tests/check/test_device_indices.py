"""An integer device index names an accelerator: `device=torch.cuda.current_device()`, a local
or attribute holding it, `x.get_device()`, a literal `device=0` all place a factory's tensor on
the device (PyTorch reads an int device as the current accelerator's index). The index itself
is a Python int: a sync on it reads nothing. Reductions such as `.norm()` keep the placement
of their receiver."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_blocking import _assert_marked


def test_an_integer_device_index_places_a_factory_on_the_device(tmp_path: Path):
    findings = _assert_marked(
        tmp_path,
        """
        class Holder:
            def __init__(self):
                self.dev = torch.cuda.current_device()

            def size(self, n):
                return torch.tensor([n], device=self.dev)  # expect: h2d copy

        def direct(n):
            while True:
                t = torch.tensor([n], device=torch.cuda.current_device())  # expect: h2d copy
                dist.barrier()
                a = t.item()  # expect

        def through_a_local(n):
            while True:
                dev = torch.cuda.current_device()
                i = int(dev)
                t = torch.zeros(n, device=dev)
                dist.barrier()
                a = t.tolist()  # expect

        def literal_index(n):
            while True:
                t = torch.zeros(n, device=0)
                dist.barrier()
                a = t.tolist()  # expect

        def of_a_tensor(n, x):
            while True:
                t = torch.zeros(n, device=x.get_device())
                dist.barrier()
                a = t.tolist()  # expect

        def through_an_attribute(h: Holder, n):
            while True:
                t = h.size(n)
                dist.barrier()
                a = t.item()  # expect

        def moved(n):
            while True:
                t = torch.zeros(n).to(torch.cuda.current_device())  # expect: h2d copy
                dist.barrier()
                a = t.tolist()  # expect

        def a_number(n, x):
            while True:
                rank = int(x)
                t = torch.zeros(n, device=rank)
                dist.barrier()
                a = t.tolist()  # expect

        def host_still(n):
            while True:
                t = torch.zeros(n, device="cpu")
                a = t.tolist()
                dev = torch.cuda.current_device() if n else "cpu"
                dist.barrier()
        """,
    )
    assert {f.extra["confidence"] for f in findings} == {"high"}


def test_norm_keeps_the_placement_of_its_receiver(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        def on_device(n):
            while True:
                u = torch.ones(n, device="cuda")
                dist.barrier()
                m = u.norm(p=2)
                c = bool(m)  # expect

        def computed_argument(n):
            while True:
                u = torch.ones(n, device="cuda")
                dist.barrier()
                c = bool(u.norm(p=2))  # expect

        def on_host(n):
            while True:
                u = torch.ones(n)
                c = bool(u.norm(p=2))
                m = u.norm()
                e = bool(m)
                d = u.norm().item()
                dist.barrier()
        """,
    )
