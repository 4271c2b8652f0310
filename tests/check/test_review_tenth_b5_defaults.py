"""bound_at / at_call (f9439b1): an omitted parameter reads as its literal default, so the
arguments must be matched to the right parameters. `_params` drops the receiver's parameter
only where it is spelled `self` or `cls`."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_blocking import _assert_marked


def test_a_receiver_parameter_not_named_self(tmp_path: Path):
    # `self.work(True)` fills `flag`; read as filling `this`, `flag` is taken to be its
    # default False and the sleep unreachable.
    _assert_marked(
        tmp_path,
        """
        class Engine:
            def work(this, flag=False):
                if flag:
                    time.sleep(1)  # expect

            def loop(self):
                while True:
                    self.work(True)
                    dist.barrier()
        """,
        {"rounds": ["mod.Engine.loop"]},
    )
