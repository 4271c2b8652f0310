"""`benchmarks/precision_sample.py rescore` scores the held-out labels too
(`tests/data/precision/heldout-vllm-megatron.json`): they name their `corpus`, not a `sample`,
carry no `reported`, and one run covers one corpus, so the others' labels are left out."""

from __future__ import annotations

from benchmarks.precision_sample import rescore


def _finding(fingerprint: str, text: str, confidence: str = "high") -> dict:
    return {
        "rule": "blocking-before-collective",
        "fingerprint": fingerprint,
        "round": "m.loop",
        "confidence": confidence,
        "chain": [{"function": "m.f"}],
        "blocking": {"callee": "torch.Tensor.item", "text": text},
    }


def _label(ident: str, corpus: str, verdict: str, fingerprint: str, text: str) -> dict:
    return {
        "id": ident,
        "corpus": corpus,
        "fingerprint": fingerprint,
        "round": "m.loop",
        "function": "m.f",
        "callee": "torch.Tensor.item",
        "text": text,
        "verdict": verdict,
    }


LABELS = [
    _label("vllm-00", "vllm", "true", "a", "x.item()"),
    _label("vllm-01", "vllm", "false", "b", "y.item()"),
    _label("megatron-core-00", "megatron-core", "true", "c", "z.item()"),
]


def test_held_out_labels_are_scored_per_corpus() -> None:
    run = [_finding("a", "x.item()"), _finding("b", "y.item()")]
    assert rescore(LABELS, run, sample="vllm") == [
        "vllm: all: 1/2  high: 1/2  (by site: 1/2)",
        "true labels no longer reported: none",
        "gone false labels back: none",
    ]


def test_a_corpus_not_run_loses_no_label() -> None:
    lines = rescore(LABELS, [_finding("a", "x.item()")], sample="vllm")
    assert lines[-2:] == ["true labels no longer reported: none", "gone false labels back: none"]
    assert rescore(LABELS, [], sample="megatron-core")[-2] == (
        "true labels no longer reported: megatron-core-00"
    )
