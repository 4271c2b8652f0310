"""A nested function reads the enclosing function's locals as they are where it is called:
`host = torch.zeros(n)` then `await asyncio.to_thread(work)` with `work` reading
`host[i].item()` reads host memory (lmdeploy 0.18.0's guided spec-decode `_accept`, labels
lmd-27..29, read the host copies its caller made). A name the nested function binds itself,
or takes as a parameter, is its own.
"""

from __future__ import annotations

from pathlib import Path

from tests.check.test_blocking import _assert_marked


def test_a_closure_reads_the_enclosing_placements(tmp_path: Path) -> None:
    _assert_marked(
        tmp_path,
        """
        import asyncio

        async def host_copy(t):
            while True:
                host = torch.zeros(4)
                def work():
                    return host[0].item()
                await asyncio.to_thread(work)
                dist.barrier()

        async def device_copy(t):
            while True:
                dev = torch.ones(4, device="cuda")
                def work():
                    return dev[0].item()  # expect
                await asyncio.to_thread(work)
                dist.barrier()

        async def shadowed(t):
            while True:
                host = torch.zeros(4)
                dev = torch.ones(4, device="cuda")
                def work(host):
                    return host[0].item()  # expect
                await asyncio.to_thread(work, dev)
                dist.barrier()

        async def rebound(t):
            while True:
                host = torch.zeros(4)
                def work():
                    host = make()
                    return host[0].item()  # expect
                await asyncio.to_thread(work)
                dist.barrier()
        """,
    )
