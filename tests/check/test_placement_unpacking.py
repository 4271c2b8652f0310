"""Placement the model read nowhere before: a `for` that unpacks `enumerate(x)` or `zip(a, b)`
gives each target an element of the iterable it pairs with; a tensor function of a tensor
library other than PyTorch's own (`einops.reduce(x, ...)`) keeps its operand's placement; and
what a caller knows of an argument's attributes (`assert result.ids.is_cpu`) holds for the
parameter it fills. Where the pairing is not sure (a starred argument, a nested target that
does not match), or the caller knows nothing, the value stays unknown: still a finding."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_value_facts import _marked_with_code


def test_a_loop_unpacking_enumerate_or_zip_pairs_each_target_with_its_iterable(tmp_path: Path):
    _marked_with_code(
        tmp_path,
        """
        def event_loop(n, others, row):
            while True:
                host = torch.zeros(n)
                dev = torch.ones(n, device="cuda")
                for i, row in enumerate(host):
                    a = row.item() + i
                for row, lens in zip(host, host + 1):
                    b = row.item() + lens.item()
                for row, d in zip(host, dev):
                    c = d.item()  # expect
                dev = dev + 1  # work queued again (`analysis.drained`)
                for i, row in enumerate(dev):
                    e = row.item()  # expect
                dev = dev + 1
                for row, rest in zip(host, *others):
                    f = rest.item()  # expect
                dev = dev + 1
                for (i, row), lens in zip(enumerate(others), host):
                    g = row.item()  # expect
                    h = lens.item()
                dev = dev + 1
                dist.barrier()
        """,
    )


def test_a_tensor_library_function_keeps_its_operands_placement(tmp_path: Path):
    _marked_with_code(
        tmp_path,
        """
        import einops

        def event_loop(n, k, step):
            while True:
                per_gpu = torch.tensor([0] * n, dtype=torch.int64)
                per_node = einops.reduce(per_gpu, "(a b) -> a", b=k, reduction="sum")
                here = per_node[k]
                x = here.item()
                y = (torch.sum(per_node) - here).item()
                dev = torch.ones(n, device="cuda")
                step(dev)  # may launch work
                row = einops.rearrange(dev, "a -> a")[0]
                z = row.item()  # expect
                dist.barrier()
        """,
    )


def test_what_a_caller_knows_of_an_arguments_attributes_holds_in_the_callee(tmp_path: Path):
    code, findings = _marked_with_code(
        tmp_path,
        """
        class Result:
            def __init__(self, ids):
                self.ids = ids

        def advance(result, batch):
            return result.ids.tolist()  # expect

        def resolve(result: Result, batch):
            assert result.ids.is_cpu
            return advance(result, batch)

        def event_loop(r: Result, other: Result):
            while True:
                resolve(r, None)
                dist.barrier()
                advance(other, None)
                dist.all_reduce(None)
        """,
    )
    # Only the call whose caller knows nothing of `other.ids` makes `.tolist()` a sync.
    line = code.splitlines().index("        advance(other, None)") + 1
    assert [f.extra["chain"][0]["line"] for f in findings] == [line]


def test_a_name_bound_again_forgets_what_was_known_of_it_and_of_its_attributes(tmp_path: Path):
    _marked_with_code(
        tmp_path,
        """
        def rebind(result, other):
            assert result.ids.is_cpu
            a = result.ids.tolist()
            result = other
            return result.ids.tolist()  # expect

        def loop_rebinds(result, others):
            assert result.ids.is_cpu
            for result in others:
                b = result.ids.tolist()  # expect

        def shadowed(dev, n, step):
            x = torch.zeros(n)
            host = torch.zeros(n)
            c = [x.tolist() for i, x in enumerate(host)] + [y.item() for y, z in zip(host, dev)]
            step(dev)  # may launch work
            d = [x.tolist() for i, x in enumerate(dev)]  # expect
            step(dev)
            e = [x.tolist() for (i, x), y in zip(enumerate(dev), host)]  # expect

        def event_loop(r, o, n, step):
            while True:
                rebind(r, o)
                dist.barrier()
                loop_rebinds(r, o)
                dist.barrier()
                shadowed(torch.ones(n, device="cuda"), n, step)
                dist.barrier()
        """,
    )


def test_what_a_function_returns_on_every_path_is_placed_where_it_is_called(tmp_path: Path):
    _marked_with_code(
        tmp_path,
        """
        def traced(fn):
            return fn

        @traced
        def wrapped_ids(n):
            return torch.zeros(n)

        class Backend:
            @staticmethod
            def permutation(indices, lens_cpu):
                indices = torch.tensor(indices, dtype=torch.int32)
                rows = torch.repeat_interleave(indices, lens_cpu)
                order = torch.argsort(rows)
                return order, rows[order]

            def segments(self, weights, size):
                unique, counts = torch.unique_consecutive(weights, return_counts=True)
                out = []
                for weight, group in zip(unique, counts):
                    out.append(weight.item() + group.item() // size)
                return out

            def maybe(self, n, flag):
                if flag:
                    return torch.zeros(n)
                return torch.ones(n, device="cuda")

            def prepare(self, indices, lens, n, step):
                order, weights = Backend.permutation(indices, lens)
                a = self.segments(weights, 4)
                b = order.tolist()
                c = self.maybe(n, n > 2).tolist()  # expect
                step(n)  # may launch work
                d, e = self.maybe(n, True), 0
                f = d.tolist()  # expect
                step(n)
                values, at = torch.sort(torch.ones(n, device="cuda"))
                g = at.tolist()  # expect
                step(n)
                h = wrapped_ids(n)  # a decorator may hand back another value
                i = h.tolist()  # expect

        def event_loop(b: Backend, indices, lens, n, step):
            while True:
                b.prepare(indices, lens, n, step)
                dist.barrier()
        """,
    )


def test_every_pass_of_a_loop_binds_its_target_afresh(tmp_path: Path):
    _marked_with_code(
        tmp_path,
        """
        def event_loop(n, step):
            while True:
                host = torch.zeros(n)
                dev = torch.ones(n, device="cuda")
                for row in host:
                    row = row.item()
                    step(n)  # may launch work
                for weight, count in zip(host, host):
                    count = count.item()
                    step(count)
                for row in dev:
                    row = row.item()  # expect
                    step(n)
                dist.barrier()
        """,
    )
