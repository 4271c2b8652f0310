"""A fresh reader's programs against the ninth session's launch paths, predicate helpers and
placement changes: each failed on the first version (bd29401) and states what the code must do.
The programs are `review/fx*.txt`: helpers that rebind a parameter, read a global, call
something fresh, a validation behind a mode-only function or a retrying one, counters with no
seen start, device names compared, an integer device index."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.check.test_blocking import _run

HERE = Path(__file__).parent / "review"
BOTH = ["event_loop_normal", "event_loop_pp"]


def _found(tmp_path: Path, name: str, rounds: str = "*.event_loop_*") -> dict[tuple[int, str], str]:
    _, result = _run(tmp_path, (HERE / name).read_text(), {"rounds": [rounds]})
    return {
        (f.line, f.extra["round"].rsplit(".", 1)[-1]): f.extra["confidence"]
        for f in result.findings
    }


def _rounds(tmp_path: Path, name: str) -> list[str]:
    return sorted(r for _, r in _found(tmp_path, name))


@pytest.mark.parametrize(
    "name",
    [
        "fx1_param_rebound_getter_local.txt",  # settings.getter_locals: param rebound in a branch
        "fx2_helper_rebinds_parameter.txt",  # predicates._read_test: `ex = ex.draft`
        "fx3_helper_global_vs_caller_name.txt",  # helper global `mode` read as caller's param
        "fx4_helper_with_fresh_call_twice.txt",  # helper calling recv() expanded, facts reused
        "fx4b_helper_local_fresh_call_twice.txt",  # same through `msg = self.inbox.recv()`
        "fx5_two_locals_from_one_zero_arg_call.txt",  # two next_request() locals read as one
        "fx10_helper_chained_locals.txt",  # `ex = get_exec(); draft = ex.draft`: `ex` leaks
        "fx13_write_through_getter_local.txt",  # `ex.elastic_ep_backend = ...` not forgotten
        "fx4c_fresh_value_read_twice.txt",  # `self.inbox.recv().kind` twice, inline
    ],
)
def test_the_sleep_stays_reported_in_both_loops(tmp_path: Path, name: str):
    assert _rounds(tmp_path, name) == BOTH


def test_a_validation_reached_only_in_legacy_mode_decides_nothing_despite_recursion(tmp_path):
    """fx6: `start` retries itself in a loop; every launch still passes `if _CFG.legacy`, as
    in test_a_validation_run_only_in_a_mode_the_settings_choose_decides_nothing."""
    found = _found(tmp_path, "fx6_modal_cycle_least_fixpoint.txt")
    assert sorted(found.values()) == ["high", "high"]


def test_a_validation_reached_through_a_modal_function_is_a_doubt_not_a_fact(tmp_path):
    """fx7: as fx7b (the `if` written directly), the pipeline loop's finding stays, low."""
    direct = _found(tmp_path / "b", "fx7b_direct_if_baseline.txt")
    via = _found(tmp_path / "a", "fx7_modal_intermediate_hides_reason.txt")
    assert sorted(direct.values()) == ["high", "low"]
    assert sorted(via.values()) == ["high", "low"]


@pytest.mark.parametrize(
    "name", ["fx9_counter_without_seen_init.txt", "fx9_counter_in_library_base.txt"]
)
def test_a_counter_never_seen_initialised_is_not_a_python_number(tmp_path: Path, name: str):
    """fx9: `self.done += 1` is the only assignment the program shows: a device tensor
    (class attribute / base class) may be behind it, so the second tolist stays reported."""
    assert len(_found(tmp_path, name, "mod.Engine.loop")) == 2


def test_counter_promotion_does_not_depend_on_statement_order(tmp_path: Path):
    """fx11: the two files differ only in the order of `self.a = 0` / `self.b = 0`."""
    first = _found(tmp_path / "a", "fx11_counter_order_a_first.txt", "mod.Engine.loop")
    second = _found(tmp_path / "b", "fx11_counter_order_b_first.txt", "mod.Engine.loop")
    assert sorted(first) == sorted(second)


def test_comparing_with_a_device_name_reads_no_tensor(tmp_path: Path):
    """fx12: `self.device == "cuda"`, `dev == torch.device("cuda")` compare device names."""
    assert _found(tmp_path, "fx12_device_name_comparisons.txt", "*.event_loop*") == {}


def test_metadata_predicates_read_no_tensor(tmp_path: Path):
    """fx8 (part): torch.is_tensor / torch.is_floating_point read no value."""
    code = (HERE / "fx8_truth_tests.txt").read_text()
    _, result = _run(tmp_path, code, {"rounds": ["*.event_loop_*"]})
    flagged = {f.extra["round"].split("event_loop_")[-1] for f in result.findings}
    assert not flagged & {"is_tensor", "is_fp"}, flagged


def test_an_integer_device_index_is_a_device_not_a_python_number(tmp_path: Path):
    """fx14: `.to(0)` / `device=0` put the tensor on cuda:0; its tolist() stays reported
    (medium at 0071106, dropped at bd29401: the literal 0 is taken for the tensor's placement)."""
    found = _found(tmp_path, "fx14_int_device_index.txt", "mod.event_loop_*")
    assert {r for _, r in found} >= {"event_loop_to", "event_loop_factory", "event_loop_str"}
