"""A device sync waits for the work queued before it. Once a path has synced, a second sync
with nothing launched in between finds the queue empty: it is not a straggler of its own, and
the first one is the finding. Anything else called in between may launch work."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_blocking import _assert_marked


def test_a_sync_right_after_a_sync_does_not_wait(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        def forward(x):
            return x * 2

        def commit(n):
            a = torch.ones(n, device="cuda")
            b = torch.zeros(n, device="cuda")
            c = torch.ones(n, device="cuda")
            la = a.tolist()  # expect
            lb = b.tolist()
            if len(la) > 1:
                cb = c.cpu()
            print(la, lb)
            again = c.tolist()
            y = forward(c)
            later = y.tolist()  # expect

        def loop(n):
            while True:
                commit(n)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )


def test_a_path_that_did_not_sync_keeps_the_next_sync(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        def commit(n, leak):
            a = torch.ones(n, device="cuda")
            b = torch.zeros(n, device="cuda")
            if leak:
                first = a.tolist()  # expect
            second = b.tolist()  # expect

        def loop(n, leak):
            while True:
                commit(n, leak)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )


def test_an_operator_queues_work_after_a_sync(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        def commit(n):
            a = torch.ones(n, device="cuda")
            b = torch.zeros(n, device="cuda")
            la = a.tolist()  # expect
            c = a @ b
            lc = c.tolist()  # expect
            ld = (a * b).tolist()  # expect

        def loop(n):
            while True:
                commit(n)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )


def test_a_sync_drains_what_lives_with_its_tensor(tmp_path: Path):
    """Where the model cannot place a tensor, a sync on it still drains the queue for the
    tensors of the same object: on a device the first one waited, on the host none does.
    Another object's tensor may live elsewhere (and `self` holds tensors of every kind): its
    sync, with nothing launched since, is the first one's follower, not a wait of its own."""
    findings = _assert_marked(
        tmp_path,
        """
        class Processor:
            def commit(self, out, other):
                lengths = out.lengths.tolist()  # expect
                statuses = out.statuses.tolist()
                rows = [None] * len(lengths)
                ids = out.token_ids.cpu().numpy()
                peak = int(out.counts.max().item())
                total = out.counts.sum().item()
                theirs = other.lengths.tolist()
                mine = self.lengths.tolist()
                again = self.lengths.tolist()
                yours = self.statuses.tolist()

        def loop(p, out, other):
            while True:
                p.commit(out, other)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )
    followers = [f["text"] for f in findings[0].extra["followers"]]
    assert followers == [
        "other.lengths.tolist()",
        "self.lengths.tolist()",
        "self.statuses.tolist()",
    ]


def test_work_launched_after_a_sync_of_unknown_placement_waits(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        def forward(x):
            return x * 2

        def commit(out, n):
            lengths = out.lengths.tolist()  # expect
            y = out.hidden @ out.weight
            statuses = out.statuses.tolist()  # expect
            forward(out)
            more = out.more.tolist()  # expect
            k = n + 1
            last = out.last.tolist()  # expect

        def loop(out, n):
            while True:
                commit(out, n)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )


def test_helpers_and_records_that_launch_nothing_keep_the_queue_drained(tmp_path: Path):
    """Building a record, a helper that only stores and counts on the host, a container's
    method: none launches device work, so a sync after them still finds the queue empty. A
    helper that computes with an operator, or calls what the model cannot see, may launch."""
    _assert_marked(
        tmp_path,
        """
        import msgspec

        class Node(msgspec.Struct):
            token: int

        class Beam:
            def __init__(self, token, parent):
                self.token = token
                self.parent = parent

        def note(rows, value):
            rows.append(value)
            return len(rows)

        def scale(x):
            return x * 2

        def commit(n, rows):
            a = torch.ones(n, device="cuda")
            b = torch.zeros(n, device="cuda")
            la = a.tolist()  # expect
            node = Node(1)
            beam = Beam(2, None)
            note(rows, beam)
            rows.append(node)
            lb = b.tolist()
            scale(rows)
            lc = b.tolist()  # expect
            unknown.thing(rows)
            ld = b.tolist()  # expect

        def loop(n, rows):
            while True:
                commit(n, rows)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )


