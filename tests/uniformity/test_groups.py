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
