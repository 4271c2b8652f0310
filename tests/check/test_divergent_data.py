"""The judged rank-divergent findings file (`tests/data/precision/sglang-0.5.23-divergent.json`)
is well formed: the opt-in rescoring (`test_divergent_labels.py`) relies on its fields."""

from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data" / "precision"
JUDGED = json.loads((DATA / "sglang-0.5.23-divergent.json").read_text("utf-8"))


def test_every_label_names_its_site_and_a_known_verdict() -> None:
    ids = [label["id"] for label in JUDGED["labels"]]
    assert len(ids) == len(set(ids))
    for label in JUDGED["labels"]:
        assert label["verdict"] in JUDGED["verdicts"], label["id"]
        assert label["function"] and label["collective"]["callee"] and label["condition"]["text"]
        assert label["why"], label["id"]
        if label["verdict"] == "false":
            assert label["cause"] in JUDGED["causes"], label["id"]


def test_the_two_real_gates_are_judged_true() -> None:
    true = {
        (label["path"], label["line"]) for label in JUDGED["labels"] if label["verdict"] == "true"
    }
    assert ("disaggregation/role_switch.py", 150) in true
    assert ("managers/scheduler.py", 3975) in true
