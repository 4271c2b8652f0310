"""A lock whose every critical section only does bookkeeping is no wait: no holder keeps it
across anything slow. One any section holds across a wait, or used outside `with`, stays."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.check.test_blocking import _assert_marked

_WORKER = """
import queue
import threading


class Tracker:
    def __init__(self):
        self._done_lock = threading.Lock()
        self._cond = threading.Condition()
        self._done = set()
        self._pending = {}
        self._q = queue.Queue()

    def finish(self, k):
        with self._done_lock:
            self._done.add(k)
            self._pending.pop(k, None)
            self._q.put_nowait(k)
            n = len(self._done)
        with self._cond:
            self._cond.notify_all()

    def take(self):
        with self._done_lock:
            done, self._done = self._done, set()
        with self._cond:
            self._cond.wait(timeout=1.0)
        return done


def event_loop(tracker: Tracker):
    while True:
        tracker.take()
        dist.barrier()
"""


def test_locks_held_only_for_bookkeeping_are_not_waits(tmp_path: Path):
    _assert_marked(tmp_path, _WORKER)


@pytest.mark.parametrize(
    "holder",
    [
        # a section that does I/O while holding the lock
        "    def save(self, path):\n        with self._done_lock:\n"
        "            open(path).write('x')\n",
        # a section calling the program's own code (which may wait)
        "    def flush(self):\n        with self._done_lock:\n            self.take()\n",
        # the lock taken by hand: its sections are not all known
        "    def grab(self):\n        self._done_lock.acquire()\n",
        # the lock handed on: whoever holds it may hold it across anything
        "    def share(self):\n        return threading.Condition(self._done_lock)\n",
        # a section that spins
        "    def spin(self):\n        with self._done_lock:\n            while self._done:\n"
        "                pass\n",
        # the same lock under another name, taken elsewhere
        "    def alias(self, other):\n        self._done_lock = other._mutex\n",
        "    def grab2(self):\n        lk = getattr(self, '_done_lock')\n",
        "    def slow(self, lk=TRACKER._done_lock):\n        pass\n",
        # more runs while the lock is held than the section's statements
        "    def save(self, path):\n        with self._done_lock, open(path) as f:\n"
        "            pass\n",
        "    def items(self):\n        with self._done_lock:\n            yield 1\n",
        "    async def flush(self, fut):\n        with self._done_lock:\n            await fut\n",
        # a builtin, a property or an item read that runs the program's code
        "    def show(self):\n        with self._done_lock:\n            return str(self)\n",
        "    @property\n    def size(self):\n        return 1\n\n"
        "    def sized(self):\n        with self._done_lock:\n            return self.size\n",
        "    def item(self, table):\n        with self._done_lock:\n            return table[1]\n",
    ],
    ids=[
        *("io", "own-code", "acquire", "handed-on", "spin", "alias", "getattr", "default"),
        *("two-items", "yield", "await", "dunder", "property", "item"),
    ],
)
def test_a_lock_any_holder_may_keep_across_a_wait_stays_a_wait(tmp_path: Path, holder: str):
    code = _WORKER.replace(
        "        with self._done_lock:\n            done,",
        "        with self._done_lock:  # expect\n            done,",
    ).replace("\n\ndef event_loop", "\n" + holder + "\n\ndef event_loop")
    _assert_marked(tmp_path, code)


def test_a_condition_waiting_for_a_predicate_holds_it_while_the_predicate_runs(tmp_path: Path):
    code = _WORKER.replace(
        "            self._cond.wait(timeout=1.0)", "            self._cond.wait_for(self.ready)"
    ).replace(
        "        with self._cond:\n            self._cond.wait_for",
        "        with self._cond:  # expect\n            self._cond.wait_for",
    )
    code = code.replace(
        "\n\ndef event_loop",
        "\n    def ready(self):\n        time.sleep(1)\n        return True\n\n\ndef event_loop",
    )
    _assert_marked(tmp_path, code)
