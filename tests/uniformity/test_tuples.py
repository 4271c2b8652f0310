"""A tuple's items keep their own values (issue #18): a state saved as a tuple and restored
into the same fields puts each field's own value back, not every field's.

sglang's late-layer DP switch saves a batch's counts with `saved = (fb.count, ..., fb.local)`,
returns `saved`, and a later `exit(fb, saved)` restores them with `(fb.count, ..., fb.local) =
saved`; taken whole, the rank-local field tainted every count the batch's gathers are sized by.
"""

from __future__ import annotations

from tests.uniformity.programs import lines, run

BATCH = (
    "def get_tp_group():\n    return _TP\n\n"
    "class Batch:\n"
    "    def __init__(self):\n"
    "        self.count = 0\n"
    "        self.local = 0\n\n"
)


# Restores a saved pair into the fields, then starts a round over a fresh batch `fb`.
LEAVE = (
    "def leave(fb: Batch, saved):\n"
    "    (fb.count, fb.local) = saved\n\n"
    "class S:\n"
    "    def event_loop(self):\n"
    "        while True:\n"
    "            fb = Batch()\n"
)


def _save_restore(test: str) -> str:
    return BATCH + (
        "def enter(fb: Batch, counts):\n"
        "    saved = (fb.count, fb.local)\n"
        "    fb.count = counts\n"
        "    fb.local = get_attention_tp_rank()\n"
        "    return saved\n\n"
        f"{LEAVE}"
        "            saved = enter(fb, 3)\n"
        "            leave(fb, saved)\n"
        f"            if {test}:\n"
        "                dist.barrier(group=get_tp_group().cpu_group)\n"
    )


def test_a_restored_field_takes_back_its_own_saved_value(program_of) -> None:
    assert run(program_of, _save_restore("fb.count > 1")) == []


def test_the_rank_local_field_restored_beside_it_still_varies(program_of) -> None:
    code = _save_restore("fb.local > 1")
    assert lines(run(program_of, code)) == [code.count("\n")]


def test_a_tuple_saved_on_one_path_of_a_loop_is_restored_item_by_item(program_of) -> None:
    """`saved = None`, saved on one pass, restored after the loop if it was (sglang's layer
    loop): `None` holds no items, so the join keeps the tuple's."""
    code = _save_restore("fb.count > 1").replace(
        "            saved = enter(fb, 3)\n            leave(fb, saved)\n",
        "            saved = None\n"
        "            for i in range(4):\n"
        "                if i == 2:\n"
        "                    saved = enter(fb, 3)\n"
        "            if saved is not None:\n"
        "                leave(fb, saved)\n",
    )
    assert "saved = None" in code
    assert run(program_of, code) == []
    code = code.replace("fb.count > 1", "fb.local > 1")
    assert lines(run(program_of, code)) == [code.count("\n")]


def _local(unpack: str, test: str) -> str:
    return BATCH + (
        "class S:\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            pair = (3, get_attention_tp_rank())\n"
        f"            {unpack}\n"
        f"            if {test}:\n"
        "                dist.barrier(group=get_tp_group().cpu_group)\n"
    )


def test_unpacking_a_local_tuple_goes_item_by_item(program_of) -> None:
    assert run(program_of, _local("count, local = pair", "count > 1")) == []
    code = _local("count, local = pair", "local > 1")
    assert lines(run(program_of, code)) == [code.count("\n")]


def test_a_starred_target_of_a_longer_tuple_takes_the_whole(program_of) -> None:
    """`first, *rest = (3, 4, rank)`: `rest` holds the rank (items past the targets)."""
    code = _local("first, *rest = (3, 4, get_attention_tp_rank())", "rest[-1] > 1")
    assert lines(run(program_of, code)) == [code.count("\n")]


def test_a_tuple_rebound_forgets_its_old_items(program_of) -> None:
    code = _local(
        "pair = (get_attention_tp_rank(), 3)\n            count, local = pair", "local > 1"
    )
    assert run(program_of, code) == []
    code = _local("pair = [get_attention_tp_rank()]\n            count, local = pair", "count > 1")
    assert lines(run(program_of, code)) == [code.count("\n")]


def _unpacked(helper: str, call: str, more: str = "") -> str:
    """A round that unpacks `count, local = <call>` and gates a TP barrier on `count`."""
    return (
        BATCH
        + helper
        + (
            "class S:\n"
            "    def event_loop(self):\n"
            "        while True:\n"
            f"            count, local = {call}\n"
            "            if count > 1:\n"
            "                dist.barrier(group=get_tp_group().cpu_group)\n"
        )
        + more
    )


def test_a_helper_returning_a_tuple_gives_each_item_its_own_value(program_of) -> None:
    code = _unpacked(
        "def make():\n    pair = (3, get_attention_tp_rank())\n    return pair\n\n",
        "make()",
        "            if local > 1:\n                dist.barrier(group=get_tp_group().cpu_group)\n",
    )
    assert lines(run(program_of, code)) == [code.count("\n")]


# A helper that returns a tuple on one path and something else on another, or a parameter one
# caller passes a tuple and another a value built elsewhere, is taken whole.
def test_a_helper_returning_a_tuple_on_one_path_only_is_taken_whole(program_of) -> None:
    code = _unpacked(
        "def make(flag):\n"
        "    if flag:\n"
        "        return (3, get_attention_tp_rank())\n"
        "    return other()\n\n",
        "make(self.flag)",
    )
    assert lines(run(program_of, code)) == [code.count("\n")]


