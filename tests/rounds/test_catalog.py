"""The shipped collective catalog knows the collectives beyond `torch.distributed`'s classic
API: functional collectives, `torch.distributed.nn.functional`, DTensor redistribution,
DeviceMesh and group creation."""

from __future__ import annotations

from rankguard.analysis.rounds import find_rounds
from rankguard.catalogs.catalog import collective_catalog

CODE = """
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.distributed.nn.functional as dnn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor


class S:
    def event_loop(self, t: DTensor):
        while True:
            x = funcol.all_reduce(t, "sum", self.group)
            y = funcol.wait_tensor(x)
            z = dnn.all_gather(y)
            full = t.full_tensor()
            moved = t.redistribute(self.mesh, self.placements)
            mesh = init_device_mesh("cuda", (2,))
            group = dist.new_group([0, 1])
            dist.monitored_barrier()
"""


def test_functional_dtensor_mesh_and_group_collectives(program_of):
    program = program_of({"m.py": CODE})
    rnd = find_rounds(program, ("*.event_loop",), collective_catalog())[0]
    assert [c.site.callee for c in rnd.collectives] == [
        "torch.distributed._functional_collectives.all_reduce",
        "torch.distributed._functional_collectives.wait_tensor",
        "torch.distributed.nn.functional.all_gather",
        "torch.distributed.tensor.DTensor().full_tensor",
        "torch.distributed.tensor.DTensor().redistribute",
        "torch.distributed.device_mesh.init_device_mesh",
        "torch.distributed.new_group",
        "torch.distributed.monitored_barrier",
    ]
