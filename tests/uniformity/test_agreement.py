"""What the group agrees on without exchanging it (issue #18, second pass).

Each program is a round (`S.event_loop`) whose collective is gated by a value that every rank
of the group computes identically, or not.
"""

from __future__ import annotations

from tests.uniformity.programs import lines, run

# A sampler in the style of serving frameworks: the next token is drawn from torch's generator
# and recorded in the request state, which later decides whether a collective runs.
SAMPLER = (
    "def set_seed(seed):\n"
    "    random.seed(seed)\n"
    "    torch.manual_seed(seed)\n\n"
    "class S:\n"
    "    def __init__(self, config):\n"
    "        self.seed = config.seed\n"
    "        self.finished = []\n\n"
    "    def init(self):\n"
    "        set_seed({seed})\n\n"
    "    def sample(self, probs):\n"
    "        ids = torch.multinomial(probs, num_samples=1)\n"
    "        self.finished.append(ids.item() == 2)\n\n"
    "    def event_loop(self):\n"
    "        self.init()\n"
    "        while True:\n"
    "            self.sample(self.probs)\n"
    "            if self.finished[-1]:\n"
    "                dist.barrier()\n"
)
BARRIER = SAMPLER.count("\n")


def test_draws_from_a_generator_seeded_alike_are_uniform(program_of) -> None:
    # Every rank seeds torch's generator with the same configured value: the draws agree.
    assert run(program_of, SAMPLER.format(seed="self.seed")) == []


def test_draws_from_a_generator_seeded_per_rank_vary(program_of) -> None:
    found = run(program_of, SAMPLER.format(seed="self.seed + dist.get_rank()"))
    assert lines(found) == [BARRIER]
    assert found[0].sources[0][0].kind == "random"


def test_draws_from_an_unseeded_generator_vary(program_of) -> None:
    code = SAMPLER.format(seed="self.seed").replace("    torch.manual_seed(seed)\n", "")
    found = run(program_of, code)
    assert lines(found) == [code.count("\n")]
    assert found[0].sources[0][0].text.startswith("torch.multinomial")


# An object from outside the program that is handed a process group takes part in that group's
# protocol: the rank ids it is given say which member it is, not what its lookups return.
CONNECTOR = (
    "class S:\n"
    "    def __init__(self, tp_rank, pp_rank, tp_group):\n"
    "        self.tp_group = tp_group\n"
    "        self.conn = Connector(tp_rank=tp_rank, pp_rank=pp_rank{group})\n\n"
    "    def event_loop(self):\n"
    "        while True:\n"
    "            hits = self.conn.lookup(self.key)\n"
    "            if hits > 0:\n"
    "                dist.barrier(group=self.tp_group)\n"
)


def test_rank_ids_configuring_a_group_member_are_not_its_results(program_of) -> None:
    assert run(program_of, CONNECTOR.format(group=", group=tp_group")) == []


def test_rank_ids_given_without_a_group_shard_the_results(program_of) -> None:
    # No group to agree through: a rank-sharded object (a sampler, a shard reader).
    found = run(program_of, CONNECTOR.format(group=""))
    assert lines(found) == [10]
    assert found[0].sources[0][0].kind == "rank-id"


# Data-parallel attention: each DP shard's leader receives its own requests and broadcasts them
# over its attention-TP group only; the TP group spans every shard.
DP_GROUPS = (
    "def get_attn_tp_group():\n    return _ATTN_TP\n\n"
    "def get_tp_group():\n    return _TP\n\n"
    "def broadcast_reqs(reqs, group):\n"
    "    box = [reqs]\n"
    "    dist.broadcast_object_list(box, src=0, group=group)\n"
    "    return box[0]\n\n"
    "def shard_broadcast(reqs):\n"
    "    tp_group = get_attn_tp_group()\n"
    "    return broadcast_reqs(reqs, tp_group.cpu_group)\n\n"
)


def _dp_round(gather: str) -> str:
    return DP_GROUPS + (
        "class S:\n"
        "    def __init__(self, sock, limit):\n"
        "        self.sock = sock\n"
        "        self.limit = limit\n"
        "        self.running = []\n\n"
        "    def receive(self):\n"
        "        for req in shard_broadcast(self.sock.recv_pyobj()):\n"
        "            self.running.append(req)\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            self.receive()\n"
        "            if len(self.running) < self.limit:\n"
        "                continue\n"
        f"            {gather}\n"
    )


def test_state_agreed_over_a_shard_varies_over_the_wider_group(program_of) -> None:
    code = _dp_round("dist.all_gather_object([None], 1, group=get_tp_group().cpu_group)")
    found = run(program_of, code)
    assert lines(found) == [code.count("\n")]
    source = found[0].sources[0][0]
    assert (source.kind, source.over) == ("inbox", "attn_tp")
    assert found[0].groups == ("tp",)


def test_state_agreed_over_a_shard_is_uniform_inside_it(program_of) -> None:
    code = _dp_round("dist.all_gather_object([None], 1, group=get_attn_tp_group().cpu_group)")
    assert run(program_of, code) == []


