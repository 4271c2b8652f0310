"""Process groups and collective wrappers (re-exported from .comm)."""

from .barrier import PollBasedBarrier
from .comm import (
    GroupCoordinator,
    broadcast_pyobj,
    get_pp_group,
    get_tp_group,
    init_model_parallel_groups,
    point_to_point_pyobj,
)

__all__ = [
    "GroupCoordinator",
    "PollBasedBarrier",
    "broadcast_pyobj",
    "get_pp_group",
    "get_tp_group",
    "init_model_parallel_groups",
    "point_to_point_pyobj",
]