def test_a_builtin_read_of_an_annotated_tensor_is_a_sync(tmp_path: Path):
    # `int(sel.survivors)` reads a tensor (by the field's annotation) of unknown placement: a
    # sync, at medium confidence. A count is often kept on the host beside device data, so
    # `sel.tokens` may still wait: not drained by it, but its follower (where the count is on
    # the device the queue is empty; where it is on the host the tokens' read is the wait).
    # `int()` of what is not known to be a tensor reads nothing.
    findings = _assert_marked(
        tmp_path,
        """
        class Select:
            survivors: torch.Tensor
            tokens: torch.Tensor
            width: int

        def commit(sel: Select):
            n = int(sel.survivors)  # expect
            w = int(sel.width)
            tokens = sel.tokens[:n].tolist()

        def loop(sel: Select, flag):
            while True:
                commit(sel)
                m = int(flag)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )
    assert [f["text"] for f in findings[0].extra["followers"]] == ["sel.tokens[].tolist()"]


def test_a_helper_called_right_after_a_sure_sync_finds_the_queue_drained(tmp_path: Path):
    # `consume` runs only right after a sync with nothing launched between: its own sync
    # finds the queue empty, as does `consume_busy`'s, though what it calls later may
    # launch. `consume_computed` is handed what an operator computes on the way in, and
    # `consume_late` runs after an operator queued work: their syncs wait. Where the
    # caller's sync was of unknown placement, nothing is handed on.
    _assert_marked(
        tmp_path,
        """
        def consume(ids):
            return ids.tolist()

        def consume_busy(ids, rows):
            out = ids.tolist()
            rows.append(out)
            publish(rows)
            return out

        def consume_late(ids):
            return ids.tolist()  # expect

        def consume_computed(ids):
            return ids.tolist()  # expect

        def consume_unsure(ids):
            return ids.tolist()  # expect

        def commit(n, out):
            a = torch.ones(n, device="cuda")
            la = a.tolist()  # expect
            consume(a)
            consume_busy(a, la)
            consume_computed(a * 2)
            b = a * 2
            consume_late(b)
            lens = out.lengths.tolist()  # expect
            consume_unsure(a)

        def loop(n, out):
            while True:
                commit(n, out)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )


def test_syncs_of_unknown_placement_back_to_back_are_one_wait(tmp_path: Path):
    # Nothing is launched between `out.lengths.tolist()` and `other.ids.tolist()`: if both
    # live on the device the first waited and the second finds the queue empty, so the two
    # are one wait, reported at the first with the second as its follower (it waits in its
    # place where the first read the host, or once the first is removed). On the path that
    # skips the first sync, `other.ids.tolist()` waits by itself and is a finding of its own.
    # A sync known to be on a device keeps its own finding.
    findings = _assert_marked(
        tmp_path,
        """
        class Out:
            lengths: torch.Tensor

        class Other:
            ids: torch.Tensor

        def commit(out: Out, other: Other, n):
            lens = out.lengths.tolist()  # expect
            ids = other.ids.tolist()
            dev = torch.ones(n, device="cuda")
            more = dev.tolist()  # expect

        def skip(out: Out, other: Other, flag):
            if flag:
                lens = out.lengths.tolist()  # expect
            ids = other.ids.tolist()  # expect

        def loop(out: Out, other: Other, n, flag):
            while True:
                commit(out, other, n)
                skip(out, other, flag)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )
    by_line = {f.line: f for f in findings}
    first = min(by_line)
    assert by_line[first].extra["blocking"]["text"] == "out.lengths.tolist()"
    follower = by_line[first].extra["followers"]
    assert [f["text"] for f in follower] == ["other.ids.tolist()"]
    assert follower[0]["line"] == first + 1
    assert "other.ids.tolist()" in by_line[first].message
    assert all(not f.extra["followers"] for f in findings if f.line != first)
    levels = {f.extra["blocking"]["text"]: f.extra["confidence"] for f in findings}
    assert levels == {
        "out.lengths.tolist()": "medium",
        "dev.tolist()": "high",
        "other.ids.tolist()": "medium",
    }


def test_a_helper_called_right_after_an_unplaced_sync_holds_its_followers(tmp_path: Path):
    # `publish` runs right after `out.lengths.tolist()` with nothing launched between: its
    # reads of unknown placement are that sync's followers, as they would be written in
    # place. `publish_late` runs after an operator queued work, and `publish_busy` launches
    # before its read: their syncs wait by themselves.
    findings = _assert_marked(
        tmp_path,
        """
        class Out:
            lengths: torch.Tensor
            logprobs: torch.Tensor

        def publish(out: Out):
            return out.logprobs.tolist()

        def publish_busy(out: Out):
            y = out.logprobs @ out.logprobs
            return out.logprobs.tolist()  # expect

        def publish_late(out: Out):
            return out.logprobs.tolist()  # expect

        def commit(out: Out):
            lens = out.lengths.tolist()  # expect
            publish(out)
            publish_busy(out)
            scaled = out.lengths * 2
            publish_late(out)

        def loop(out: Out):
            while True:
                commit(out)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )
    first = next(f for f in findings if f.extra["blocking"]["text"] == "out.lengths.tolist()")
    assert [f["chain"][-1]["function"] for f in first.extra["followers"]] == ["mod.publish"]


