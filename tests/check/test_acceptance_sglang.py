# ruff: noqa: E501  (one verified site per row reads better than wrapped tuples)
"""Opt-in acceptance on sglang 0.5.23 (`../shared/corpus/get-corpus.sh`): blocking calls that
were verified by reading the code, in `event_loop_normal` and `event_loop_pp`.

Skipped unless `$RANKGUARD_CORPUS` names the folder holding `sglang/srt` (opt-in, so the
suite never depends on a corpus being present). A cold run parses all of sglang/srt (~100 s on
one core); the parse cache makes reruns take seconds.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rankguard.cli import main

CORPUS = os.environ.get("RANKGUARD_CORPUS", "")
SRT = Path(CORPUS) / "sglang" / "srt"

pytestmark = pytest.mark.skipif(
    not CORPUS or not SRT.is_dir(), reason="set RANKGUARD_CORPUS to run acceptance tests"
)

NORMAL = "sglang.srt.managers.scheduler.Scheduler.event_loop_normal"
PP = "sglang.srt.managers.scheduler_pp_mixin.SchedulerPPMixin.event_loop_pp"

# (round, blocking path, line, callee, kind, first collective path, line)
VERIFIED = [
    # Grammar polling: a sleep-and-poll loop over compile futures, then an all_gather_object
    # across the TP group (grammar_manager.get_ready_grammar_requests).
    (PP, "constrained/grammar_manager.py", 252, "time.sleep", "sleep", "constrained/grammar_manager.py", 274),
    (NORMAL, "constrained/grammar_manager.py", 252, "time.sleep", "sleep", "constrained/grammar_manager.py", 274),
    # Pipeline drain: `_pp_commit_comm_work` waits on last round's async sends
    # (`work: List[P2PWork]`, `P2PWork.work: Optional[torch.distributed.Work]`) before the
    # next isend to the following stage.
    (PP, "managers/scheduler_pp_mixin.py", 699, "torch.distributed.Work.wait", "work-wait", "utils/common.py", 2766),
    # The receiver side of point_to_point_pyobj: irecv(...).wait() of the size, then the
    # payload's irecv.
    (PP, "utils/common.py", 2791, "torch.distributed.Work.wait", "work-wait", "utils/common.py", 2801),
    # recv_tensor_dict: irecv(...).wait() of the proxy tensors before the next all_gather.
    # all_gather(tensor, dim=0) leaves output_tensor_list None, so the gather that runs is the
    # all_gather_into_tensor at the end of GroupCoordinator.all_gather (not its list branch).
    (PP, "distributed/parallel_state.py", 1887, "torch.distributed.Work.wait", "work-wait", "distributed/parallel_state.py", 1429),
    # Device-to-host: the pp loop waits for the D2H copy event of the next micro-batch's
    # outputs (`d2h_event.synchronize()`, a torch.cuda.Event; the receiver is untyped).
    (PP, "managers/scheduler_pp_mixin.py", 192, "torch.cuda.Stream.synchronize", "device-sync", None, None),
    # A configured forward sleep in run_batch (`--forward-sleep-time`, a debugging knob).
    (PP, "managers/scheduler.py", 4642, "time.sleep", "sleep", None, None),
]  # fmt: skip

# Verified as not blocking: CPU tensors in point_to_point_pyobj (`torch.tensor([0], ...)`
# without device=, `torch.empty(size, dtype=...)`), read after the irecv completes; the size
# in broadcast_pyobj, whose callers all keep the default force_cpu_device=True (a host tensor
# on the CPU group); `failed[index].item()` on a `torch.zeros(...)` host tensor in the request
# receiver.
NOT_BLOCKING = [
    ("utils/common.py", 2793),
    ("utils/common.py", 2806),
    ("utils/common.py", 2731),
    ("managers/scheduler_components/request_receiver.py", 306),
]


@pytest.fixture(scope="module")
def findings(tmp_path_factory) -> list[dict]:
    config = tmp_path_factory.mktemp("cfg") / "rankguard.toml"
    config.write_text('rounds = ["*.event_loop_normal", "*.event_loop_pp"]\n')
    out = tmp_path_factory.mktemp("out") / "findings.json"
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(
            ["check", str(SRT), "--config", str(config), "--format", "json",
             "--select", "blocking-before-collective"]
        )  # fmt: skip
    out.write_text(buffer.getvalue())
    payload = json.loads(buffer.getvalue())
    assert code == 1
    assert payload["errors"] == []
    return payload["findings"]


@pytest.mark.parametrize("row", VERIFIED, ids=lambda r: f"{r[1]}:{r[2]}")
def test_verified_blocking_calls_are_found(findings: list[dict], row: tuple):
    round_name, path, line, callee, kind, coll_path, coll_line = row
    hits = [
        f for f in findings if f["round"] == round_name and f["path"] == path and f["line"] == line
    ]
    assert hits, f"{path}:{line} not reported in {round_name}"
    finding = hits[0]
    assert finding["blocking"]["callee"] == callee
    assert finding["blocking"]["kind"] == kind
    assert finding["chain"][0]["function"] == round_name
    assert finding["chain"][-1]["path"] == path and finding["chain"][-1]["line"] == line
    if coll_path is not None:
        # Among the collectives it delays (the first named may be one of several dispatch
        # branches, e.g. an HPU communicator's, that the model cannot rule out).
        paired = {(c["path"], c["line"]) for c in finding["collectives"]}
        assert (coll_path, coll_line) in paired


def test_verified_non_blocking_calls_are_not_found(findings: list[dict]):
    sites = {(f["path"], f["line"]) for f in findings}
    for site in NOT_BLOCKING:
        assert site not in sites
