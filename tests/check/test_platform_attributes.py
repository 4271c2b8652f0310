"""A platform probe the constructor stores on the object (`self.is_npu = is_npu()`, `self.use_aiter
= get_bool_env(...) and _is_hip`) holds the probe's value on the analysed platforms wherever
nothing reassigns it after construction: `if self.is_npu and ...:` is not walked on CUDA. An
attribute a method sets again, one a subclass's constructor sets otherwise, a tensor's own
`is_cpu`, and an `or` whose probe leaves the other side to decide stay feasible."""

from __future__ import annotations

from pathlib import Path

import pytest

from rankguard.rules.blocking_before_collective import BlockingBeforeCollective
from tests.check.helpers import HEAD, check_files, marked_lines

LOOP = (
    HEAD
    + """\
from platforms import get_bool_env, is_cuda, is_hip, is_npu

_is_hip = is_hip()


class Base:
    def __init__(self, batch, flag: bool):
        self.is_npu = is_npu()
        self.use_aiter = get_bool_env("AITER") and _is_hip
        self.npu_or_flag = is_npu() or flag  # on CUDA: `flag` decides
        self.fast = is_cuda() and flag  # on CUDA `flag` decides; elsewhere falsy
        self.is_cpu = batch.is_cpu  # where one tensor lives
        self.on_hip = _is_hip  # `switch` sets it again
        self.hip_kernels = _is_hip  # `Other`'s constructor sets it otherwise

    def switch(self):
        self.on_hip = True

    def step(self):
        if self.hip_kernels:
            time.sleep(1)  # expect
        if self.is_npu:
            torch.cuda.synchronize()  # {npu}


class S(Base):
    def event_loop_normal(self):
        while True:
            if self.is_npu and self.ready:
                time.sleep(1)  # {npu}
            if self.use_aiter:
                open("x")  # {rocm}
            if not self.is_npu:
                gc.collect()  # {cuda}
            if self.npu_or_flag:
                threading.Event().wait()  # expect
            if self.fast:
                subprocess.run("x")  # {cuda}
            if self.is_cpu:
                time.sleep(2)  # expect
            if self.on_hip:
                time.sleep(3)  # expect
            self.step()
            dist.barrier()


class Other(S):
    def __init__(self, batch, flag: bool):
        super().__init__(batch, flag)
        self.hip_kernels = flag
"""
)
PLATFORMS = """\
def is_npu() -> bool:
    return False


def is_hip() -> bool:
    return False


def is_cuda() -> bool:
    return True


def get_bool_env(name: str) -> bool:
    return False
"""


@pytest.mark.parametrize(
    ("settings", "marks"),
    [
        ({}, {"npu": "not on cuda", "rocm": "not on cuda", "cuda": "expect"}),
        ({"platforms": ["npu"]}, {"npu": "expect", "rocm": "not on npu", "cuda": "not on npu"}),
        ({"platforms": ["*"]}, {"npu": "expect", "rocm": "expect", "cuda": "expect"}),
    ],
)
def test_a_probe_the_constructor_stores_decides_its_branches(tmp_path: Path, settings, marks):
    files = {"mod.py": LOOP.format(**marks), "platforms.py": PLATFORMS}
    result = check_files(
        tmp_path, files, [BlockingBeforeCollective], {"rounds": ["*.event_loop_*"], **settings}
    )
    got = {(f.path, f.line) for f in result.findings}
    want = {(path, line) for path, code in files.items() for line in marked_lines(code)}
    assert got == want


@pytest.mark.parametrize(
    "write",
    [
        "setattr(self, 'is_npu', flag)",  # names the attribute: stores what `flag` holds
        "for key, value in batch.items():\n            setattr(self, key, value)",  # any name
        "self.__dict__.update(batch)",  # any name
    ],
)
def test_a_probe_the_constructor_may_overwrite_by_name_decides_nothing(tmp_path: Path, write):
    """After `self.is_npu = is_npu()` the constructor may store anything there through
    `setattr` or `__dict__`: `if self.is_npu` stays walked on CUDA."""
    code = HEAD + (
        "from platforms import is_npu\n\n\n"
        "class S:\n"
        "    def __init__(self, batch, flag):\n"
        "        self.is_npu = is_npu()\n"
        f"        {write}\n\n"
        "    def event_loop_normal(self):\n"
        "        while True:\n"
        "            if self.is_npu:\n"
        "                time.sleep(1)  # expect\n"
        "            dist.barrier()\n"
    )
    files = {"mod.py": code, "platforms.py": PLATFORMS}
    result = check_files(
        tmp_path, files, [BlockingBeforeCollective], {"rounds": ["*.event_loop_*"]}
    )
    assert {f.line for f in result.findings} == set(marked_lines(code))
