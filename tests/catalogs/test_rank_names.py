"""The rank-source catalog pairs a group size with the rank id of the same dimension."""

from __future__ import annotations

import pytest

from rankguard.catalogs.rank_sources import rank_source_catalog


@pytest.mark.parametrize(
    ("size", "rank"),
    [
        ("world_size", "rank"),
        ("pp_size", "pp_rank"),
        ("attn_tp_size", "attn_tp_rank"),
        ("get_tensor_model_parallel_world_size", "get_tensor_model_parallel_rank"),
        ("page_size", None),  # not a dimension
        ("pp_rank", None),
    ],
)
def test_the_rank_beside_a_size(size: str, rank: str | None):
    assert rank_source_catalog().rank_beside(size) == rank
