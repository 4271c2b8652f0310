"""Group-aware uniformity (issue #18): each test is a shape the rank-local taint got wrong.

Every program below is small and generic: a round (`S.event_loop`), a collective, and a
condition whose value is uniform over the collective's group (no finding) or varying (one).
"""

from __future__ import annotations

import pytest

from tests.uniformity.programs import OFFSET, lines, run

# A group object in the style of serving frameworks: wrappers name their process group.
GROUPS = (
    "class Group:\n"
    "    def __init__(self, pg):\n"
    "        self.device_group = pg\n\n"
    "    def barrier(self):\n"
    "        dist.barrier(group=self.device_group)\n\n"
    "    def all_gather_object(self, obj):\n"
    "        out = [None, None]\n"
    "        dist.all_gather_object(out, obj, group=self.device_group)\n"
    "        return out\n\n"
    "_TP = Group(None)\n_PP = Group(None)\n_ATTN_CP = Group(None)\n\n"
    "def get_tp_group() -> Group:\n    return _TP\n\n"
    "def get_pp_group() -> Group:\n    return _PP\n\n"
    "def get_attn_cp_group() -> Group:\n    return _ATTN_CP\n\n"
)

# Requests enter through a broadcast over the group, so every rank holds the same ones.
INBOX = (
    "def recv_requests(sock, rank):\n"
    "    reqs = sock.recv_pyobj() if rank == 0 else None\n"
    "    box = [reqs]\n"
    "    dist.broadcast_object_list(box, src=0)\n"
    "    return box[0]\n\n"
)


def test_state_maintained_from_broadcast_requests_is_uniform(program_of) -> None:
    # A queue fed only by broadcast requests, popped and measured by every rank alike: its
    # length, its truth and what is derived from it are the same on every rank.
    code = INBOX + (
        "class S:\n"
        "    def __init__(self, sock):\n"
        "        self.sock = sock\n"
        "        self.waiting_queue = []\n"
        "        self.batch_size = 0\n\n"
        "    def receive(self):\n"
        "        for req in recv_requests(self.sock, dist.get_rank()):\n"
        "            self.waiting_queue.append(req)\n\n"
        "    def schedule(self):\n"
        "        self.batch_size = len(self.waiting_queue)\n"
        "        if self.waiting_queue:\n"
        "            self.waiting_queue.pop(0)\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            self.receive()\n"
        "            self.schedule()\n"
        "            if self.batch_size > 0:\n"
        "                dist.barrier()\n"
        "            if len(self.waiting_queue) > 4:\n"
        "                dist.barrier()\n"
    )
    assert run(program_of, code) == []


def test_state_fed_from_outside_the_group_varies(program_of) -> None:
    # The same queue fed straight from this rank's own socket: each rank's own inbox.
    code = (
        "class S:\n"
        "    def __init__(self, sock):\n"
        "        self.sock = sock\n"
        "        self.waiting_queue = []\n\n"
        "    def receive(self):\n"
        "        self.waiting_queue.append(self.sock.recv_pyobj())\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            self.receive()\n"
        "            if len(self.waiting_queue) > 4:\n"
        "                dist.barrier()\n"
    )
    found = run(program_of, code)
    assert lines(found) == [13]
    assert found[0].sources[0][0].kind == "inbox"


def test_collective_result_overwrites_local_state(program_of) -> None:
    # The local count is replaced by the gathered one before the condition reads it.
    code = (
        "def gather(x):\n"
        "    out = [None, None]\n"
        "    dist.all_gather_object(out, x)\n"
        "    return out\n\n"
        "class S:\n"
        "    def __init__(self):\n"
        "        self.num_tokens = None\n\n"
        "    def sync(self):\n"
        "        self.num_tokens = torch.cuda.mem_get_info()[0]\n"
        "        self.num_tokens = gather(self.num_tokens)\n"
        "        if max(self.num_tokens) > 0:\n"
        "            dist.barrier()\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            self.sync()\n"
    )
    assert run(program_of, code) == []


def test_collective_result_overwrite_is_flow_sensitive(program_of) -> None:
    # Read before the overwrite: still this rank's own reading.
    code = (
        "def gather(x):\n"
        "    out = [None, None]\n"
        "    dist.all_gather_object(out, x)\n"
        "    return out\n\n"
        "class S:\n"
        "    def sync(self):\n"
        "        self.num_tokens = torch.cuda.mem_get_info()[0]\n"
        "        if self.num_tokens > 0:\n"
        "            dist.barrier()\n"
        "        self.num_tokens = gather(self.num_tokens)\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            self.sync()\n"
    )
    assert lines(run(program_of, code)) == [10]


