"""Which ranks a group spans, and when it lies inside another (issue #18, group model).

A group is named by its dimension; a dimension spans axes of the catalog's grids. A composite
dimension spans several axes of one grid, some only in some modes (`dp_tp`: one data-parallel
shard's TP ranks, the attention-TP group under attention DP, all of TP otherwise). A rank id
is the same over a group when its axes are all other axes of the group's grid; a value agreed
over a group covers another group only when that group's axes all lie in what the first spans
in every mode.
"""

from __future__ import annotations

from tests.uniformity.programs import lines, run

GROUPS = (
    "def get_dp_tp_group():\n    return _DP_TP\n\n"
    "def get_tp_group():\n    return _TP\n\n"
    "def get_attn_tp_group():\n    return _ATTN_TP\n\n"
    "def get_attn_cp_group():\n    return _ATTN_CP\n\n"
)


def _round(test: str, group: str) -> str:
    return GROUPS + (
        "class S:\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        f"            if {test}:\n"
        f"                dist.barrier(group={group})\n"
    )


def test_a_shards_own_index_is_the_same_over_the_shards_tp_ranks(program_of) -> None:
    code = _round("get_attention_dp_rank() == 0", "get_dp_tp_group().cpu_group")
    assert run(program_of, code) == []


def test_a_shards_own_index_varies_over_the_tp_group_of_every_shard(program_of) -> None:
    code = _round("get_attention_dp_rank() == 0", "get_tp_group().cpu_group")
    assert lines(run(program_of, code)) == [code.count("\n")]


def test_a_tp_rank_varies_over_the_shards_tp_ranks(program_of) -> None:
    code = _round("get_attention_tp_rank() == 0", "get_dp_tp_group().cpu_group")
    assert lines(run(program_of, code)) == [code.count("\n")]


# What the shard's TP ranks agree on covers the attention-TP group (a member of it in every
# mode), not the attention-CP group (whose peers join the shard's TP ranks only without
# attention DP).
def _agreed_round(group: str) -> str:
    return GROUPS + (
        "class S:\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            late = [time.monotonic()]\n"
        "            dist.all_gather_object(late, late[0], group=get_dp_tp_group().cpu_group)\n"
        "            if late[0] > 1.0:\n"
        f"                dist.barrier(group={group})\n"
    )


def test_a_value_the_shards_tp_ranks_agreed_on_is_uniform_over_attention_tp(program_of) -> None:
    assert run(program_of, _agreed_round("get_attn_tp_group().cpu_group")) == []


def test_a_value_the_shards_tp_ranks_agreed_on_varies_over_attention_cp(program_of) -> None:
    code = _agreed_round("get_attn_cp_group().cpu_group")
    assert lines(run(program_of, code)) == [code.count("\n")]


# A field named for TP that a constructor keyword bound to the shard's TP ranks is that group:
# sglang's cache keeps `self.tp_group = params.tp_cache_group`, built with
# `CacheInitParams(tp_cache_group=get_dp_tp_group().cpu_group)`. A bare name passed on under
# the same keyword elsewhere is the caller's parameter and says nothing either way.
CACHE = GROUPS + (
    "class Params:\n"
    "    def __init__(self, tp_cache_group):\n"
    "        self.tp_cache_group = tp_cache_group\n\n"
    "def elsewhere(tp_group):\n"
    "    return Params(tp_cache_group=tp_group)\n\n"
    "class Cache:\n"
    "    def __init__(self, params):\n"
    "        self.tp_group = params.tp_cache_group\n\n"
    "    def sync(self):\n"
    "        if get_attention_dp_rank() == 0:\n"
    "            dist.all_reduce(torch.zeros(1), group=self.tp_group)\n\n"
    "class S:\n"
    "    def __init__(self):\n"
    "        self.cache = Cache(Params(tp_cache_group={bound}))\n\n"
    "    def event_loop(self):\n"
    "        while True:\n"
    "            self.cache.sync()\n"
)


def test_a_group_field_is_the_group_a_constructor_keyword_bound_it_to(program_of) -> None:
    assert run(program_of, CACHE.format(bound="get_dp_tp_group().cpu_group")) == []


def test_a_group_field_bound_to_the_whole_tp_group_spans_every_shard(program_of) -> None:
    code = CACHE.format(bound="get_tp_group().cpu_group")
    found = run(program_of, code)
    assert [d.call.line for d in found] and found[0].groups == ("tp",)


