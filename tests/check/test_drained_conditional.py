"""A sync on one side of a conditional expression (`a.item() if c else 0`) drains the queue
only where `c` held; the walk joins that drain away, so a later sync, under the same test or
another, is a finding of its own (`analysis.drained`). Keeping the drain under the test was
tried and taken out: too much between two such syncs can change the test's value
(`test_drained_review`)."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_blocking import _assert_marked


def test_work_or_a_changed_test_between_keeps_the_later_sync(tmp_path: Path):
    # Work launched between the two (`local * 2`), another test (`flag`), a test whose value
    # may have changed (`rows` appended to, `local` rebound, or appended to on the other side
    # of the same expression before the test is read again, also by a method of the program
    # named like a tensor's read, `box.max()`): the later sync may be the first one on its
    # path, and waits.
    _assert_marked(
        tmp_path,
        """
        class Box:
            def __init__(self):
                self.rows = []

            def max(self):
                self.rows.append(1)
                return 0

        def plan(lens: torch.Tensor, other: torch.Tensor, flag, rows, n, box: Box):
            local = lens.clone()
            peak = int(local.max().item()) if local.numel() > 0 else 0  # expect
            y = local * 2
            total = int(local.sum().item()) if local.numel() > 0 else 0  # expect
            again = int(local.sum().item()) if flag else 0  # expect
            dev = torch.ones(n, device="cuda")
            first = dev.tolist() if rows else None  # expect
            rows.append(1)
            second = dev.tolist() if rows else None  # expect
            third = dev.tolist() if local.numel() > 0 else None  # expect
            local = other
            fourth = dev.tolist() if local.numel() > 0 else None  # expect
            fifth = rows.append(1) if not rows else dev.tolist()  # expect
            sixth = 0 if not rows else dev.tolist()  # expect
            seventh = box.max() if not box.rows else dev.tolist()  # expect
            eighth = 0 if not box.rows else dev.tolist()  # expect
            return peak, total, again, first, second, third, fourth, fifth, sixth, seventh, eighth

        def loop(lens, other, flag, rows, n, box):
            while True:
                plan(lens, other, flag, rows, n, box)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )
