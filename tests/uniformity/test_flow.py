"""Rank-local taint and guards on small programs: sources, flows, cleansing, non-hazards."""

from __future__ import annotations

import pytest

from rankguard.catalogs.rank_sources import rank_source_catalog
from tests.uniformity.programs import OFFSET, lines, run

ROUND = "class S:\n    def event_loop(self):\n        while True:\n"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("rank", True),
        ("tp_rank", True),
        ("attn_tp_rank", True),
        ("rank_in_group", True),
        ("local_rank", True),
        ("src_rank", False),
        ("recovered_rank", False),
        ("ranks", False),
    ],
)
def test_rank_names(name: str, expected: bool) -> None:
    assert rank_source_catalog().is_rank_name(name) is expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("world_size", True),
        ("tp_size", True),
        ("tp_world_size", True),
        ("get_tp_group", True),
        ("torch.distributed.get_world_size", True),
        ("cache_size", False),
        ("size", False),
    ],
)
def test_uniform_names(name: str, expected: bool) -> None:
    assert rank_source_catalog().is_uniform_name(name) is expected


def test_source_kinds_by_callee() -> None:
    catalog = rank_source_catalog().with_driver_terms(["*.Pool.available_size"])
    assert catalog.kind_of_call(["torch.distributed.get_rank"]) == "rank-id"
    assert catalog.kind_of_call(["pkg.parallel.get_tensor_model_parallel_rank"]) == "rank-id"
    assert catalog.kind_of_call(["torch.cuda.mem_get_info"]) == "driver"
    assert catalog.kind_of_call(["pkg.cache.Pool.available_size"]) == "driver"
    assert catalog.kind_of_call(["time.monotonic"]) == "time"
    assert catalog.kind_of_call(["numpy.random.rand"]) == "random"
    assert catalog.kind_of_call(["socket.gethostname"]) == "host"
    assert catalog.kind_of_call(["self.sock.recv_pyobj"]) == "inbox"
    assert catalog.kind_of_call(["os.getenv"]) is None  # the launcher's environment
    assert catalog.kind_of_call(["torch.distributed.get_world_size"]) is None


def test_return_summaries_are_per_call_site(program_of) -> None:
    # `ident` returns its argument: a rank id passed at one call site must not taint another.
    code = (
        "def ident(x):\n    return x\n\n"
        + ROUND
        + "            a = ident(dist.get_rank())\n"
        + "            b = ident(4)\n"
        + "            if b > 1:\n                dist.barrier()\n"
        + "            if a > 1:\n                dist.barrier()\n"
    )
    assert lines(run(program_of, code)) == [12]


def test_reduced_in_place_then_read_is_clean(program_of) -> None:
    code = ROUND + (
        "            t = torch.tensor([torch.cuda.mem_get_info()[0]])\n"
        "            dist.all_reduce(t)\n"
        "            if int(t[0]) > 0:\n                dist.barrier()\n"
    )
    assert run(program_of, code) == []


def test_broadcast_result_is_clean(program_of) -> None:
    code = ROUND + (
        "            box = [time.time()]\n"
        "            dist.broadcast_object_list(box, src=0)\n"
        "            if box[0] > 5:\n                dist.barrier()\n"
    )
    assert run(program_of, code) == []


def test_elif_chain_with_the_same_collective_everywhere_is_symmetric(program_of) -> None:
    code = ROUND + (
        "            r = dist.get_rank()\n"
        "            if r == 0:\n                dist.broadcast(self.a, src=0)\n"
        "            elif r == 1:\n                dist.broadcast(self.b, src=0)\n"
        "            else:\n                dist.broadcast(self.c, src=0)\n"
    )
    assert run(program_of, code) == []


def test_broadcast_pyobj_shape_with_early_returns_is_symmetric(program_of) -> None:
    # sglang's utils.broadcast_pyobj: the root sends a size (and the data if any); the others
    # receive the size and return early on 0. Both sides may enter one or two broadcasts.
    code = (
        "def bcast(data, rank, src=0):\n"
        "    if rank == src:\n"
        "        if len(data) == 0:\n"
        "            dist.broadcast(torch.tensor([0]), src=src)\n"
        "        else:\n"
        "            dist.broadcast(torch.tensor([1]), src=src)\n"
        "            dist.broadcast(torch.tensor(data), src=src)\n"
        "        return data\n"
        "    else:\n"
        "        size = torch.tensor([0])\n"
        "        dist.broadcast(size, src=src)\n"
        "        if size.item() == 0:\n"
        "            return []\n"
        "        out = torch.empty(size.item())\n"
        "        dist.broadcast(out, src=src)\n"
        "        return out\n\n"
        + ROUND
        + "            self.reqs = bcast(self.reqs, dist.get_rank())\n"
    )
    assert run(program_of, code) == []


