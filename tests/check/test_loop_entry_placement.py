"""At the round loop's head a local holds what it was given before the loop, joined with what
the loop body gives it: a device tensor made before `while True:` is still on the device
inside the loop, a host one still on the host; a local the body (or a nested function) binds
again is not known at the head, and a local bound differently before the loop is not either."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_blocking import _assert_marked


def test_a_placement_made_before_the_round_loop_holds_inside_it(tmp_path: Path):
    findings = _assert_marked(
        tmp_path,
        """
        def device_before(n):
            t = torch.zeros(4, device="cuda")
            u = t + 1
            while True:
                dist.all_reduce(t)
                a = int(u)  # expect

        def host_before(n):
            h = torch.zeros(4)
            k = h.sum()
            while True:
                a = int(h)
                b = k.item()
                dist.barrier()
        """,
    )
    assert {f.extra["confidence"] for f in findings} == {"high"}


def test_a_local_bound_again_is_not_known_at_the_head(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        def rebound_in_body(n, x):
            h = torch.zeros(4)
            while True:
                a = h.tolist()  # expect
                dist.barrier()
                h = x

        def rebound_before(n, x):
            h = torch.zeros(4)
            if n:
                h = x
            while True:
                a = h.tolist()  # expect
                dist.barrier()

        def rebound_by_a_closure(n, x):
            h = torch.zeros(4)

            def swap():
                nonlocal h
                h = x

            while True:
                swap()
                a = h.tolist()  # expect
                dist.barrier()

        def a_parameter(h):
            h = torch.zeros(4) if h is None else h
            while True:
                a = h.tolist()  # expect
                dist.barrier()
        """,
    )
