"""A callable handed to an invoker gets the arguments that follow it, not the invoker's own
(issue #13, value facts per call site): `await asyncio.to_thread(f, a, b)` and
`loop.run_in_executor(pool, f, a, b)` call `f(a, b)`, `pool.submit(f, a, b)` too. Bound
position by position to the invoker's arguments, `f`'s first parameter took `f` itself and
each later one its neighbour's value: a host tensor handed there read as unknown (lmdeploy
0.18.0's guided decoding: `to_thread(self._accept_forked_at_pos, forked, cpu_draft, pos)`
then `cpu_draft[idx, pos].item()`), and a device tensor could read as a host one."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_value_facts import _marked_with_code


def test_a_thread_gets_the_arguments_after_the_callable(tmp_path: Path) -> None:
    _marked_with_code(
        tmp_path,
        """
        import asyncio

        class Loop:
            def __init__(self):
                self.table = []

            def accept(self, table, ids):
                table.append(ids[0].item())

            def accept_device(self, table, ids):
                table.append(ids[0].item())  # expect

            async def event_loop(self):
                while True:
                    host = torch.zeros(4)
                    dev = torch.ones(4, device="cuda")
                    await asyncio.to_thread(self.accept, self.table, host)
                    await asyncio.to_thread(self.accept_device, host, dev)
                    dist.barrier()
        """,
    )


def test_an_executor_gets_the_arguments_after_the_callable(tmp_path: Path) -> None:
    _marked_with_code(
        tmp_path,
        """
        import asyncio
        from concurrent.futures import ThreadPoolExecutor

        def host_read(table, ids):
            table.append(ids[0].item())

        def device_read(table, ids):
            table.append(ids[0].item())  # expect

        async def event_loop(table):
            pool = ThreadPoolExecutor(1)
            loop = asyncio.get_running_loop()
            while True:
                host = torch.zeros(4)
                dev = torch.ones(4, device="cuda")
                await loop.run_in_executor(pool, host_read, table, host)
                pool.submit(device_read, table, dev).result()  # expect: waits for the worker
                dist.barrier()
        """,
    )