# A collective's result over a group is the same on that group's ranks, and keeps whatever its
# inputs were already the same over: agreeing over one shard's TP ranks on a configured limit,
# or on the shard's own index, makes nothing vary that did not.
def _reduced_round(value: str, over: str, group: str) -> str:
    return GROUPS + (
        "class S:\n"
        "    def __init__(self, limit):\n"
        "        self.limit = limit\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        f"            t = torch.tensor([{value}])\n"
        f"            dist.all_reduce(t, group={over})\n"
        "            if t.item() > 2:\n"
        f"                dist.barrier(group={group})\n"
    )


def test_an_agreement_over_a_shard_on_a_uniform_value_is_uniform_everywhere(program_of) -> None:
    code = _reduced_round("self.limit", "get_attn_tp_group().cpu_group", "get_tp_group().cpu_group")
    assert run(program_of, code) == []


def test_an_agreement_keeps_what_its_input_was_uniform_over(program_of) -> None:
    # The shard's own index, reduced over attention TP: still the same over attention CP.
    code = _reduced_round(
        "get_attention_dp_rank()", "get_attn_tp_group().cpu_group", "get_attn_cp_group().cpu_group"
    )
    assert run(program_of, code) == []


def test_an_agreement_does_not_cover_what_its_input_varied_over(program_of) -> None:
    code = _reduced_round(
        "time.monotonic()", "get_attn_tp_group().cpu_group", "get_tp_group().cpu_group"
    )
    found = run(program_of, code)
    assert lines(found) == [code.count("\n")]
    source = found[0].sources[0][0]
    assert (source.kind, source.over) == ("time", "attn_tp")
    assert "agreed only over the attn_tp group" in found[0].why


def test_agreements_in_turn_cover_the_axes_of_both(program_of) -> None:
    # Over attention CP, then attention TP: the same on the shard's TP ranks, not all of TP.
    code = GROUPS + (
        "class S:\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            t = torch.tensor([time.monotonic()])\n"
        "            dist.all_reduce(t, group=get_attn_cp_group().cpu_group)\n"
        "            dist.all_reduce(t, group=get_attn_tp_group().cpu_group)\n"
        "            if t.item() > 2:\n"
        "                dist.barrier(group=get_dp_tp_group().cpu_group)\n"
        "            if t.item() > 3:\n"
        "                dist.barrier(group=get_tp_group().cpu_group)\n"
    )
    assert lines(run(program_of, code)) == [code.count("\n")]


# A broadcast hands every rank its root's value. Requests shared in two steps, first along
# attention CP by the attention-TP roots only, then along each attention-TP group from its root,
# are the same on every rank of the shard: the second step's root took the first step.
SHARE = GROUPS + (
    "def bcast(data, group):\n"
    "    box = [data]\n"
    "    dist.broadcast_object_list(box, src=0, group=group)\n"
    "    return box[0]\n\n"
    "def share(data):\n"
    "    cp = get_attn_cp_group()\n"
    "    tp = get_attn_tp_group()\n"
    "    if cp.world_size > 1 and {test}:\n"
    "        data = bcast(data, cp.cpu_group)\n"
    "    if tp.world_size > 1:\n"
    "        data = bcast(data, tp.cpu_group)\n"
    "    return data\n\n"
    "class S:\n"
    "    def __init__(self, sock, limit):\n"
    "        self.sock = sock\n"
    "        self.limit = limit\n"
    "        self.running = []\n\n"
    "    def event_loop(self):\n"
    "        while True:\n"
    "            self.running.extend(share(self.sock.recv_pyobj()))\n"
    "            if len(self.running) > self.limit:\n"
    "                dist.barrier(group=get_dp_tp_group().cpu_group)\n"
)


def test_a_broadcast_from_roots_that_took_an_earlier_broadcast_covers_both(program_of) -> None:
    assert run(program_of, SHARE.format(test="tp.rank_in_group == 0")) == []


def test_a_broadcast_from_roots_that_may_not_have_taken_the_earlier_one_does_not(
    program_of,
) -> None:
    # Under a test that does not say which rank is the attention-TP root.
    code = SHARE.format(test="tp.world_size > 2")
    found = run(program_of, code)
    assert lines(found) == [code.count("\n")]
    assert found[0].sources[0][0].kind == "inbox"


