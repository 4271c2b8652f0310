"""Work handles kept in containers are still Work handles: iterating what
`batch_isend_irecv` returns, a list they are appended to, a dict they are stored in (read back
by `.values()`, `.pop(k)`, `.get(k)` or `[k]`), a container a helper returns (alone or in a
tuple it returns), or one built by `extend`/`update`. Each `.wait()` is a work-wait."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_blocking import _assert_marked


def test_work_handles_through_containers(tmp_path: Path):
    findings = _assert_marked(
        tmp_path,
        """
        def batched(ops):
            reqs = dist.batch_isend_irecv(ops) if ops else []
            return reqs

        def single(t):
            reqs = {}
            reqs["send"] = dist.isend(t, 1)
            return reqs

        def with_tensor(t):
            reqs = {}
            reqs["recv"] = dist.irecv(t, 1)
            return t, reqs

        def iterated(ops):
            while True:
                for req in dist.batch_isend_irecv(ops):
                    req.wait()  # expect
                dist.barrier()

        def appended(t):
            while True:
                handles = []
                handles.append(dist.isend(t, 1))
                for h in handles:
                    h.wait()  # expect
                dist.barrier()

        def stored(t):
            while True:
                reqs = {}
                reqs["a"] = dist.irecv(t, 1)
                for req in reqs.values():
                    req.wait()  # expect
                dist.barrier()

        def popped(t):
            while True:
                reqs = {}
                reqs["a"] = dist.irecv(t, 1)
                reqs.pop("a").wait()  # expect
                dist.barrier()

        def returned(t, ops, batch):
            while True:
                p2p = batched if batch else single
                got = p2p(t)
                reqs = []
                reqs.extend(got)
                for req in reqs:
                    req.wait()  # expect
                dist.barrier()

        def in_a_tuple(t):
            while True:
                _, handles = with_tensor(t)
                h = handles.pop("recv")
                h.wait()  # expect
                dist.barrier()

        def tuple_iterated(t):
            while True:
                _, handles = with_tensor(t)
                for h in handles.values():
                    h.wait()  # expect
                dist.barrier()

        def whole_tuple(t):
            while True:
                both = with_tensor(t)
                for h in both:
                    h.wait()
                dist.barrier()

        class Comm:
            def send(self, t):
                got, reqs = with_tensor(t)
                return got, reqs

        def relayed(t):
            while True:
                c = Comm()
                _, got = c.send(t)
                pending = []
                pending.append(got.pop("recv"))
                h = pending.pop(0)
                h.wait()  # expect
                dist.barrier()

        def taken_if_there(t):
            while True:
                _, got = with_tensor(t)
                h = got.pop("recv") if "recv" in got else None
                if h is not None:
                    h.wait()  # expect
                dist.barrier()

        class Bucket:
            def start(self, t):
                with dist._coalescing_manager(None, async_ops=True) as cm:
                    dist.all_reduce(t, async_op=True)
                self.handle = cm

            def finish(self):
                self.handle.wait()  # expect

        def coalesced(t):
            b = Bucket()
            while True:
                b.start(t)
                b.finish()
                dist.broadcast(t, 0)

        def not_a_handle(t):
            while True:
                names = []
                names.append("a")
                for n in names:
                    n.wait()
                dist.barrier()
        """,
    )
    assert all("work-wait" in f.message for f in findings)


def test_an_element_keeps_what_an_untyped_receiver_had(tmp_path: Path):
    """Typing an element must not lose what was found without a type: a project method of a
    library value's element is still followed (the unique-name fallback), and an element of
    a builtin container read with `.get(k)` or of a returned library value read with `[k]` is
    still matched by its method's name."""
    findings = _assert_marked(
        tmp_path,
        """
        import pickle

        class Item:
            def process_one(self):
                torch.cuda.synchronize()  # expect

        class Loader:
            def unload(self, k):
                pending = getattr(self, "events", {})
                event = pending.get(k)
                if event is not None:
                    event.synchronize()  # expect

        def deserialized(x):
            return pickle.loads(x)

        def subscripted(x, k):
            while True:
                data = deserialized(x)
                tensors = data
                t = tensors[k].detach().cpu()  # expect
                dist.barrier()

        def library_elements(data):
            while True:
                for item in pickle.loads(data):
                    item.process_one()
                dist.barrier()

        def builtin_elements(loader: Loader, k):
            while True:
                loader.unload(k)
                dist.barrier()
        """,
    )
    assert sorted(f.extra["confidence"] for f in findings) == ["high", "low", "low"]
