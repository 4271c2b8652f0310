"""The model change this issue needed: `List[T]`-annotated containers yield `T` when iterated
or subscripted (attributes and parameters), so `for w in works: w.wait()` resolves."""

from __future__ import annotations

from rankguard.core.config import Config


def test_loop_over_annotated_attribute_and_parameter(program_of):
    program = program_of(
        {
            "m.py": """
            from dataclasses import dataclass
            from typing import List, Optional
            import torch
            import torch.distributed as dist

            @dataclass
            class P2PWork:
                work: Optional[torch.distributed.Work]

            class S:
                def loop(self):
                    self._works: List[dist.Work] = []
                    for w in self._works:
                        w.wait()
                    first = self._works[0]
                    self._works[0].wait()

            def drain(work: List[P2PWork], n: int):
                for p in work:
                    p.work.wait()
            """
        },
        Config(),
    )
    names = {
        qual: sorted({t.name for r in program.calls[qual] for t in r.targets})
        for qual in ("m.S.loop", "m.drain")
    }
    assert names["m.S.loop"] == ["torch.distributed.Work().wait"]
    assert names["m.drain"] == ["torch.distributed.Work().wait"]


def test_the_container_itself_is_not_an_element(program_of):
    program = program_of(
        {
            "m.py": """
            from typing import List
            import torch.distributed as dist

            class S:
                def loop(self):
                    self._works: List[dist.Work] = []
                    self._works.wait()
            """
        },
        Config(),
    )
    # the list's own (missing) `wait` (the value `[]` says it is a list), not an element's
    assert [[t.name for t in r.targets] for r in program.calls["m.S.loop"]] == [
        ["<builtin>.list().wait"]
    ]
