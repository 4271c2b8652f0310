"""Integer bounds and lone ranks must not cut a feasible path."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_blocking import _assert_marked


def test_a_sentinel_size_says_nothing_of_the_rank(tmp_path: Path):
    """`world_size <= 0` means "take it from the environment": any rank may run the loop."""
    _assert_marked(
        tmp_path,
        """
        def get_config():
            return None

        class S:
            def event_loop_env(self):
                while True:
                    if get_config().rank > 0:
                        time.sleep(1)  # expect
                    dist.barrier()

            def event_loop_fixed(self):
                while True:
                    dist.barrier()

        def dispatch(s: S):
            if get_config().world_size <= 0:
                s.event_loop_env()
            else:
                s.event_loop_fixed()
        """,
        {"rounds": ["*.event_loop_*"]},
    )


def test_a_fractional_setting_is_not_rounded(tmp_path: Path):
    """`mem_fraction > 0` does not make `mem_fraction >= 1` true (0.5 is neither)."""
    _assert_marked(
        tmp_path,
        """
        class Exec:
            def __init__(self):
                self.mem_fraction = 0.5
                self.disable_overlap = False

        _CFG = Exec()

        def get_exec() -> Exec:
            return _CFG

        def validate(cfg):
            if cfg.mem_fraction >= 1:
                assert cfg.disable_overlap

        def start():
            validate(_CFG)

        class S:
            def event_loop_normal(self):
                while True:
                    if not get_exec().disable_overlap:
                        time.sleep(1)  # expect
                    dist.barrier()

        def run(s: S):
            if get_exec().mem_fraction > 0:
                s.event_loop_normal()
        """,
        {"rounds": ["*.event_loop_*"]},
    )