def test_a_rank_read_from_a_local_group_handle_is_of_that_groups_dimension(program_of) -> None:
    # What the local is bound to says more than its name (sglang: `tp_group =
    # get_attn_tp_group()` before `if tp_group.rank_in_group == 0:`).
    code = GROUPS + (
        "class S:\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            {name} = get_attn_tp_group()\n"
        "            if {name}.rank_in_group == 0:\n"
        "                dist.barrier(group=get_attn_cp_group().cpu_group)\n"
    )
    assert run(program_of, code.format(name="tp")) == []
    assert run(program_of, code.format(name="tp_group")) == []


def test_a_value_skipped_only_in_a_group_of_one_rank_is_agreed_over_it(program_of) -> None:
    code = GROUPS + (
        "class S:\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            tp = get_attn_tp_group()\n"
        "            t = torch.tensor([time.monotonic()])\n"
        "            if tp.world_size > {size}:\n"
        "                dist.all_reduce(t, group=tp.cpu_group)\n"
        "            if t.item() > 2:\n"
        "                dist.barrier(group=tp.cpu_group)\n"
    )
    assert run(program_of, code.format(size=1)) == []
    assert lines(run(program_of, code.format(size=2))) == [code.count("\n")]


# A draw from a seeded generator is as uniform as its seed: seeded from a value the TP group
# agreed on (each rank's own, broadcast from the root), the draws agree inside one TP group,
# not between pipeline stages that agreed separately.
SEEDED = GROUPS + (
    "def get_pp_group():\n    return _PP\n\n"
    "class S:\n"
    "    def __init__(self, config):\n"
    "        box = [config.seed + dist.get_rank()]\n"
    "        tp = get_tp_group()\n"
    "        dist.broadcast_object_list(box, src=tp.ranks[0], group=tp.cpu_group)\n"
    "        torch.manual_seed(box[0])\n\n"
    "    def event_loop(self):\n"
    "        while True:\n"
    "            if torch.rand(1).item() > 0.5:\n"
    "                dist.barrier(group={group}().cpu_group)\n"
)


def test_draws_seeded_from_a_value_a_group_agreed_on_agree_inside_it(program_of) -> None:
    assert run(program_of, SEEDED.format(group="get_tp_group")) == []


def test_draws_seeded_from_a_value_a_group_agreed_on_vary_outside_it(program_of) -> None:
    code = SEEDED.format(group="get_pp_group")
    found = run(program_of, code)
    assert lines(found) == [code.count("\n")]
    assert found[0].sources[0][0].kind == "random"


def test_which_member_a_broadcast_is_told_it_is_is_not_what_it_sends(program_of) -> None:
    # sglang: `broadcast_pyobj([seed], tp_size * pp_rank + tp_rank, group, src=...)`.
    code = GROUPS + (
        "def get_pp_group():\n    return _PP\n\n"
        "def bcast(data, rank, group, src=0):\n"
        "    box = [data] if rank == src else [None]\n"
        "    dist.broadcast_object_list(box, src=src, group=group)\n"
        "    return box[0]\n\n"
        "class S:\n"
        "    def __init__(self, limit):\n"
        "        self.limit = limit\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            tp = get_tp_group()\n"
        "            n = bcast(self.limit, 8 * get_pp_rank() + tp.rank_in_group, tp.cpu_group)\n"
        "            if n > 2:\n"
        "                dist.barrier(group=get_pp_group().cpu_group)\n"
    )
    assert run(program_of, code) == []


# Which return a helper took decides whether its answer is `None`; past `if x is None: return`,
# the answer is not `None`, and that decision says nothing more about it (sglang's embedding
# pool answers `None` when this rank's own clock runs out, the caller returns early on `None`
# and keeps the slot otherwise).
POOL = GROUPS + (
    "class Pool:\n"
    "    def __init__(self, size):\n"
    "        self.size = size\n\n"
    "    def alloc(self, n):\n"
    "        deadline = time.monotonic() + 1.0\n"
    "        while True:\n"
    "            if n <= self.size:\n"
    "                return n\n"
    "            if time.monotonic() > deadline:\n"
    "                return None\n\n"
    "class S:\n"
    "    def __init__(self, size):\n"
    "        self.pool = Pool(size)\n"
    "        self.last = 0\n\n"
    "    def take(self, n):\n"
    "        got = self.pool.alloc(n)\n"
    "        if got is None:\n"
    "            {exit}\n"
    "        self.last = got\n\n"
    "    def event_loop(self):\n"
    "        while True:\n"
    "            self.take(4)\n"
    "            if self.last > 2:\n"
    "                dist.barrier(group=get_tp_group().cpu_group)\n"
)


