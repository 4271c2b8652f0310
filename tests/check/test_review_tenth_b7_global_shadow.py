"""A fact the caller holds on a module global is passed to the callee (`global_facts`); where
the callee's parameter has the global's name, the fact is not about it."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_blocking import _assert_marked


def test_a_parameter_shadowing_a_global(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        _endpoint = None

        def inner(_endpoint):
            if _endpoint is None:
                return
            time.sleep(1)  # expect

        def outer():
            if _endpoint is not None:
                return
            inner(recv())

        def loop():
            while True:
                outer()
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )


def test_a_negated_argument_naming_a_shadowed_global(tmp_path: Path):
    # In `inner`, `_flag` is its parameter; the caller's fact is on the global `_flag`.
    _assert_marked(
        tmp_path,
        """
        _flag = False

        def communicate(config, wait_on_reqs):
            if config.batch:
                assert wait_on_reqs
            if config.batch and config.sync:
                torch.cuda.synchronize()  # expect

        def inner(config, _flag):
            communicate(config, wait_on_reqs=(not _flag))

        def outer(config):
            if _flag:
                inner(config, recv())

        def loop(config):
            while True:
                outer(config)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )
