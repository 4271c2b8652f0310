"""A helper handed a callable returns, at each call site, what the callable handed there returns.

`_io(keys, op)` runs `op(key)` per key; the read path hands it the read, the write path the
write. Taken context-insensitively, `op(...)` returns what either returns, so what the read
path answers would follow what decided the write (here, this rank's own clock).
"""

from __future__ import annotations

from tests.uniformity.programs import lines, run

STORE = (
    "class Store:\n"
    "    def _read(self, key):\n"
    "        return key in self.index\n\n"
    "    def _write(self, key):\n"
    "        return time.monotonic() < self.deadline\n\n"
    "    def _io(self, keys, op):\n"
    "        return [op(key) for key in keys]\n\n"
    "    def get(self, keys):\n"
    "        return self._io(keys, self._read)\n\n"
    "    def put(self, keys):\n"
    "        return self._io(keys, self._write)\n\n"
    "    def apply(self, keys, op):\n"
    "        return self._io(keys, op)\n\n"
)


def _round(test: str) -> str:
    return STORE + (
        "class S:\n"
        "    def __init__(self):\n"
        "        self.store = Store()\n\n"
        "    def event_loop(self):\n"
        "        while True:\n"
        "            reqs = self.recv()\n"
        f"            if {test}:\n"
        "                dist.barrier()\n\n"
        "    def recv(self):\n"
        "        box = [None]\n"
        "        dist.broadcast_object_list(box, src=0)\n"
        "        return box[0]\n"
    )


def test_the_read_path_answers_what_the_read_returns(program_of) -> None:
    assert run(program_of, _round("any(self.store.get(reqs))")) == []


def test_the_write_path_answers_what_the_write_returns(program_of) -> None:
    code = _round("any(self.store.put(reqs))")
    found = run(program_of, code)
    assert lines(found) == [code[: code.index("        dist.barrier()")].count("\n") + 1]
    assert found[0].sources[0][0].kind == "time"


def test_a_callable_passed_on_unnamed_answers_whatever_can_be_handed(program_of) -> None:
    # `apply` hands `_io` its own parameter: which function that is, this call does not say.
    code = _round("any(self.store.apply(reqs, self.store._write))")
    assert len(run(program_of, code)) == 1
