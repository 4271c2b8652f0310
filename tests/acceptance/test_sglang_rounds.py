"""Collectives in sglang 0.5.23's scheduler rounds, each chain verified by reading the code.

Opt-in: set RANKGUARD_CORPUS (see tests/conftest.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import cli_json

S = "sglang.srt."
NORMAL = S + "managers.scheduler.Scheduler.event_loop_normal"
PP = S + "managers.scheduler_pp_mixin.SchedulerPPMixin.event_loop_pp"
INGEST = S + "managers.scheduler.Scheduler.ingest_requests"
RECEIVER = S + "managers.scheduler_components.request_receiver.SchedulerRequestReceiver"
RECV = RECEIVER + ".recv_requests"

# (round, primitive, file of the primitive, functions of the chain from the round down)
VERIFIED = [
    # Requests reach every rank through a broadcast of the pickled list.
    (
        NORMAL,
        "torch.distributed.broadcast",
        "utils/common.py",
        [
            NORMAL,
            INGEST,
            RECV,
            RECEIVER + "._broadcast_reqs_across_ranks",
            S + "distributed.communication_op.attn_cp_tp_broadcast_pyobj",
            S + "utils.common.broadcast_pyobj",
        ],
    ),
    # The same ingestion in the pipeline loop, with the point-to-point pull before it.
    (
        PP,
        "torch.distributed.isend",
        "utils/common.py",
        [
            PP,
            INGEST,
            RECV,
            RECEIVER + "._pull_raw_reqs",
            S + "utils.common.point_to_point_pyobj",
        ],
    ),
    # Grammar polling gathers ready/failed indexes across the group.
    (
        NORMAL,
        "torch.distributed.all_gather_object",
        "constrained/grammar_manager.py",
        None,  # chain checked by its last function only
    ),
]


@pytest.fixture(scope="module")
def rounds(sglang_srt: Path, sglang_rounds_config: Path, tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    code, result = cli_json(
        "rounds",
        str(sglang_srt),
        "--config",
        str(sglang_rounds_config),
        "--cache-dir",
        str(cache),
        "--format",
        "json",
    )
    assert code == 0
    return {r["round"]: r["collectives"] for r in result["rounds"]}


def test_both_loops_are_rounds(rounds):
    assert set(rounds) == {NORMAL, PP}


@pytest.mark.parametrize(("round_fn", "callee", "path", "functions"), VERIFIED)
def test_verified_collective_chain(rounds, round_fn, callee, path, functions):
    chains = [
        [hop["function"] for hop in c["chain"]]
        for c in rounds[round_fn]
        if c["callee"] == callee and c["path"] == path
    ]
    assert chains, f"{callee} in {path} not reached from {round_fn}"
    if functions is None:
        assert any(
            chain[-1].endswith("GrammarManager.get_ready_grammar_requests") for chain in chains
        )
    else:
        assert functions in chains


def test_pipeline_receive_through_untyped_group_is_a_marked_fallback(rounds):
    # `self.pp_group` comes from a `__getattr__`-driven context: only the method name ties
    # `recv_tensor_dict` to GroupCoordinator, and the chain says so.
    hops = [
        hop
        for c in rounds[PP]
        for hop in c["chain"]
        if hop["function"].endswith("SchedulerPPMixin._pp_recv_typed_dict")
    ]
    assert hops and all(h.get("edge") == "fallback" for h in hops)
