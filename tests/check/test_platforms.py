"""Code that only another hardware platform runs is not walked: branches on platform predicates
(`is_npu()`, a module flag `_is_hip`, `current_platform.is_rocm()`) and modules named for a
platform (`backends/npu/...`). Config `platforms` says which hardware the deployment runs on
(default CUDA; `*` walks every platform)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rankguard.core.errors import InputError
from rankguard.rules.blocking_before_collective import BlockingBeforeCollective
from tests.check.helpers import HEAD, check_files, marked_lines

LOOP = (
    HEAD
    + """\
from platforms import current_platform, is_hip, is_npu
from backends.npu.worker import NpuWorker
from backends.cuda_worker import CudaWorker

_is_hip = is_hip()


class S:
    def __init__(self, npu: bool):
        if npu:
            self.worker = NpuWorker()
        else:
            self.worker = CudaWorker()

    def event_loop_normal(self):
        while True:
            if is_npu():
                time.sleep(1)  # {npu}
            if not _is_hip:
                open("x")  # expect
            if current_platform.is_rocm() and self.worker:
                gc.collect()  # {rocm}
            if is_hip():
                pass
            else:  # runs on CUDA: on ["cuda", "rocm"] `is_hip()` decides nothing
                threading.Event().wait()  # expect
            if self.batch.is_cpu:  # where one tensor lives: no platform predicate
                time.sleep(1)  # expect
            self.worker.step()
            dist.barrier()
"""
)
NPU_WORKER = """\
import torch


class NpuWorker:
    def step(self):
        torch.cuda.synchronize()  # {npu}
"""
CUDA_WORKER = """\
import torch


class CudaWorker:
    def step(self):
        torch.cuda.current_stream().synchronize()  # expect
"""
PLATFORMS = """\
def is_npu() -> bool:
    return False


def is_hip() -> bool:
    return False


class Platform:
    def is_rocm(self) -> bool:
        return False


current_platform = Platform()
"""


def _findings(tmp_path: Path, settings: dict, marks: dict[str, str]) -> tuple[set, set]:
    files = {
        "mod.py": LOOP.format(**marks),
        "backends/npu/worker.py": NPU_WORKER.format(**marks),
        "backends/cuda_worker.py": CUDA_WORKER,
        "platforms.py": PLATFORMS,
    }
    result = check_files(
        tmp_path, files, [BlockingBeforeCollective], {"rounds": ["*.event_loop_*"], **settings}
    )
    got = {(f.path, f.line) for f in result.findings}
    want = {(path, line) for path, code in files.items() for line in marked_lines(code)}
    return got, want


@pytest.mark.parametrize(
    ("settings", "marks"),
    [
        ({}, {"npu": "not on cuda", "rocm": "not on cuda"}),
        ({"platforms": ["cuda"]}, {"npu": "not on cuda", "rocm": "not on cuda"}),
        ({"platforms": ["npu"]}, {"npu": "expect", "rocm": "not on npu"}),
        ({"platforms": ["*"]}, {"npu": "expect", "rocm": "expect"}),
        # Two platforms: `is_rocm()` decides nothing, `is_npu()` is still false.
        ({"platforms": ["cuda", "rocm"]}, {"npu": "not on either", "rocm": "expect"}),
    ],
)
def test_only_the_selected_platforms_code_is_walked(tmp_path: Path, settings, marks):
    got, want = _findings(tmp_path, settings, marks)
    assert got == want


def test_an_unknown_platform_is_named(tmp_path: Path):
    with pytest.raises(InputError, match="'tpuu', not a known platform"):
        _findings(tmp_path, {"platforms": ["tpuu"]}, {"npu": "", "rocm": ""})