def test_a_decision_returned_from_shard_state_varies_over_the_wider_group(program_of) -> None:
    # Each shard asks a helper whether to defer; the helper returns constants, but which one
    # depends on the shard's own running batch: the TP-wide gather runs on some shards only.
    code = DP_GROUPS + (
        "class S:\n"
        "    def __init__(self, sock, limit):\n"
        "        self.sock = sock\n"
        "        self.limit = limit\n"
        "        self.running = []\n\n"
        "    def receive(self):\n"
        "        for req in shard_broadcast(self.sock.recv_pyobj()):\n"
        "            self.running.append(req)\n\n"
        "    def defer(self):\n"
        "        if len(self.running) < self.limit:\n"
        "            return False\n"
        "        return True\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            self.receive()\n"
        "            if self.defer():\n"
        "                continue\n"
        "            dist.all_gather_object([None], 1, group=get_tp_group().cpu_group)\n"
    )
    found = run(program_of, code)
    assert lines(found) == [code.count("\n")]
    source = found[0].sources[0][0]
    assert (source.kind, source.over) == ("inbox", "attn_tp")


def test_what_a_broadcast_wrapper_returns_is_agreed_whichever_side_returns(program_of) -> None:
    # The root returns its own data, the others what they received: which `return` runs
    # depends on the rank, the value does not.
    code = (
        "def bcast(data, rank, group, src=0):\n"
        "    box = [data]\n"
        "    dist.broadcast_object_list(box, src=src, group=group)\n"
        "    if rank == src:\n"
        "        return data\n"
        "    return box[0]\n\n"
        "class S:\n"
        "    def __init__(self, tp_group):\n"
        "        self.tp_group = tp_group\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            reqs = bcast(self.sock.recv_pyobj(), dist.get_rank(), self.tp_group)\n"
        "            if reqs:\n"
        "                dist.barrier(group=self.tp_group)\n"
    )
    assert run(program_of, code) == []


# Which `return` runs matters only where the returns hand back different values: a helper that
# answers `None` when this rank's own free memory is short decides, by that `None`, whether the
# caller goes on into the collective.
def test_a_none_returned_on_local_free_memory_decides_the_collective(program_of) -> None:
    code = (
        "class S:\n"
        "    def __init__(self, tp_group):\n"
        "        self.tp_group = tp_group\n\n"
        "    def reserve(self, need):\n"
        "        if torch.cuda.mem_get_info()[0] < need:\n"
        "            return None\n"
        "        return torch.empty(need, device='cuda')\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            buf = self.reserve(1 << 20)\n"
        "            if buf is None:\n"
        "                continue\n"
        "            dist.all_reduce(buf, group=self.tp_group)\n"
    )
    found = run(program_of, code)
    assert lines(found) == [code.count("\n")]
    assert found[0].sources[0][0].kind == "driver"


# Reduced from sglang 0.5.23 (`utils/common.py`: `async_d2h` returns `tensor.to("cpu")` when
# `is_pin_memory_available()` says no, else a pinned copy; the scheduler then reads the token
# ids it copied and decides on them). Both returns hold the tensor's data: which one runs
# depends on this host's driver, the values the caller tests do not.
def test_which_copy_of_the_same_data_is_returned_does_not_decide(program_of) -> None:
    code = (
        "def pin_ok():\n"
        "    if torch.cuda.mem_get_info()[0] < (1 << 30):\n"
        "        return False\n"
        "    return True\n\n"
        "def to_host(tensor):\n"
        "    if not pin_ok():\n"
        "        return tensor.to('cpu')\n"
        "    host = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)\n"
        "    host.copy_(tensor, non_blocking=True)\n"
        "    return host\n\n"
        "class S:\n"
        "    def __init__(self, tp_group):\n"
        "        self.tp_group = tp_group\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            ids = torch.zeros(4)\n"
        "            dist.all_reduce(ids, group=self.tp_group)\n"
        "            done = to_host(ids).tolist()\n"
        "            if done[0] > 0:\n"
        "                dist.barrier(group=self.tp_group)\n"
    )
    assert run(program_of, code) == []


def test_a_group_named_for_what_it_coordinates_is_a_group(program_of) -> None:
    # sglang hands its KV-cache connector `tp_group=params.tp_cache_group`: the TP group kept
    # for cache coordination, a member's group all the same.
    code = CONNECTOR.replace("tp_group):\n", "params):\n").replace(
        "self.tp_group = tp_group", "self.tp_group = params.tp_cache_group"
    )
    assert run(program_of, code.format(group=", group=params.tp_cache_group")) == []


# An object is not a value: a program class's constructor that runs a collective over one of
# the groups it is handed (sglang's FlexKV connector, built with the PP, attention-TP and CP
# groups) makes an object whose fields carry their own flows, not "a value agreed over PP".
def test_an_object_built_with_a_collective_is_not_a_value_agreed_over_its_group(
    program_of,
) -> None:
    code = (
        "class Conn:\n"
        "    def __init__(self, pp_group, tp_group):\n"
        "        self.ready = torch.zeros(1)\n"
        "        dist.all_reduce(self.ready, group=pp_group)\n"
        "        self.tp_group = tp_group\n"
        "        self.layerwise = True\n\n"
        "class S:\n"
        "    def __init__(self, pp_group, tp_group):\n"
        "        self.tp_group = tp_group\n"
        "        self.conn = Conn(pp_group, tp_group)\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            if self.conn.layerwise:\n"
        "                dist.barrier(group=self.tp_group)\n"
    )
    assert run(program_of, code) == []