def test_rank_of_another_group_dimension_is_uniform(program_of) -> None:
    code = GROUPS + (
        "class S:\n"
        "    def __init__(self, pp_rank, tp_rank, attn_tp_rank):\n"
        "        self.pp_rank = pp_rank\n"
        "        self.tp_rank = tp_rank\n"
        "        self.attn_tp_rank = attn_tp_rank\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            if self.pp_rank == 0:\n"
        "                get_tp_group().barrier()\n"  # uniform: one stage's TP group
        "            if self.attn_tp_rank == 0:\n"
        "                get_attn_cp_group().all_gather_object(1)\n"  # uniform over CP
        "            if self.tp_rank == 0:\n"
        "                get_tp_group().barrier()  # varies\n"
        "            if self.pp_rank == 0:\n"
        "                dist.barrier()  # varies: the default group spans every stage\n"
    )
    found = run(program_of, code)
    got = GROUPS.count("\n")
    assert lines(found) == [got + 14, got + 16]
    assert [d.group for d in found] == ["tp", "world"]


def test_device_placement_does_not_make_values_vary(program_of) -> None:
    code = (
        "class S:\n"
        "    def __init__(self, local_rank):\n"
        "        self.device = torch.device(f'cuda:{local_rank}')\n"
        "        self.pending = [local_rank]\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            flag = torch.ones(1, device=self.device)\n"
        "            ready = torch.zeros(2).to(self.device)\n"
        "            if flag.sum() > 0 and ready.sum() == 0:\n"
        "                dist.barrier()\n"
    )
    assert run(program_of, code) == []


def test_is_none_tests_existence_not_contents(program_of) -> None:
    code = (
        "class S:\n"
        "    def __init__(self):\n"
        "        self.stamps = []\n"
        "        self.reading = None\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            self.stamps.append(time.time())\n"
        "            self.reading = torch.cuda.mem_get_info()[0]\n"
        "            if self.stamps is not None and self.reading is not None:\n"
        "                dist.barrier()\n"
        "            if self.stamps[-1] > 5:\n"
        "                dist.barrier()  # varies: the stamps are this rank's clock\n"
    )
    assert lines(run(program_of, code)) == [13]


def test_a_count_follows_how_many_items_not_what_they_hold(program_of) -> None:
    # One timestamped entry per round on every rank: the count agrees, the stamps do not.
    code = (
        "class S:\n"
        "    def __init__(self):\n"
        "        self.ongoing = {}\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            self.ongoing[len(self.ongoing)] = time.time()\n"
        "            if len(self.ongoing) > 8 or not self.ongoing:\n"
        "                dist.barrier()\n"
        "            for key in self.ongoing:\n"
        "                dist.barrier()\n"
        "            if max(self.ongoing.values()) > 5:\n"
        "                dist.barrier()  # varies: the stamps themselves\n"
    )
    assert lines(run(program_of, code)) == [13]


def test_run_at_most_once_plus_finalize_reaches_every_path(program_of) -> None:
    # `negotiate` runs its collective at most once per pass; `finalize` runs it if nothing did.
    code = (
        "class Negotiator:\n"
        "    def __init__(self):\n"
        "        self.done = False\n\n"
        "    def begin(self):\n"
        "        self.done = False\n\n"
        "    def negotiate(self):\n"
        "        if self.done:\n"
        "            return\n"
        "        self.done = True\n"
        "        dist.all_reduce(torch.zeros(1))\n\n"
        "    def finalize(self):\n"
        "        self.negotiate()\n\n"
        "class S:\n"
        "    def __init__(self):\n"
        "        self.neg = Negotiator()\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            self.neg.begin()\n"
        "            if time.time() > 5:\n"
        "                self.neg.negotiate()\n"
        "            self.neg.finalize()\n"
    )
    assert run(program_of, code) == []


