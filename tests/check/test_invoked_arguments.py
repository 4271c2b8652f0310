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


def test_literals_and_keywords_follow_the_callable(tmp_path: Path) -> None:
    _marked_with_code(
        tmp_path,
        """
        import asyncio

        def step(flag, x, mode="a"):
            if flag:
                torch.cuda.synchronize()  # expect
            if mode == "b":
                torch.cuda.current_stream().synchronize()  # expect

        def quiet(flag, x, mode="a"):
            if flag:
                torch.cuda.synchronize()
            if mode == "b":
                torch.cuda.current_stream().synchronize()

        def accept(table, ids=None):
            table.append(ids[0].item())

        def accept_device(table, ids=None):
            table.append(ids[0].item())  # expect

        async def event_loop(x, table):
            loop = asyncio.get_running_loop()
            while True:
                await loop.run_in_executor(None, step, True, x, "b")
                await loop.run_in_executor(None, quiet, False, x, "a")
                await asyncio.to_thread(accept, table, ids=torch.zeros(4))
                await asyncio.to_thread(accept_device, table, ids=torch.ones(4, device="cuda"))
                dist.barrier()
        """,
    )


# Review of the first version: three programs it got wrong.


def test_a_callable_parameter_called_where_sorted_is_also_passed_keeps_its_arguments(
    tmp_path: Path,
) -> None:
    # `fn(*args)` is marked `via: argument` too (`model.arguments`): not an invoker's call.
    _marked_with_code(
        tmp_path,
        """
        def work(t, sync=False):
            if sync:
                torch.cuda.synchronize()  # expect

        def event_loop(fn, args):
            while True:
                fn(*args)
                dist.barrier()

        def main(xs):
            event_loop(sorted, (xs,))
            event_loop(work, (xs, True))
        """,
    )


def test_what_map_hands_its_callable_is_unknown_not_the_defaults(tmp_path: Path) -> None:
    _marked_with_code(
        tmp_path,
        """
        def pick(a, b=None):
            if b is not None:
                torch.cuda.synchronize()  # expect

        def event_loop(xs, ys):
            while True:
                out = list(map(pick, xs, ys))
                dist.barrier()
        """,
    )


def test_a_starred_argument_after_the_callable_keeps_its_place(tmp_path: Path) -> None:
    _marked_with_code(
        tmp_path,
        """
        import asyncio

        def quiet():
            pass

        def loud():
            torch.cuda.synchronize()  # expect

        def run(cb, other):
            cb()

        def elsewhere():
            run(quiet, loud)
            run(loud, quiet)

        async def event_loop():
            pre = (loud,)
            while True:
                await asyncio.to_thread(run, *pre, quiet)
                dist.barrier()
        """,
    )


def test_a_callable_handed_on_through_the_invoker_is_called(tmp_path: Path) -> None:
    # `work(cb)` calls its parameter: what flows into `cb` is what the thread is handed after
    # `work`, not `work` itself (`model.arguments`).
    _marked_with_code(
        tmp_path,
        """
        import asyncio

        def loud():
            torch.cuda.synchronize()  # expect

        def work(cb):
            cb()

        async def event_loop():
            while True:
                await asyncio.to_thread(work, loud)
                dist.barrier()
        """,
    )


def test_a_function_also_called_directly_by_the_same_call_keeps_that_binding(
    tmp_path: Path,
) -> None:
    # `self.run` is `gate` itself or the pool's `submit`: called directly, `gate(self.gate,
    # n)` binds `b` to the count; handed to `submit`, `gate(n)` leaves `b` its default.
    _marked_with_code(
        tmp_path,
        """
        from concurrent.futures import ThreadPoolExecutor

        class S:
            def __init__(self, fast, n):
                self.pool = ThreadPoolExecutor(1)
                self.run = self.gate if fast else self.pool.submit
                self.n = n

            def gate(self, a, b=0):
                if b > 5:
                    torch.cuda.synchronize()  # expect

            def event_loop(self):
                while True:
                    self.run(self.gate, self.n).result()  # expect
                    dist.barrier()
        """,
    )