def test_exit_branch_with_the_same_collectives_is_symmetric(program_of) -> None:
    code = "class S:\n    def step(self):\n" + (
        "        if time.time() > self.t:\n"
        "            dist.barrier()\n"
        "            return\n"
        "        dist.barrier()\n\n"
        "    def event_loop(self):\n        while True:\n            self.step()\n"
    )
    assert run(program_of, code) == []


def test_continue_guards_the_rest_of_the_loop_body(program_of) -> None:
    code = ROUND + (
        "            if random.random() < 0.5:\n                continue\n"
        "            dist.barrier()\n"
    )
    found = run(program_of, code)
    assert lines(found) == [6]
    assert found[0].guard.kind == "exit"
    assert found[0].sources[0][0].kind == "random"


def test_queue_fed_only_by_a_broadcast_is_replicated(program_of) -> None:
    code = (
        "def recv():\n    box = [None]\n    dist.broadcast_object_list(box, src=0)\n"
        "    return box[0]\n\n"
        "class S:\n    def __init__(self):\n        self.inbox = []\n\n"
        "    def event_loop(self):\n        while True:\n"
        "            self.inbox.extend(recv())\n"
        "            if self.inbox:\n                dist.barrier()\n"
    )
    assert run(program_of, code) == []


def test_attribute_flow_through_another_method(program_of) -> None:
    code = (
        "class S:\n    def measure(self):\n        self.free = torch.cuda.mem_get_info()[0]\n\n"
        "    def event_loop(self):\n        while True:\n            self.measure()\n"
        "            if self.free > 0:\n                dist.all_reduce(self.t)\n"
    )
    found = run(program_of, code)
    assert lines(found) == [9]
    source, chain = found[0].sources[0]
    assert source.kind == "driver" and "mem_get_info" in source.text
    assert any("self.free" in step.text for step in chain)


def test_point_to_point_only_wrapper_is_not_a_collective(program_of) -> None:
    code = (
        "def ship(x, rank):\n    if rank == 0:\n        dist.send(x, dst=1)\n    else:\n"
        "        dist.recv(x, src=0)\n\n"
        + ROUND
        + "            if dist.get_rank() == 0:\n                ship(self.t, 0)\n"
    )
    assert run(program_of, code) == []


def test_functions_outside_rounds_are_not_reported(program_of) -> None:
    setup = "def setup():\n    if dist.get_rank() == 0:\n        dist.barrier()\n\n"
    gated = "            if dist.get_rank() == 0:\n                dist.barrier()\n"
    # the same gate inside the round is reported, so the empty answer below is about reach
    assert lines(run(program_of, setup + ROUND + gated)) == [9]
    assert run(program_of, setup + ROUND + "            dist.barrier()\n") == []


def test_nested_loops_are_walked_a_bounded_number_of_times(program_of, monkeypatch) -> None:
    # Each loop walks its body twice (the second pass carries values around it once); nested
    # loops inside that second pass walk theirs once, so depth d costs d + 1 walks of the
    # innermost body, not 2 ** d (review: depth 14 took seconds).
    from rankguard.analysis.uniformity.transfer import Walker

    depth = 10
    body = "".join(f"{'    ' * (i + 3)}for x{i} in range(3):\n" for i in range(depth))
    code = ROUND + "            dist.barrier()\n" + body + f"{'    ' * (depth + 3)}marker = 1\n"
    inner = code.count("\n") + OFFSET
    seen: list[int] = []
    statement = Walker.statement

    def counting(self, stmt, env):
        if stmt.line == inner and self.fn == "m.S.event_loop":
            seen.append(stmt.line)
        return statement(self, stmt, env)

    monkeypatch.setattr(Walker, "statement", counting)
    run(program_of, code)
    assert 0 < len(seen) <= 2 * (depth + 1)


def test_a_global_a_function_rebinds_carries_what_it_stores(program_of) -> None:
    # `global FREE; FREE = <driver reading>` inside a function: the module's global now
    # holds this rank's reading, whether or not the module body assigned it first (review).
    for head in ("FREE = None\n\n", ""):
        refresh = "def refresh():\n    global FREE\n    FREE = torch.cuda.mem_get_info()[0]\n\n"
        gate = "            refresh()\n            if FREE > 0:\n                dist.barrier()\n"
        code = head + refresh + ROUND + gate
        found = run(program_of, code)
        assert lines(found) == [code.count("\n")], head
        assert found[0].sources[0][0].kind == "driver"


def test_call_site_constants_keep_a_with_exit_collective(program_of) -> None:
    # The helper's constant-pruned body still leaves its `with` through `__exit__`, which
    # enters the barrier (review: the pruned walk dropped `with` exits).
    helper = (
        "class Synced:\n"
        "    def __enter__(self):\n"
        "        return self\n\n"
        "    def __exit__(self, *exc):\n"
        "        dist.barrier()\n\n"
        "def helper(flag=False):\n"
        "    if flag:\n"
        "        with Synced():\n"
        "            pass\n\n"
    )
    code = helper + ROUND + "            if time.time() > 5:\n                helper(flag=True)\n"
    assert lines(run(program_of, code)) == [code.count("\n")]
