"""Fault 1: suppressing the earlier sync (the head) silently drops its followers.

`out.lengths.tolist()` is suppressed inline because the author knows `lengths` lives on the
host. Exactly there the follower `other.ids.tolist()` waits by itself (README: a follower
"waits in that one's place ... where the first read the host"), but it was folded into the
head's `followers`, and the head is then removed by the suppression: nothing is reported and
`check` exits 0. At 84adc74 `other.ids.tolist()` was reported (low) and exit code was 1."""

from __future__ import annotations

import json
from pathlib import Path

from tests.check.test_blocking import _assert_marked
from tests.check.test_cli_check import _run as _cli
from tests.check.test_cli_check import _tree

BODY = """
class Out:
    lengths: torch.Tensor
    ids: torch.Tensor

def commit(out: Out, other: Out):
    lens = out.lengths.tolist()  # rankguard: ignore[blocking-before-collective] on the host
    ids = other.ids.tolist()  # expect

def loop(out: Out, other: Out):
    while True:
        commit(out, other)
        dist.barrier()
"""


def test_a_suppressed_heads_follower_is_still_reported(tmp_path: Path):
    _assert_marked(tmp_path, BODY, {"rounds": ["mod.loop"]})


PROGRAM = """
import torch
import torch.distributed as dist


class Out:
    lengths: torch.Tensor
    ids: torch.Tensor


def event_loop(out: Out, other: Out):
    while True:
        lengths = out.lengths.tolist()  # rankguard: ignore[RG101] lengths live on the host
        ids = other.ids.tolist()
        dist.barrier()
"""


def test_check_exits_1_when_only_the_follower_waits(capsys, tmp_path: Path):
    root = _tree(tmp_path, PROGRAM)
    code, out, _ = _cli(capsys, "check", str(root), "--format", "json", "--no-cache")
    texts = [f["blocking"]["text"] for f in json.loads(out)["findings"]]
    assert code == 1 and texts == ["other.ids.tolist()"], (code, texts)