def test_latched_negotiation_finalized_by_the_caller(program_of) -> None:
    # The latch is a property over the stored result, and the finalize runs in the caller
    # after the helper that may have negotiated under a local condition returns.
    code = (
        "class Executor:\n"
        "    def __init__(self):\n"
        "        self._result = None\n\n"
        "    @property\n"
        "    def _called(self):\n"
        "        return self._result is not None\n\n"
        "    def negotiate(self, local):\n"
        "        if not self._called:\n"
        "            flags = [None, None]\n"
        "            dist.all_gather_object(flags, local)\n"
        "            self._result = flags\n"
        "        return self._result\n\n"
        "    def finalize(self):\n"
        "        if not self._called:\n"
        "            self.negotiate(False)\n\n"
        "class S:\n"
        "    def plan(self, executor):\n"
        "        if time.time() > 5:\n"
        "            return None\n"
        "        return executor.negotiate(True)\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            executor = Executor()\n"
        "            self.plan(executor)\n"
        "            executor.finalize()\n"
    )
    assert run(program_of, code) == []


def test_at_most_once_without_finalize_still_diverges(program_of) -> None:
    code = (
        "class Negotiator:\n"
        "    def __init__(self):\n"
        "        self.done = False\n\n"
        "    def negotiate(self):\n"
        "        if self.done:\n"
        "            return\n"
        "        self.done = True\n"
        "        dist.all_reduce(torch.zeros(1))\n\n"
        "class S:\n"
        "    def __init__(self):\n"
        "        self.neg = Negotiator()\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            if time.time() > 5:\n"
        "                self.neg.negotiate()\n"
    )
    assert lines(run(program_of, code)) == [18]


MEMORY = (
    "def available_memory(device, distributed=False):\n"
    "    if device == 'cuda':\n"
    "        free, _ = torch.cuda.mem_get_info()\n"
    "    else:\n"
    "        free = 0\n"
    "    if distributed:\n"
    "        t = torch.tensor(free)\n"
    "        dist.all_reduce(t, op=dist.ReduceOp.MIN)\n"
    "        free = t.item()\n"
    "    return free / (1 << 30)\n\n"
)


def test_local_free_memory_gating_an_early_return(program_of) -> None:
    code = MEMORY + (
        "class S:\n"
        "    def switch(self, need):\n"
        "        try:\n"
        "            free = available_memory(self.device)\n"
        "        except Exception:\n"
        "            return False\n"
        "        if free < need:\n"
        "            return False\n"
        "        dist.barrier()\n"
        "        return True\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            self.switch(4)\n"
    )
    found = run(program_of, code)
    base = MEMORY.count("\n")
    assert lines(found) == [base + 9]
    assert found[0].sources[0][0].kind == "driver"
    # The helper's own all_reduce is excluded at this call site (`distributed` is False).
    assert found[0].guard.stmt.line - OFFSET == base + 7


def test_call_site_constants_exclude_a_helper_collective(program_of) -> None:
    # Called with `distributed=False` under a rank-local condition: no collective is entered.
    code = MEMORY + (
        "class S:\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            if time.time() > 5:\n"
        "                available_memory('cuda', distributed=False)\n"
        "            if time.time() > 9:\n"
        "                available_memory('cuda', distributed=True)  # enters all_reduce\n"
    )
    assert lines(run(program_of, code)) == [MEMORY.count("\n") + 7]


def test_recursion_does_not_depend_on_function_names(program_of) -> None:
    # round -> first -> second -> (first, then a barrier) under a rank condition: the same
    # finding whichever name sorts first (issue #11: one collective index for everyone).
    template = (
        "def {a}():\n    {b}()\n\n"
        "def {b}():\n    {a}()\n    dist.barrier()\n\n"
        "class S:\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            if dist.get_rank() == 0:\n"
        "                {a}()\n"
    )
    for a in ("a_q", "z_q"):
        found = run(program_of, template.format(a=a, b="b_p"))
        assert lines(found) == [12], a


def test_group_named_through_the_attribute_it_was_stored_from(program_of) -> None:
    # `self.sync_group` says nothing; its one store says it is the TP group of one DP replica.
    code = (
        "class S:\n"
        "    def __init__(self, owner, pp_rank):\n"
        "        self.pp_rank = pp_rank\n"
        "        self.sync_group = owner.dp_tp_cpu_group\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            if self.pp_rank == 0:\n"
        "                out = [None, None]\n"
        "                dist.all_gather_object(out, 1, group=self.sync_group)\n"
    )
    assert run(program_of, code) == []