def test_a_parameter_some_caller_passes_whole_is_unpacked_whole(program_of) -> None:
    code = BATCH + (
        f"{LEAVE}"
        "            leave(fb, (3, 4))\n"
        "            leave(fb, self.pending)\n"
        "            if fb.count > 1:\n"
        "                dist.barrier(group=get_tp_group().cpu_group)\n\n"
        "    def feed(self):\n"
        "        self.pending = [get_attention_tp_rank()]\n"
    )
    assert lines(run(program_of, code)) == [code.count("\n") - 3]


def test_a_tuple_kept_past_a_group_size_test(program_of) -> None:
    """`if get_tp_world_size() > 1:` views the locals on its other side as agreed (a group of
    one): the tuple's items go with them, and what counts them stays a count."""
    code = _local(
        "if get_tp_world_size() > 1:\n"
        "                pair = (4, get_attention_tp_rank())\n"
        "            count, local = pair",
        "count > 1",
    )
    assert run(program_of, "def get_tp_world_size():\n    return 2\n\n" + code) == []


def test_a_conditional_of_tuples_gives_each_item_its_own_value(program_of) -> None:
    # `(1, 0) if g is None else (g.size, rank)`: whichever side runs, the first item is a size;
    # which side runs, only whether the group exists decides.
    code = _unpacked(
        "def size_rank(group):\n"
        "    return (1, 0) if group is None else (group.size, get_attention_tp_rank())\n\n",
        "size_rank(self.group)",
        "            if local > 1:\n                dist.barrier(group=get_tp_group().cpu_group)\n",
    )
    assert lines(run(program_of, code)) == [code.count("\n")]


def _concatenated(test: str) -> str:
    """sglang's late-layer switch builds its saved state in two parts: `saved = (fb.count,)`
    then `saved = saved + (fb.local,)`; `+` of two tuples is their items, in order."""
    return _save_restore(test).replace(
        "    saved = (fb.count, fb.local)\n",
        "    saved = (fb.count,)\n    saved = saved + (fb.local,)\n",
    )


def test_a_concatenated_tuple_keeps_each_item_its_own_value(program_of) -> None:
    code = _concatenated("fb.count > 1")
    assert "saved + (fb.local,)" in code
    assert run(program_of, code) == []


def test_the_rank_local_item_of_a_concatenated_tuple_still_varies(program_of) -> None:
    code = _concatenated("fb.local > 1")
    assert lines(run(program_of, code)) == [code.count("\n")]


def test_a_tuple_plus_what_is_not_a_known_tuple_is_taken_whole(program_of) -> None:
    """`saved + extra` with `extra` a parameter: its length is not known, so nor are the
    items' places."""
    code = _save_restore("fb.count > 1").replace(
        "def enter(fb: Batch, counts):\n    saved = (fb.count, fb.local)\n",
        "def enter(fb: Batch, counts, extra=()):\n    saved = (fb.count,) + extra\n",
    )
    code = code.replace("saved = enter(fb, 3)", "saved = enter(fb, 3, (get_attention_tp_rank(),))")
    assert lines(run(program_of, code)) == [code.count("\n")]


def _kept_on_self(test: str, other_store: str = "") -> str:
    """sglang's graph runner keeps the saved tuple on itself between two eager breaks:
    `self.saved = enter(fb)` ... `saved = self.saved; self.saved = None; leave(fb, saved)`."""
    return BATCH + (
        "def enter(fb: Batch, counts):\n"
        "    saved = (fb.count, fb.local)\n"
        "    fb.count = counts\n"
        "    fb.local = get_attention_tp_rank()\n"
        "    return saved\n\n"
        "def leave(fb: Batch, saved):\n"
        "    (fb.count, fb.local) = saved\n\n"
        "class S:\n"
        "    def __init__(self):\n"
        "        self.saved = None\n\n"
        "    def open(self, fb: Batch):\n"
        "        self.saved = enter(fb, 3)\n\n"
        "    def close(self, fb: Batch):\n"
        "        saved = self.saved\n"
        "        self.saved = None\n"
        "        leave(fb, saved)\n\n"
        f"{other_store}"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            fb = Batch()\n"
        "            self.open(fb)\n"
        "            self.close(fb)\n"
        f"            if {test}:\n"
        "                dist.barrier(group=get_tp_group().cpu_group)\n"
    )


def test_a_tuple_kept_on_an_attribute_keeps_each_item_its_own_value(program_of) -> None:
    assert run(program_of, _kept_on_self("fb.count > 1")) == []


def test_the_rank_local_item_kept_on_an_attribute_still_varies(program_of) -> None:
    code = _kept_on_self("fb.local > 1")
    assert lines(run(program_of, code)) == [code.count("\n")]


def test_an_attribute_some_store_sets_whole_is_unpacked_whole(program_of) -> None:
    """Another store puts a value whose items are not known: every place may hold it."""
    code = _kept_on_self(
        "fb.count > 1",
        "    def reset(self):\n        self.saved = [get_attention_tp_rank()] * 2\n\n",
    )
    assert lines(run(program_of, code)) == [code.count("\n")]
