"""The blocking walk's records are slotted: a warm `check` on sglang holds hundreds of
thousands of them (234 k `BlockingCall`, 163 k `Pair`, 87 k `Summary` after the rule), and an
instance dict cost each call 288 bytes more (`benchmarks/README`, seventh session). `copied`
is the walk's `dataclasses.replace` for them."""

from __future__ import annotations

import pickle

import pytest

from rankguard.analysis.blocking_types import BlockingCall, Pair, State, Summary, copied
from rankguard.analysis.collectives import CollectiveSite
from rankguard.core.chains import Hop

HOP = Hop("pkg.m.f", "pkg/m.py", 3, "g()")
SITE = CollectiveSite("torch.distributed.all_reduce", "collective", "pkg/m.py", 9, "pkg.m.g")
CALL = BlockingCall(
    "torch.Tensor.item", "torch.Tensor.item", "device-sync", "sync", "high", "", "x.item()",
    "pkg/m.py", 5, 8, "pkg.m.g", (HOP,),
)  # fmt: skip
RECORDS = [
    CALL,
    Pair(CALL, SITE, (HOP,)),
    Summary({SITE: (HOP,)}, {}, {CALL.key: CALL}),
    State(True, {}),
    SITE,
]


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: type(r).__name__)
def test_records_have_no_instance_dict(record: object):
    assert not hasattr(record, "__dict__")


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: type(r).__name__)
def test_records_survive_the_kept_store(record: object):
    assert pickle.loads(pickle.dumps(record)) == record


def test_copied_changes_only_the_fields_named():
    moved = copied(CALL, line=6, chain=(HOP, HOP), cadenced="every 10 rounds")
    assert moved == BlockingCall(
        "torch.Tensor.item", "torch.Tensor.item", "device-sync", "sync", "high", "", "x.item()",
        "pkg/m.py", 6, 8, "pkg.m.g", (HOP, HOP), "every 10 rounds",
    )  # fmt: skip
    assert CALL.line == 5 and CALL.chain == (HOP,)  # the original is unchanged
    assert copied(SITE, line=1) == CollectiveSite(
        SITE.callee, SITE.kind, SITE.path, 1, SITE.function
    )


def test_copied_refuses_a_field_the_record_lacks():
    with pytest.raises(TypeError, match="lines"):
        copied(CALL, lines=6)


def test_copied_records_stay_frozen():
    with pytest.raises(AttributeError):
        copied(CALL, line=6).line = 7  # type: ignore[misc]