def test_waiting_for_an_event_launches_nothing(tmp_path: Path):
    # `finalize` waits for a copy's event and reads host rows: it queues no work, so the
    # read after it is still the earlier sync's follower. `warm` launches an operator.
    findings = _assert_marked(
        tmp_path,
        """
        class Out:
            lengths: torch.Tensor
            ids: torch.Tensor

        def finalize(out):
            out.copy_done.synchronize()  # expect
            out.copy_done = None
            return len(out.rows)

        def warm(out):
            return out.ids * 2

        def commit(out: Out, other: Out):
            lens = out.lengths.tolist()  # expect
            finalize(other)
            ids = other.ids.tolist()
            warm(other)
            again = other.lengths.tolist()  # expect

        def loop(out: Out, other: Out):
            while True:
                commit(out, other)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )
    first = next(f for f in findings if f.extra["blocking"]["text"] == "out.lengths.tolist()")
    assert [f["text"] for f in first.extra["followers"]] == ["other.ids.tolist()"]


def test_reading_an_events_timing_launches_nothing(tmp_path: Path):
    # After `y.tolist()` the queue is empty; `start.elapsed_time(end)` and a `query()` read
    # what the events hold on the host, `record()` queues a marker, no kernel, and waiting for
    # an event launches nothing: the helper's sync and the later ones find nothing to wait
    # for. The event's own wait is a finding (its stream may be a side stream with work of
    # its own). A call the model cannot see into still may launch.
    _assert_marked(
        tmp_path,
        """
        def consume(ids: torch.Tensor):
            return ids.tolist()

        def step(n, start: torch.cuda.Event, end: torch.cuda.Event, other):
            start.record()
            y = torch.ones(n, device="cuda") * 2
            end.record()
            first = y.tolist()  # expect
            took = start.elapsed_time(end) / 1e3
            done = end.query()
            end.synchronize()  # expect
            consume(y)
            second = y.tolist()
            other.launch()
            again = y.tolist()  # expect

        def loop(n, start, end, other):
            while True:
                step(n, start, end, other)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )


def test_a_counter_the_program_keeps_in_a_python_number_launches_nothing(tmp_path: Path):
    # `self.finished = 0` and only `+= len(...)` after it: a Python int, whatever its name,
    # so counting between two syncs queues nothing. A count that a tensor's value ever feeds
    # (`self.total += t.sum()`) may be a device tensor, and adding to it queues a kernel.
    _assert_marked(
        tmp_path,
        """
        class Engine:
            def __init__(self):
                self.finished = 0
                self.steps = 0
                self.total = 0

            def post(self, ids: torch.Tensor, sample: torch.Tensor, t: torch.Tensor):
                torch.cuda.synchronize()  # expect
                self.finished += len(ids)
                self.steps = self.steps + 1
                first = ids.tolist()
                self.total += t.sum()
                again = sample.tolist()  # expect

            def loop(self, ids, sample, t):
                while True:
                    self.post(ids, sample, t)
                    dist.barrier()
        """,
        {"rounds": ["mod.Engine.loop"]},
    )


def test_a_counter_stored_through_a_local_is_still_a_counter(tmp_path: Path):
    # `new_len = self.committed + 1; ...; self.committed = new_len`: the local holds what the
    # counter plus one gives, a Python number too, so computing it queues nothing. A local
    # bound twice says nothing of the counter (`self.spent` may take a tensor's sum).
    _assert_marked(
        tmp_path,
        """
        class Group:
            def __init__(self):
                self.committed = 0
                self.spent = 0

            def step(self, ids: torch.Tensor, t: torch.Tensor):
                torch.cuda.synchronize()  # expect
                new_len = self.committed + 1
                first = ids.tolist()
                self.committed = new_len
                cost = self.spent + 1
                if t is not None:
                    cost = t.sum()
                self.spent = cost
                again = ids.tolist()  # expect

            def loop(self, ids, t):
                while True:
                    self.step(ids, t)
                    dist.barrier()
        """,
        {"rounds": ["mod.Group.loop"]},
    )


def test_the_standard_librarys_host_helpers_launch_nothing(tmp_path: Path):
    # `repeat(None)`, `deque()`, `math.ceil(n / 2)`, `time.monotonic()`: the standard library's
    # host helpers queue no device work between two syncs; `copy.deepcopy` of a tensor does.
    _assert_marked(
        tmp_path,
        """
        import copy
        import math
        import time
        from collections import deque
        from itertools import repeat

        def post(ids: torch.Tensor, sample: torch.Tensor, log_probs):
            torch.cuda.synchronize()  # expect
            it = log_probs if log_probs else repeat(None)
            pending = deque()
            half = math.ceil(len(pending) / 2)
            now = time.monotonic()
            first = ids.tolist()
            kept = copy.deepcopy(sample)
            again = sample.tolist()  # expect

        def loop(ids, sample, log_probs):
            while True:
                post(ids, sample, log_probs)
                dist.barrier()
        """,
        {"rounds": ["mod.loop"]},
    )


def test_numbers_and_counts_read_between_syncs_launch_nothing(tmp_path: Path):
    # A count of elements (`x.numel()`), a clock and Python numbers made with `int()`/`bool()`
    # kept on the object: host values, nothing queued between the two syncs.
    _assert_marked(
        tmp_path,
        """
        import time

        class Engine:
            def __init__(self):
                self.seen = 0
                self.last = 0.0

            def post(self, ids: torch.Tensor, sample: torch.Tensor, items):
                torch.cuda.synchronize()  # expect
                n = ids.numel()
                self.seen += int(n) + bool(items)
                self.last += time.monotonic()
                first = ids.tolist()
                again = sample.tolist()

            def loop(self, ids, sample, items):
                while True:
                    self.post(ids, sample, items)
                    dist.barrier()
        """,
        {"rounds": ["mod.Engine.loop"]},
    )