def test_type_and_placement_attributes_are_not_data(program_of) -> None:
    code = (
        "class S:\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            x = torch.tensor([torch.cuda.mem_get_info()[0]])\n"
        "            if x.is_cpu or x.dtype == torch.int64:\n"
        "                dist.barrier()\n"
    )
    assert run(program_of, code) == []


def test_what_the_root_decides_alone_does_not_split_the_group(program_of) -> None:
    # Only the root takes the first side; its own inbox decides how many broadcasts it sends,
    # and the others learn it from the first broadcast (sides agree: one or two broadcasts).
    code = (
        "def bcast(data, rank, src=0):\n"
        "    if rank == src:\n"
        "        if len(data) == 0:\n"
        "            dist.broadcast(torch.tensor([0]), src=src)\n"
        "        else:\n"
        "            dist.broadcast(torch.tensor([1]), src=src)\n"
        "            dist.broadcast(torch.tensor(data), src=src)\n"
        "        return data\n"
        "    size = torch.tensor([0])\n"
        "    dist.broadcast(size, src=src)\n"
        "    if size.item() == 0:\n"
        "        return []\n"
        "    out = torch.empty(size.item())\n"
        "    dist.broadcast(out, src=src)\n"
        "    return out\n\n"
        "class S:\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            reqs = [self.sock.recv_pyobj()]\n"
        "            reqs = bcast(reqs, dist.get_rank())\n"
    )
    assert run(program_of, code) == []


# A tensor shaped by a varying count has a varying size: the walk keeps one value per tensor,
# not its size apart from its contents, so what is read off it varies with the count (its
# length, its element count, the sum of ones). `zeros(n).sum()` is reported too: telling it
# apart needs the size as a second component of every value, through every operation.
@pytest.mark.parametrize(
    "test",
    [
        "torch.ones(len(self.pending)).sum() == 0",
        "torch.zeros(len(self.pending)).shape[0] == 0",
        "len(torch.zeros(len(self.pending))) == 0",
        "torch.empty(len(self.pending)).numel() == 0",
    ],
)
def test_a_tensor_shaped_by_a_varying_count_varies(program_of, test: str) -> None:
    code = (
        "class S:\n"
        "    def __init__(self, local_rank):\n"
        "        self.pending = [local_rank]\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        f"            if {test}:\n"
        "                dist.barrier()\n"
    )
    assert lines(run(program_of, code)) == [8]


def test_group_named_through_a_local_bound_to_group_handles(program_of) -> None:
    # `for group in (attn_cp, attn_tp)`: the collective runs over each of two named groups. The
    # pipeline rank is the same on every rank of both; the attention-TP rank is not.
    code = (
        "class S:\n"
        "    def __init__(self, pp_rank, attn_tp_rank, attn_cp_group, attn_tp_group):\n"
        "        self.pp_rank = pp_rank\n"
        "        self.attn_tp_rank = attn_tp_rank\n"
        "        self.attn_cp_group = attn_cp_group\n"
        "        self.attn_tp_group = attn_tp_group\n\n"
        "    def reduce(self, t):\n"
        "        for group in (self.attn_cp_group, self.attn_tp_group):\n"
        "            dist.all_reduce(t, group=group)\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            if self.pp_rank == 0:\n"
        "                self.reduce(self.t)\n"
        "            if self.attn_tp_rank == 0:\n"
        "                self.reduce(self.t)  # varies over attn_tp\n"
    )
    found = run(program_of, code)
    assert lines(found) == [17]
    assert found[0].groups == ("attn_cp", "attn_tp")


def test_free_memory_gate_before_a_try_whose_handler_returns(program_of) -> None:
    # The ranks that stay go on through a rebuild whose failure returns (a handler: one
    # alternative, not a step every path takes) into a collective; the rank short of memory
    # has already returned.
    code = MEMORY + (
        "class S:\n"
        "    def switch(self, need):\n"
        "        free = available_memory(self.device)\n"
        "        if free < need:\n"
        "            return False\n"
        "        try:\n"
        "            self.rebuild()\n"
        "        except Exception:\n"
        "            return False\n"
        "        dist.barrier()\n"
        "        return True\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            self.switch(4)\n"
    )
    found = run(program_of, code)
    base = MEMORY.count("\n")
    assert lines(found) == [base + 10]
    assert found[0].guard.stmt.line - OFFSET == base + 4
