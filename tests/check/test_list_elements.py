"""Placement through lists a function builds itself: a display or a comprehension places its
elements, `append` / `insert` / `extend` / an element store add theirs, and slicing or indexing
keeps the placement. Only while every addition is in sight: a list handed to a call, aliased,
or reachable from a closure is unknown again, and an unknown placement stays a finding."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_value_facts import _marked_with_code


def test_host_tensors_collected_in_a_list_are_read_back_on_the_host(tmp_path: Path):
    """The shapes of vllm's M-RoPE positions (labels vllm-f00, vllm-f01): grid sizes read off
    on the host into a list, turned into a CPU tensor, sliced and indexed; `torch.arange`
    results collected by `append`, by a comprehension, and by rebinding in a loop."""
    _marked_with_code(
        tmp_path,
        """
        def vision_ids(index, merge, steps, grid_hs):
            grid_h = grid_hs[index] // merge
            return torch.Tensor(steps).to(grid_h.device)

        def positions(grid_thw, n, merge):
            if isinstance(grid_thw, list):
                grid_thw = torch.tensor(grid_thw)
            grid_hs = grid_thw[:, 1]
            ids = vision_ids(0, merge, [1, 2], grid_hs)
            total = grid_thw[0].prod().item()
            chunks: list[torch.Tensor] = []
            for i in range(n):
                start = 0 if len(chunks) == 0 else chunks[-1][0].item() + 1
                if i > 0:
                    chunks = (torch.arange(i).expand(3, -1) + start).split(1, dim=1)
                else:
                    chunks = []
            pieces = []
            for i in range(n):
                pieces.append(torch.arange(i))
            first = pieces[0].item()
            made = [torch.arange(i) for i in range(n)]
            m = made[0].item()
            flags = torch.zeros(n)
            flags[0] = 1  # an element stored into a tensor leaves it where it is
            f = flags.tolist()
            return ids

        def event_loop(n, merge, reqs):
            while True:
                grid = []
                for r in reqs:
                    grid.append(r.thw_cpu.tolist())
                positions(grid, n, merge)
                dist.barrier()
        """,
    )


def test_a_list_whose_additions_are_not_all_seen_stays_unknown(tmp_path: Path):
    _marked_with_code(
        tmp_path,
        """
        def fill(xs, n):
            xs.append(torch.ones(n, device="cuda"))

        def event_loop_appended(n):
            while True:
                dev = []
                dev.append(torch.ones(n, device="cuda"))
                a = dev[0].item()  # expect
                dist.barrier()

        def event_loop_mixed(n):
            while True:
                mixed = [torch.zeros(n)]
                mixed.insert(0, torch.ones(n, device="cuda"))
                b = mixed[-1].item()  # expect
                dist.barrier()

        def event_loop_filled(n):
            while True:
                filled = []
                fill(filled, n)
                c = filled[0].item()  # expect
                dist.barrier()

        def event_loop_aliased(n):
            while True:
                alias = []
                other = alias
                other.append(torch.ones(n, device="cuda"))
                d = alias[0].item()  # expect
                dist.barrier()

        def event_loop_stored(n):
            while True:
                stored = [torch.zeros(n)]
                stored[0] = torch.ones(n, device="cuda")
                e = stored[0].item()  # expect
                dist.barrier()

        def event_loop_closure(n):
            while True:
                later = []

                def add():
                    later.append(torch.ones(n, device="cuda"))

                add()
                f = later[0].item()  # expect
                dist.barrier()

        def event_loop_held(n):
            while True:
                held = []
                box = {"k": held}
                box["k"].append(torch.ones(n, device="cuda"))
                i = held[0].item()  # expect
                dist.barrier()

        def event_loop_method(n):
            while True:
                kept = []
                add = kept.append
                add(torch.ones(n, device="cuda"))
                j = kept[0].item()  # expect
                dist.barrier()

        def event_loop_iterated(n):
            while True:
                first = []
                for ys in (first, []):
                    ys.append(torch.ones(n, device="cuda"))
                k = first[0].item()  # expect
                dist.barrier()

        def event_loop_shown(n, reqs):
            while True:
                shown = [t.cuda() for t in reqs]
                g = shown[0].item()  # expect
                dist.barrier()

        def event_loop_unknown(reqs):
            while True:
                unknown = [r.value for r in reqs]
                h = unknown[0].item()  # expect
                dist.barrier()
        """,
    )
