"""Fault 7: a property read that launches work does not clear the drain marks.

`self.scaled` runs `self.w @ self.w` (a kernel) between the two syncs. The walk enters the
property (`Walk.properties` -> `enter`) for its blocking calls, but never passes the read
through `after()`/`launches`, so the mark the first sync set survives it:
- after a sync of unknown placement, `other.ids.tolist()` is folded into the first as its
  follower (new at 781c57e; at 84adc74 it was its own, low, finding);
- after a sure sync (`torch.cuda.synchronize()`), `ids.tolist()` is dropped outright as
  drained (pre-existing: also at 84adc74).
Either way the read waits for the matmul by itself and should be its own finding, as it is
when the same matmul is written in place or called as a method (`self.scale()`)."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_blocking import _assert_marked


def test_a_property_that_launches_undoes_an_unplaced_sync(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        class Out:
            lengths: torch.Tensor
            ids: torch.Tensor

        class Model:
            w: torch.Tensor

            @property
            def scaled(self):
                return self.w @ self.w

            def commit(self, out: Out, other: Out):
                lens = out.lengths.tolist()  # expect
                x = self.scaled
                ids = other.ids.tolist()  # expect

            def loop(self, out: Out, other: Out):
                while True:
                    self.commit(out, other)
                    dist.barrier()
        """,
        {"rounds": ["mod.Model.loop"]},
    )


def test_a_property_that_launches_undoes_a_sure_sync(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        class Model:
            w: torch.Tensor

            @property
            def scaled(self):
                return self.w @ self.w

            def commit(self, ids: torch.Tensor):
                torch.cuda.synchronize()  # expect
                x = self.scaled
                l = ids.tolist()  # expect

            def loop(self, ids):
                while True:
                    self.commit(ids)
                    dist.barrier()
        """,
        {"rounds": ["mod.Model.loop"]},
    )
