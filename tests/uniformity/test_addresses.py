"""An address says where a buffer is, not what it holds (issue #18, "data, not placement").

A host buffer sized from this rank's own free memory differs in size between ranks, and so may
where it lives; what is read into it, and what a store answers when asked to fill it at that
address, do not follow from either. Only the size is this rank's own.
"""

from __future__ import annotations

from tests.uniformity.programs import lines, run

# A buffer sized from free host memory through an allocator the program picks at run time (a
# table lookup: its callee cannot be named), and a store outside the program that fills pages
# at the addresses it is given and answers how many it found.
POOL = (
    "import psutil\n\n"
    "ALLOC = {'cpu': torch.empty}\n\n"
    "class Pool:\n"
    "    def __init__(self, store):\n"
    "        size = psutil.virtual_memory().available // 2\n"
    "        self.raw = ALLOC['cpu']((size,), dtype=torch.uint8)\n"
    "        self.store = store\n\n"
    "    def page_ptrs(self, pages):\n"
    "        base = self.raw.data_ptr()\n"
    "        return [base + page * 4096 for page in pages]\n\n"
    "    def load(self, keys, pages):\n"
    "        hits = self.store.batch_get_into(keys, self.page_ptrs(pages))\n"
    "        return sum(1 for h in hits if h > 0)\n\n"
)


def test_a_buffer_address_does_not_carry_the_size_it_was_allocated_with(program_of) -> None:
    code = POOL + (
        "class S:\n"
        "    def __init__(self, store):\n"
        "        self.pool = Pool(store)\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            reqs = self.recv()\n"
        "            if self.pool.load(reqs, [0, 1]) > 0:\n"
        "                dist.barrier()\n"
        "            if id(self.pool.raw) in self.seen:\n"
        "                dist.barrier()\n"
        "            if self.pool.raw.numel() > 1024:\n"
        "                dist.barrier()  # varies: the size is this rank's free memory\n\n"
        "    def recv(self):\n"
        "        box = [None]\n"
        "        dist.broadcast_object_list(box, src=0)\n"
        "        return box[0]\n"
    )
    found = run(program_of, code)
    assert lines(found) == [code[: code.index("# varies")].count("\n") + 1]
    assert found[0].sources[0][0].text == "psutil.virtual_memory()"
