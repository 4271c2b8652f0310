"""Opt-in: the judged rank-divergent findings on sglang 0.5.23 (`RANKGUARD_CORPUS`, as in
`test_acceptance_sglang.py`).

`tests/data/precision/sglang-0.5.23-divergent.json` lists every rank-divergent finding one run
of the two loops reported, each judged by reading the code (how the run was made is in the
file):

- `true`: the condition can differ between the ranks of the collective's group and its sides
  do not enter the same collectives. It must stay reported, matched line-free by its site
  (function, the call's callee, the condition's text).
- `false`: the condition is uniform over that group, or the collective is not reached there,
  or every side enters it (`cause` says which). Still reported ones are the precision debt;
  one that is gone must stay gone.
- `unverified`: not read far enough to judge (`why` says what is open); left out of precision.

The last test keeps the judged precision (true over true and false, among those still
reported) from falling, so the next session can rescore by running this file.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from rankguard.cli import main
from tests.check.test_acceptance_sglang import SRT, pytestmark  # noqa: F401

RULE = "rank-divergent-collective"
DATA = Path(__file__).resolve().parent.parent / "data" / "precision"
JUDGED = json.loads((DATA / "sglang-0.5.23-divergent.json").read_text("utf-8"))
LABELS = JUDGED["labels"]


@pytest.fixture(scope="module")
def divergent(tmp_path_factory) -> list[dict]:
    config = tmp_path_factory.mktemp("cfg") / "rankguard.toml"
    config.write_text('rounds = ["*.event_loop_normal", "*.event_loop_pp"]\n')
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        main(["check", str(SRT), "--config", str(config), "--format", "json", "--select", RULE])
    payload = json.loads(buffer.getvalue())
    assert payload["errors"] == []
    return [f for f in payload["findings"] if f["rule"] == RULE]


def _site(item: dict) -> tuple[str, str, str]:
    """Function, the call's callee and the condition's text: what a judgement is about."""
    return (item["function"], item["collective"]["callee"], item["condition"]["text"])


def _reported(found: list[dict], label: dict) -> bool:
    return any(_site(f) == _site(label) for f in found)


@pytest.mark.parametrize(
    "label", [item for item in LABELS if item["verdict"] == "true"], ids=lambda item: item["id"]
)
def test_true_findings_stay(divergent: list[dict], label: dict) -> None:
    assert _reported(divergent, label), f"judged true but no longer reported: {label['why']}"


@pytest.mark.parametrize(
    "label",
    [item for item in LABELS if item["verdict"] == "false" and not item["reported"]],
    ids=lambda item: item["id"],
)
def test_false_findings_stay_gone(divergent: list[dict], label: dict) -> None:
    assert not _reported(divergent, label), f"reported again: {label['why']}"


def test_judged_precision_does_not_fall(divergent: list[dict]) -> None:
    recorded = [item for item in LABELS if item["reported"]]
    now = [item for item in LABELS if _reported(divergent, item)]

    def precision(items: list[dict]) -> float:
        judged = [item for item in items if item["verdict"] in ("true", "false")]
        return sum(item["verdict"] == "true" for item in judged) / max(len(judged), 1)

    assert precision(now) >= precision(recorded)