def test_an_answer_past_its_none_exit_is_not_decided_by_what_chose_none(program_of) -> None:
    assert run(program_of, POOL.format(exit="return")) == []


def test_an_answer_that_may_still_be_none_is(program_of) -> None:
    code = POOL.format(exit="pass")
    found = run(program_of, code)
    assert lines(found) == [code.count("\n")]
    assert found[0].sources[0][0].kind == "time"


# A conversion named for the rank it returns returns a rank of that dimension, however it is
# computed (sglang: `physical_ep_rank_to_dp_rank(tp_rank + offset, attn_tp_size * attn_cp_size)`,
# the attention-DP replica of an expert-parallel rank).
CONVERTED = GROUPS + (
    "def physical_rank_to_attn_dp_rank(rank, width):\n"
    "    return rank // width\n\n"
    "class S:\n"
    "    def event_loop(self):\n"
    "        while True:\n"
    "            slot = physical_rank_to_attn_dp_rank(get_tp_rank(), 4)\n"
    "            if slot == 0:\n"
    "                dist.barrier(group={group}().cpu_group)\n"
)


def test_a_rank_converted_by_name_is_a_rank_of_that_dimension(program_of) -> None:
    assert run(program_of, CONVERTED.format(group="get_dp_tp_group")) == []
    code = CONVERTED.format(group="get_tp_group")
    found = run(program_of, code)
    assert lines(found) == [code.count("\n")]
    assert found[0].sources[0][0].dimension == "attn_dp"


# Two `if`s on the same unchanged test take the same side (sglang's `recv_tensor_dict`: with
# `use_all_gather`, each rank receives its own slice, then the group gathers the whole tensor;
# without, it receives the whole tensor). Joined path-insensitively, the slice this rank took
# would survive the gather.
SLICED = GROUPS + (
    "class S:\n"
    "    def __init__(self, size):\n"
    "        self.size = size\n\n"
    "    def event_loop(self):\n"
    "        while True:\n"
    "            tp = get_attn_tp_group()\n"
    "            use = self.size > 1\n"
    "            t = torch.empty(8)\n"
    "            if use:\n"
    "                t = t.reshape(2, -1)[tp.rank_in_group]\n"
    "            dist.recv(t, src=0)\n"
    "            if {again}:\n"
    "                whole = torch.empty(8)\n"
    "                dist.all_gather_into_tensor(whole, t, group=tp.cpu_group)\n"
    "                t = whole\n"
    "            if t.sum() > 0:\n"
    "                dist.barrier(group=tp.cpu_group)\n"
)


def test_a_test_taken_again_takes_the_same_side(program_of) -> None:
    assert run(program_of, SLICED.format(again="use")) == []


def test_a_different_test_may_take_the_other_side(program_of) -> None:
    code = SLICED.format(again="self.size > 2")
    assert lines(run(program_of, code)) == [code.count("\n")]


# The device model's identity (its compute capability) is the same on every rank of a group;
# what the device holds now (its free memory) is this rank's own.
DEVICE = (
    "import pynvml\n\n"
    + GROUPS
    + (
        "class S:\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            handle = pynvml.nvmlDeviceGetHandleByIndex(0)\n"
        "            if {test}:\n"
        "                dist.barrier(group=get_tp_group().cpu_group)\n"
    )
)


def test_the_device_models_identity_is_the_same_on_every_rank(program_of) -> None:
    assert (
        run(
            program_of,
            DEVICE.format(test="pynvml.nvmlDeviceGetCudaComputeCapability(handle)[0] >= 9"),
        )
        == []
    )


def test_what_the_device_holds_now_is_this_ranks_own(program_of) -> None:
    code = DEVICE.format(test="pynvml.nvmlDeviceGetMemoryInfo(handle).free > 1")
    assert lines(run(program_of, code)) == [code.count("\n")]
