"""Dynamic device modules: `getattr(torch, device_type)` and `torch.get_device_module()` stand
for the device submodules (`torch.cuda` and its peers), as `fallback` edges."""

from __future__ import annotations

from pathlib import Path

from rankguard.rules.blocking_before_collective import BlockingBeforeCollective
from tests.check.helpers import check_files

CODE = """
import torch
import torch.distributed as dist


class S:
    def event_loop(self):
        device_module = getattr(torch, self.device_type)
        other = torch.get_device_module(self.device)
        while True:
            device_module.memory_stats()
            other.mem_get_info()
            dist.barrier()
"""


def test_device_module_calls_are_fallback_edges_to_device_submodules(program_of):
    program = program_of({"m.py": CODE})
    edges = {
        (callee, data["kind"], data["line"])
        for _, callee, data in program.graph.out_edges("m.S.event_loop", data=True)
    }
    assert ("torch.cuda.memory_stats", "fallback", 10) in edges
    assert ("torch.cuda.mem_get_info", "fallback", 11) in edges
    assert ("torch.xpu.memory_stats", "fallback", 10) in edges
    # The literal attribute stays exact: `getattr(torch, "cuda")` is plain `torch.cuda`.


def test_driver_queries_through_a_device_module_are_found(tmp_path: Path):
    result = check_files(tmp_path, {"m.py": CODE}, [BlockingBeforeCollective])
    assert sorted(f.line for f in result.findings) == [10, 11]
