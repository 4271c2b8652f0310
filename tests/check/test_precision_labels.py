"""Opt-in: the labelled precision sample on sglang 0.5.23 (`RANKGUARD_CORPUS`, as in
`test_acceptance_sglang.py`).

`tests/data/precision/sglang-0.5.23-blocking.json` holds blocking findings of the two loops,
each judged by reading the code: a fixed-seed sample of the findings before the precision work
(`before`), one of the findings after it (`after`) and three judged by labellers independent of
the tool's author (`independent`, `fourth`, `fifth`, with a `cause` for each false one), and
`rerouted`: the chains now shown for sites whose labelled chain went while the site stayed; how
each was drawn is in the file.

- `true`: the call blocks this rank there and the labelled collective follows it in that round.
  It must stay reported (matched line-free by round, function, callee and text: its chain may
  change) and still pair with that collective. A label with `moved` names the earlier call in
  the same function where that wait now shows (a sync on the same tensor before it drained the
  queue, `analysis.drained`): that call is held instead, and `moved.why` says why.
- `false`: the call does not block there, or the path cannot run in that round. A false finding
  that is gone (`reported: false`) must stay gone (matched by fingerprint: that chain).
- `wrong-collective`: the call blocks but the labelled collective does not run there; gone ones
  stay gone, as above.

A label for a path only other hardware runs (`platforms`, e.g. code in an NPU module) is held
only to a run analysing that hardware; this run analyses the default, CUDA.

False findings still reported are the known precision debt; the last test keeps the labelled
precision from falling below what the file records.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.precision_sample import reported, site
from tests.check.test_acceptance_sglang import findings, pytestmark  # noqa: F401

DATA = Path(__file__).resolve().parent.parent / "data" / "precision"
LABELS = json.loads((DATA / "sglang-0.5.23-blocking.json").read_text("utf-8"))["labels"]
RUN_PLATFORM = "cuda"  # the acceptance run's config leaves `platforms` at its default


def _blocking(found: list[dict]) -> list[dict]:
    return [f for f in found if f["rule"] == "blocking-before-collective"]


@pytest.mark.parametrize(
    "label",
    [
        item
        for item in LABELS
        if item["verdict"] == "true" and RUN_PLATFORM in item.get("platforms", [RUN_PLATFORM])
    ],
    ids=lambda item: item["id"],
)
def test_true_findings_stay(findings: list[dict], label: dict):  # noqa: F811
    hits = [f for f in _blocking(findings) if site(f) == site(label)]
    assert hits, f"labelled true but no longer reported: {label['why']}"
    paired = {(c["callee"], c["path"]) for f in hits for c in f["collectives"]}
    real = (label["collective"]["callee"], label["collective"]["path"])
    assert real in paired, f"no longer paired with {real}: {label['why']}"


@pytest.mark.parametrize(
    "label",
    [item for item in LABELS if item["verdict"] != "true" and not item["reported"]],
    ids=lambda item: item["id"],
)
def test_false_findings_stay_gone(findings: list[dict], label: dict):  # noqa: F811
    assert not reported(_blocking(findings), label), f"reported again: {label['why']}"


@pytest.mark.parametrize("sample", ["after", "independent", "fourth", "fifth", "rerouted"])
def test_labelled_precision_does_not_fall(findings: list[dict], sample: str):  # noqa: F811
    found = _blocking(findings)
    drawn = [
        item
        for item in LABELS
        if item["sample"] == sample and RUN_PLATFORM in item.get("platforms", [RUN_PLATFORM])
    ]
    recorded = [item for item in drawn if item["reported"]]
    now = [item for item in drawn if reported(found, item)]

    def precision(items: list[dict]) -> float:
        return sum(item["verdict"] == "true" for item in items) / max(len(items), 1)

    assert precision(now) >= precision(recorded)
