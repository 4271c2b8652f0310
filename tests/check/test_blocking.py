"""blocking-before-collective on fixture programs: lines marked `# expect` are the findings."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from rankguard.rules.blocking_before_collective import BlockingBeforeCollective
from tests.check.helpers import HEAD, check_files, marked_lines

RULE = [BlockingBeforeCollective]


def _run(tmp_path: Path, body: str, settings: dict[str, Any] | None = None, **options: Any):
    code = HEAD + textwrap.dedent(body)
    result = check_files(tmp_path, {"mod.py": code}, RULE, settings, **options)
    return code, result


def _assert_marked(tmp_path: Path, body: str, settings: dict[str, Any] | None = None) -> list:
    code, result = _run(tmp_path, body, settings)
    assert not result.failures, result.failures  # a rule that raised would hide findings
    got = sorted(f.line for f in result.findings)
    assert got == marked_lines(code), "\n".join(f"{f.line}: {f.message}" for f in result.findings)
    return result.findings


# -- every catalog kind ------------------------------------------------------------------------
KINDS = {
    "driver-query": "free = torch.cuda.mem_get_info()",
    "driver-query-snapshot": "snap = torch.cuda.memory_snapshot()",
    "driver-query-reserved": "r = torch.cuda.memory_reserved()",
    "driver-query-allocated": "a = torch.cuda.memory_allocated()",
    "nvml": "import pynvml; h = pynvml.nvmlDeviceGetMemoryInfo(None)",
    "empty-cache": "torch.cuda.empty_cache()",
    "device-sync": "torch.cuda.synchronize()",
    "stream-sync": "torch.cuda.current_stream().synchronize()",
    "event-sync": "torch.cuda.Event().synchronize()",
    "tolist": "ids = torch.ones(2, device='cuda').tolist()",
    "numpy": "arr = torch.ones(2, device='cuda').numpy()",
    "work-wait": "dist.irecv(torch.ones(1), src=0).wait()",
    "zmq": "msg = zmq.Context().socket(zmq.PULL).recv_multipart()",
    "socket": "import socket; data = socket.socket().recv(10)",
    "queue": "item = queue.Queue().get()",
    "future": "r = Future().result()",
    "join": "threading.Thread(target=print).join()",
    "lock": "threading.RLock().acquire()",
    "event-wait": "threading.Event().wait()",
    "sleep": "time.sleep(1)",
    "open": "f = open('x')",
    "path": "import pathlib; t = pathlib.Path('x').read_text()",
    "json-dump": "import json; json.dump({}, f)",
    "tensor-file": "from safetensors.torch import load_file; sd = load_file('x')",
    "tensor-file-open": "import safetensors; f = safetensors.safe_open('x', 'pt')",
    "array-file": "import numpy as np; a = np.load('x')",
    "subprocess": "out = subprocess.check_output(['ls'])",
    "gc": "gc.collect()",
}


@pytest.mark.parametrize("line", list(KINDS.values()), ids=list(KINDS))
def test_every_catalog_kind_is_reported(tmp_path: Path, line: str):
    findings = _assert_marked(
        tmp_path,
        f"""
        def event_loop():
            while True:
                {line}  # expect
                dist.barrier()
        """,
    )
    assert findings[0].extra["confidence"] == "high"


def test_with_lock_acquires(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        class S:
            def __init__(self):
                self._lock = threading.Lock()

            def flush(self, path):  # another thread may hold the lock across a write
                with self._lock:
                    open(path).write("x")

            def event_loop(self):
                while True:
                    with self._lock:  # expect
                        pass
                    dist.barrier()
        """,
    )


# -- precision ---------------------------------------------------------------------------------
def test_precision_cases_are_not_reported(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        class S:
            def round_barrier(self):
                self.n = 1

            def event_loop(self):
                t = None
                while True:
                    size = torch.tensor([0], device="cpu")
                    n = size.item()
                    host = torch.zeros(3, device="cuda").cpu()  # expect
                    v = host.tolist()
                    w = torch.empty(4).numpy()
                    m = self.sock.recv_pyobj(zmq.NOBLOCK)
                    m2 = zmq.Context().socket(zmq.PULL).recv(flags=zmq.DONTWAIT)
                    q = queue.Queue()
                    a = q.get(timeout=0.1)
                    b = q.get(block=False)
                    c = q.get(True, 5)
                    r = Future().result(timeout=3)
                    self.round_barrier()
                    th = threading.Thread(target=print)
                    if not th.is_alive():
                        th.join()
                    if th.is_alive():
                        pass
                    else:
                        th.join()
                    th.join(timeout=1)
                    threading.Lock().acquire(blocking=False)
                    dist.barrier()
        """,
    )


def test_cpu_fact_is_path_sensitive(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        def event_loop(flag):
            while True:
                if flag:
                    x = torch.ones(1, device="cuda")
                else:
                    x = torch.ones(1, device="cpu")
                    y = x.item()
                z = x.item()  # expect
                dist.barrier()
        """,
    )


def test_untyped_receivers_are_reported_with_low_confidence(tmp_path: Path):
    findings = _assert_marked(
        tmp_path,
        """
        def event_loop(model, stream, t: torch.Tensor):
            while True:
                n = t.item()  # expect
                ids = model.forward().tolist()  # expect
                stream.synchronize()  # expect
                s = ",".join(["a"])
                d = {}.get("k")
                dist.barrier()
        """,
    )
    confidence = {f.line: f.extra["confidence"] for f in findings}
    assert sorted(confidence.values()) == ["low", "low", "medium"]
    assert all(f.extra["confidence_note"] for f in findings)


def test_config_extends_and_waives(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        def event_loop():
            while True:
                time.sleep(1)
                gc.collect()
                torch.cuda.set_device(0)  # expect
                dist.barrier()
        """,
        {"blocking": ["torch.cuda.set_device"], "non-blocking": ["time.sleep", "gc.*"]},
    )


# -- regions -----------------------------------------------------------------------------------
def test_each_call_pairs_with_the_next_collective_only(tmp_path: Path):
    _, result = _run(
        tmp_path,
        """
        def event_loop():
            while True:
                time.sleep(1)
                dist.broadcast(None, 0)
                gc.collect()
                dist.all_reduce(None)
                torch.cuda.synchronize()
        """,
    )
    pairs = {
        (f.extra["blocking"]["callee"], f.extra["collective"]["callee"], f.extra["round_tail"])
        for f in result.findings
    }
    # The round wraps around: the tail's sync delays the next round's broadcast.
    assert pairs == {
        ("time.sleep", "torch.distributed.broadcast", False),
        ("gc.collect", "torch.distributed.all_reduce", False),
        ("torch.cuda.synchronize", "torch.distributed.broadcast", True),
    }
    head = check_files(tmp_path, {}, RULE, include_round_tail=False)
    assert not [f for f in head.findings if f.extra["round_tail"]]
    assert len(head.findings) == 2


def test_branches_early_returns_and_wrappers(tmp_path: Path):
    findings = _assert_marked(
        tmp_path,
        """
        def sync(x):
            if x is None:
                return
            dist.all_reduce(x)

        def maybe_sleep(idle):
            if idle:
                time.sleep(1)  # expect
                return
            dist.barrier()

        def event_loop(idle):
            while True:
                if idle:
                    gc.collect()  # expect
                else:
                    pass
                sync(idle)
                maybe_sleep(idle)
                open("x")  # expect
                dist.broadcast(None, 0)
        """,
    )
    by_line = {f.extra["blocking"]["callee"]: f for f in findings}
    # gc.collect pairs with the wrapper's all_reduce (the wrapper is a collective site) and,
    # on the paths that skip it, with the broadcast: that one runs every round, so it is named.
    collect = by_line["gc.collect"].extra
    assert "torch.distributed.all_reduce" in {c["callee"] for c in collect["collectives"]}
    assert collect["collective"]["callee"] == "torch.distributed.broadcast"
    # The sleep on maybe_sleep's early-return path pairs with the broadcast after it.
    assert by_line["time.sleep"].extra["collective"]["callee"] == "torch.distributed.broadcast"
    assert [h["line"] for h in by_line["time.sleep"].extra["chain"]] == [
        by_line["time.sleep"].extra["chain"][0]["line"],
        by_line["time.sleep"].line,
    ]


def test_a_callee_that_may_skip_its_collective_leaves_pending_calls_pending(tmp_path: Path):
    """`maybe_gather` reaches its all_reduce only when `lora` is set: on the other path the
    sleep is still waiting for the next collective, the all_gather, and pairs with it too; the
    all_gather runs every round, so it is the one named."""
    _, result = _run(
        tmp_path,
        """
        def maybe_gather(lora):
            if lora:
                dist.all_reduce(None)

        def always_gather():
            dist.all_gather(None, None)

        def event_loop(lora):
            while True:
                time.sleep(1)
                maybe_gather(lora)
                always_gather()
                dist.broadcast(None, 0)
        """,
        include_round_tail=False,
    )
    (finding,) = result.findings
    paired = [c["callee"] for c in finding.extra["collectives"]]
    assert finding.extra["collective"]["callee"] == "torch.distributed.all_gather"
    assert sorted(paired) == ["torch.distributed.all_gather", "torch.distributed.all_reduce"]


def test_loops_try_finally_and_with(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        import contextlib

        @contextlib.contextmanager
        def stamp(name):
            yield

        def event_loop(items):
            while True:
                for item in items:
                    if item:
                        break
                    dist.barrier()
                    time.sleep(1)  # expect
                try:
                    x = open("f")  # expect
                except OSError:
                    gc.collect()  # expect
                finally:
                    torch.cuda.synchronize()  # expect
                with stamp("sync"):
                    subprocess.run(["true"])  # expect
                    dist.all_reduce(None)
                if not items:
                    continue
                dist.barrier()
        """,
    )


def test_continue_makes_a_tail_and_break_leaves_the_round(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        def event_loop(stop):
            while True:
                dist.barrier()
                if stop:
                    time.sleep(1)
                    break
                gc.collect()  # expect
                if stop > 1:
                    continue
                dist.all_reduce(None)
        """,
    )


def test_recursion_and_cycles_terminate(tmp_path: Path):
    findings = _assert_marked(
        tmp_path,
        """
        def ping(n):
            time.sleep(1)  # expect
            if n:
                pong(n - 1)

        def pong(n):
            gc.collect()  # expect
            ping(n)
            dist.barrier()

        def walk(node):
            if node:
                walk(node.left)
                torch.cuda.synchronize()  # expect
                walk(node.right)

        def event_loop(root):
            while True:
                walk(root)
                dist.broadcast(None, 0)
                ping(3)
        """,
    )
    assert {f.extra["collective"]["callee"] for f in findings} == {
        "torch.distributed.broadcast",
        "torch.distributed.barrier",
    }


def test_callbacks_and_lambdas_do_not_run_in_the_round(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        def slow():
            time.sleep(1)

        def event_loop(pool):
            while True:
                threading.Thread(target=slow).start()
                cb = lambda: gc.collect()
                dist.barrier()
        """,
    )


# -- cadence -----------------------------------------------------------------------------------
def test_cadenced_calls_are_reported_and_marked(tmp_path: Path):
    findings = _assert_marked(
        tmp_path,
        """
        @functools.lru_cache(maxsize=1)
        def cached_free():
            return torch.cuda.mem_get_info()  # expect

        @functools.cache
        def cached_stats():
            return torch.cuda.memory_stats()  # expect

        def every(seconds):
            return True

        def helper():
            gc.collect()  # expect

        class S:
            @functools.cached_property
            def width(self):
                return torch.cuda.memory_reserved()  # expect

            def event_loop(self):
                while True:
                    now = time.monotonic()
                    if now - self._last >= 30:
                        torch.cuda.empty_cache()  # expect
                    if time.monotonic() - self._t > self.interval:
                        torch.cuda.synchronize()  # expect
                    cached_free()
                    cached_stats()
                    helper()
                    w = self.width
                    time.sleep(0.1)  # expect
                    dist.barrier()
        """,
        {"cadence-helpers": ["*.helper"]},
    )
    cadence = {f.extra["blocking"]["callee"]: f.extra["cadence"] for f in findings}
    assert cadence["time.sleep"] is None
    assert cadence["torch.cuda.mem_get_info"] == "lru_cache on `cached_free`"
    assert cadence["torch.cuda.memory_stats"] == "cache on `cached_stats`"
    assert cadence["torch.cuda.memory_reserved"] == "cached_property on `S.width`"
    assert "cadence helper" in cadence["gc.collect"]
    assert "self._last" in cadence["torch.cuda.empty_cache"]
    assert "self._t" in cadence["torch.cuda.synchronize"]


# A memo held by a parameter: the build after the early return runs while it is unset.
_CONFIG_OF = """
        def config_of(args):
            memo = getattr(args, "_config", None)
            if memo is not None:
                return memo
            built = open("cfg")  # expect
            args._config = built
            return built
"""


def test_work_a_memo_attribute_caches_is_marked_cadenced(tmp_path: Path):
    # `memo = getattr(args, "_config", None); if memo is not None: return memo` and the
    # `if self._tok is None: self._tok = ...` build run only while the attribute is unset, and
    # set it: once per object, not every round. A branch that sets nothing is no cache.
    findings = _assert_marked(
        tmp_path,
        _CONFIG_OF
        + """

        def keyed_config_of(args):
            memo = args._keyed
            if memo is not None:
                if args._key == args.path:
                    return memo
            built = open("keyed")  # expect
            args._keyed = built
            args._key = args.path
            return built

        class S:
            def tokenizer(self):
                if self._tok is None:
                    self._tok = open("tok")  # expect
                return self._tok

            def event_loop(self, args):
                while True:
                    config_of(args)
                    keyed_config_of(args)
                    self.tokenizer()
                    if self._other is None:
                        subprocess.run(["other"])  # expect
                    dist.barrier()
        """,
    )
    cadence = {f.extra["blocking"]["text"]: f.extra["cadence"] for f in findings}
    assert "args._config" in cadence["open('cfg')"]
    assert "self._tok" in cadence["open('tok')"]
    assert "args._keyed" in cadence["open('keyed')"]
    assert cadence["subprocess.run(['other'])"] is None


def test_a_setattr_of_a_computed_name_leaves_a_private_memo_a_cache(tmp_path: Path):
    """Copying settings by name (`setattr(obj, key, value)` over a mapping, or onto an
    object's own fields, an attribute hook's `object.__setattr__`, state copied through
    `__dict__`) writes what the data or the assignment names: public fields, not another
    module's private memo, so `config_of` stays a cache. A public memo attribute may be such a
    field, and `setattr` with the memo's own name may unset it: no cache then."""
    findings = _assert_marked(
        tmp_path,
        """
        def apply_overrides(obj, overrides):
            for key, value in overrides.items():
                setattr(obj, key, value)

        class Args:
            def __setattr__(self, name, value):
                object.__setattr__(self, name, value)

        class Bag:
            def update(self, fields):
                for key, value in fields.items():
                    setattr(self, key, value)

        class Record:
            def __setstate__(self, state):
                self.__dict__.update(state)

        def rebuild(old, new):
            new.__dict__.update(old.__dict__)

        def config_of(args):
            memo = getattr(args, "_config", None)
            if memo is not None:
                return memo
            built = open("private")  # expect
            args._config = built
            return built

        def public_config_of(args):
            memo = args.config
            if memo is not None:
                return memo
            built = open("public")  # expect
            args.config = built
            return built

        def forget(args):
            setattr(args, "_table", None)

        def table_of(args):
            memo = args._table
            if memo is not None:
                return memo
            built = open("reset")  # expect
            args._table = built
            return built

        def event_loop(args):
            while True:
                config_of(args)
                public_config_of(args)
                table_of(args)
                dist.barrier()
        """,
    )
    cadence = {f.extra["blocking"]["text"]: f.extra["cadence"] for f in findings}
    assert "args._config" in cadence["open('private')"]
    assert cadence["open('public')"] is None
    assert cadence["open('reset')"] is None  # a literal name resets it: no cache


@pytest.mark.parametrize(
    "reset",
    [
        'self.__dict__.pop("_tok", None)',
        "for name in self._CACHES:\n                    setattr(self, name, None)",
    ],
    ids=["through __dict__", "a computed name on itself"],
)
def test_an_object_that_resets_its_own_private_memo_has_no_cache(tmp_path: Path, reset: str):
    """A fresh reader's programs: an object clearing its own caches (through `__dict__`, or by
    names it lists) unsets the memo every round: not a cache, though the names are computed."""
    _, result = _run(
        tmp_path,
        f"""
        class Holder:
            _CACHES = ("_tok",)

            def tok(self):
                if self._tok is None:
                    self._tok = open("tok")
                return self._tok

            def invalidate(self):
                {reset}

        def event_loop(h: Holder):
            while True:
                h.invalidate()
                h.tok()
                dist.barrier()
        """,
    )
    (finding,) = result.findings
    assert finding.extra["cadence"] is None


def test_a_memo_the_start_up_fills_is_low_confidence(tmp_path: Path):
    """The round's object builds its configuration in its constructor through the same memo
    function: the cache is likely filled before the first round, so the build the round reaches
    is low confidence and says where start-up reaches it. A memo start-up never reaches keeps
    its confidence: the first round builds it."""
    findings = _assert_marked(
        tmp_path,
        _CONFIG_OF
        + """
        import json


        def tokenizer_of(args):
            memo = getattr(args, "_tok", None)
            if memo is not None:
                return memo
            built = open("tok")  # expect
            args._tok = built
            return built

        class Scheduler:
            def __init__(self, args):
                self.args = args
                self.init_config()

            def init_config(self):
                self.config = config_of(self.args)
                self.layout = layout_of(self.args)

            def event_loop(self):
                while True:
                    config_of(self.args)
                    tokenizer_of(self.args)
                    layout_of(self.args)
                    dist.barrier()

        @functools.lru_cache
        def read_layout(path):
            return open(path)  # expect

        @functools.lru_cache
        def read_header(name):
            return json.load(name)  # expect

        def layout_of(args):
            read_header(args.name)
            memo = getattr(args, "_layout", None)
            if memo is not None:
                return memo
            args._layout = read_layout("layout")
            return args._layout
        """,
    )
    by_text = {f.extra["blocking"]["text"]: f.extra for f in findings}
    warm, cold = by_text["open('cfg')"], by_text["open('tok')"]
    assert warm["confidence"] == "low" and cold["confidence"] == "high"
    assert "Scheduler.__init__" in warm["confidence_note"]
    assert "config_of" in warm["confidence_note"]
    assert warm["cadenced"] and cold["cadenced"]
    # Cached twice (a `functools` cache inside the memo's build): the warm memo still holds it.
    layout = by_text["open(path)"]
    assert "lru_cache" in layout["cadence"] and layout["confidence"] == "low"
    # Before the memo's test: it runs on every call, whatever the memo holds.
    assert by_text["json.load(name)"]["confidence"] == "high"


_NOT_WARM = {
    "another object's memo": """
        class Cache:
            def get(self):
                if self._v is None:
                    self._v = open("v")
                return self._v

        class Helper:
            def __init__(self):
                Cache().get()

        class Scheduler:
            def __init__(self):
                self.helper = Helper()
                self.cache = Cache()

            def event_loop(self):
                while True:
                    self.cache.get()
                    dist.barrier()
        """,
    "start-up reaches it only by a guessed edge": """
        class Loader:
            def load_once(self):
                if self._tok is None:
                    self._tok = open("tok")
                return self._tok

        class Scheduler:
            def __init__(self, other):
                other.load_once()

            def event_loop(self, loader: Loader):
                while True:
                    loader.load_once()
                    dist.barrier()
        """,
    "the constructor runs the round": _CONFIG_OF
    + """

        class Scheduler:
            def __init__(self, args):
                self.args = args
                self.event_loop()

            def event_loop(self):
                while True:
                    config_of(self.args)
                    dist.barrier()
        """,
}


@pytest.mark.parametrize("program", list(_NOT_WARM), ids=list(_NOT_WARM))
def test_a_memo_start_up_does_not_fill_keeps_its_confidence(tmp_path: Path, program: str):
    """A fresh reader's programs: the memo the round builds is not one start-up fills."""
    _, result = _run(tmp_path, _NOT_WARM[program], {"rounds": ["*.event_loop"]})
    (finding,) = result.findings
    assert finding.extra["cadenced"] and finding.extra["confidence"] == "high"


def test_thread_liveness_is_read_from_the_condition_not_its_text(tmp_path: Path):
    # `or` makes the join reachable while the thread is alive: a real wait.
    _assert_marked(
        tmp_path,
        """
        class S:
            def event_loop(self, t):
                while True:
                    th = threading.Thread(target=print)
                    if not th.is_alive() or self.force:
                        th.join()  # expect
                    if not th.is_alive() and self.force:
                        th.join()
                    if not (th.is_alive() or self.force):
                        th.join()
                    dist.barrier()
        """,
    )


def test_with_items_come_from_the_ir(tmp_path: Path):
    # Only a lock that is itself a with-item is acquired, not one passed inside an item's call.
    findings = _assert_marked(
        tmp_path,
        """
        class S:
            def __init__(self):
                self._lock = threading.Lock()

            def event_loop(self):
                while True:
                    with self.timer("label", self._lock, 1):
                        pass
                    with self.timer("label"), self._lock:  # expect
                        pass
                    dist.barrier()
        """,
    )
    assert [f.extra["blocking"]["callee"] for f in findings] == ["threading.Lock.acquire"]


def test_zmq_flags_passed_through_a_parameter(tmp_path: Path):
    findings = _assert_marked(
        tmp_path,
        """
        def sock_recv(socket: zmq.Socket, flags=0):
            return socket.recv_pyobj(flags=flags)  # expect

        def event_loop(sock: zmq.Socket):
            while True:
                a = sock_recv(sock, zmq.NOBLOCK)
                dist.barrier()
                b = sock_recv(sock)
                dist.all_reduce(None)
        """,
    )
    # The call passing zmq.NOBLOCK returns at once: only the default-flags call waits.
    assert [f.extra["collective"]["callee"] for f in findings] == ["torch.distributed.all_reduce"]


def test_a_chain_through_a_subclass_override_says_so(tmp_path: Path):
    """The round calls the declared backend's method; the subclass that blocks is reached by
    class-hierarchy dispatch, which holds only where that subclass is configured: the hop says
    `override`, so the reader sees the condition the finding depends on."""
    _, result = _run(
        tmp_path,
        """
        class Backend:
            def prepare(self, x):
                return x

        class SyncingBackend(Backend):
            def prepare(self, x):
                return x.tolist()

        def make(name):
            return SyncingBackend() if name else Backend()

        def event_loop(backend: Backend):
            while True:
                backend.prepare(torch.ones(2, device="cuda"))
                dist.barrier()
        """,
        include_round_tail=False,
    )
    (finding,) = result.findings
    assert [h.get("edge") for h in finding.extra["chain"]] == ["override", None]
    # The device sync is known, the configuration is not: at most medium, saying which class.
    assert finding.extra["confidence"] == "medium"
    assert "SyncingBackend.prepare" in finding.extra["confidence_note"]
    assert "known to live on a device" in finding.extra["confidence_note"]  # kept, not replaced


def test_a_plain_chain_keeps_its_confidence_beside_an_override(tmp_path: Path):
    """The declared class itself blocks: no configuration is guessed, the finding stays high."""
    _, result = _run(
        tmp_path,
        """
        class Backend:
            def prepare(self, x):
                return x.tolist()

        def event_loop(backend: Backend):
            while True:
                backend.prepare(torch.ones(2, device="cuda"))
                dist.barrier()
        """,
        include_round_tail=False,
    )
    (finding,) = result.findings
    assert finding.extra["confidence"] == "high"


def test_the_named_collective_is_one_a_plain_path_reaches(tmp_path: Path):
    """The sleep may delay a collective that one configured subclass runs, and surely delays the
    barrier: the finding names the barrier and lists both."""
    _, result = _run(
        tmp_path,
        """
        class Backend:
            def prepare(self):
                pass

        class GatheringBackend(Backend):
            def prepare(self):
                dist.all_reduce(None)

        def make(name):
            return GatheringBackend() if name else Backend()

        def event_loop(backend: Backend):
            while True:
                time.sleep(1)
                backend.prepare()
                dist.barrier()
        """,
        include_round_tail=False,
    )
    (finding,) = result.findings
    assert finding.extra["collective"]["callee"] == "torch.distributed.barrier"
    assert [c["callee"] for c in finding.extra["collectives"]] == [
        "torch.distributed.all_reduce",
        "torch.distributed.barrier",
    ]


def test_a_sure_edge_such_as_a_constructor_can_be_the_headline(tmp_path: Path):
    """Only guessed edges (override, fallback, dispatch) demote a collective from the headline:
    the all_reduce a constructor runs comes first and is sure."""
    _, result = _run(
        tmp_path,
        """
        class Sync:
            def __init__(self):
                dist.all_reduce(None)

        def event_loop(flag):
            while True:
                time.sleep(1)
                if flag:
                    Sync()
                else:
                    dist.broadcast(None, 0)
        """,
        include_round_tail=False,
    )
    (finding,) = result.findings
    assert finding.extra["collective"]["callee"] == "torch.distributed.all_reduce"


def test_the_named_collective_is_one_every_iteration_runs(tmp_path: Path):
    """The sleep delays the all_reduce only where `flag` holds; the barrier runs in every
    iteration after it, so the barrier is what surely waits for it: the finding names it."""
    _, result = _run(
        tmp_path,
        """
        def event_loop(flag):
            while True:
                time.sleep(1)
                if flag:
                    dist.all_reduce(None)
                dist.barrier()
        """,
        include_round_tail=False,
    )
    (finding,) = result.findings
    assert finding.extra["collective"]["callee"] == "torch.distributed.barrier"
    assert finding.extra["collective"]["every_round"] is True
    assert "runs every round" in finding.message


def test_a_collective_every_round_runs_is_named_through_the_tail(tmp_path: Path):
    """A profiler's rare barrier is found first, but the request broadcast at the top of every
    round is what surely follows the read: the finding names it, as the next round's."""
    _, result = _run(
        tmp_path,
        """
        import json

        class Profiler:
            def stop(self, rocm):
                json.load(self.trace)
                if rocm:
                    dist.barrier()

        class Sched:
            def receive(self):
                dist.broadcast(None, 0)

            def event_loop(self, profiler: Profiler, rocm):
                while True:
                    self.receive()
                    profiler.stop(rocm)
        """,
    )
    (finding,) = result.findings
    assert finding.extra["blocking"]["text"] == "json.load(self.trace)"
    assert finding.extra["collective"]["callee"] == "torch.distributed.broadcast"
    assert finding.extra["collective"]["every_round"] is True
    assert finding.extra["round_tail"] is True
    assert {c["callee"] for c in finding.extra["collectives"]} == {
        "torch.distributed.barrier",
        "torch.distributed.broadcast",
    }


def test_no_collective_is_called_every_round_when_a_branch_skips_it(tmp_path: Path):
    """Neither collective runs on every path: the first found is named, and not as sure."""
    _, result = _run(
        tmp_path,
        """
        def event_loop(flag):
            while True:
                time.sleep(1)
                if flag:
                    dist.all_reduce(None)
                else:
                    dist.broadcast(None, 0)
        """,
        include_round_tail=False,
    )
    (finding,) = result.findings
    assert finding.extra["collective"]["every_round"] is False
    assert "runs every round" not in finding.message


def test_an_operation_every_round_runs_on_different_lines_is_still_sure(tmp_path: Path):
    """The sender and the receivers of a pickled-object broadcast call `broadcast` on different
    lines, and a group of one skips it: every round with peers still runs that function's
    broadcast, so it is named over the profiler's rare barrier."""
    _, result = _run(
        tmp_path,
        """
        import json

        def broadcast_reqs(reqs, rank, src, world_size):
            if world_size == 1:
                return reqs
            if rank == src:
                dist.broadcast(reqs, src)
            else:
                dist.broadcast(None, src)
            return reqs

        class Profiler:
            def stop(self, rocm):
                json.load(self.trace)
                if rocm:
                    dist.barrier()

        def event_loop(profiler: Profiler, rocm, rank, world_size):
            while True:
                broadcast_reqs([], rank, 0, world_size)
                profiler.stop(rocm)
        """,
    )
    (finding,) = result.findings
    assert finding.extra["collective"]["callee"] == "torch.distributed.broadcast"
    assert finding.extra["collective"]["every_round"] is True


_NOT_EVERY_ROUND = {
    "a conditional call of a primitive the function also calls unconditionally": """
        def event_loop(flag):
            while True:
                time.sleep(1)
                if flag:
                    dist.all_reduce(None)
                dist.all_reduce(None)  # every
        """,
    "the same, in a helper": """
        def reduce(t, extra):
            if extra:
                dist.all_reduce(t)
            dist.all_reduce(t)  # every

        def event_loop(flag):
            while True:
                time.sleep(1)
                reduce(None, flag)
        """,
    "a generator the loop stops advancing": """
        def items():
            yield 1
            dist.all_reduce(None)

        def event_loop(flag):
            while True:
                time.sleep(1)
                if flag:
                    dist.barrier()
                for x in items():
                    break
        """,
    "a guessed edge": """
        class Comm:
            def sync_everything(self):
                dist.all_reduce(None)

        def event_loop(flag, obj):
            while True:
                time.sleep(1)
                if flag:
                    dist.barrier()
                obj.sync_everything()
        """,
    "a short circuit": """
        def sync():
            dist.all_reduce(None)

        def event_loop(flag, other):
            while True:
                time.sleep(1)
                if other:
                    dist.barrier()
                v = flag and sync()
        """,
    "a comprehension over what may be empty": """
        def sync(t):
            dist.all_reduce(t)

        def event_loop(items, other):
            while True:
                time.sleep(1)
                if other:
                    dist.barrier()
                out = [sync(t) for t in items]
        """,
}


@pytest.mark.parametrize("program", list(_NOT_EVERY_ROUND), ids=list(_NOT_EVERY_ROUND))
def test_every_round_is_claimed_only_where_every_path_runs_it(tmp_path: Path, program: str):
    """A fresh reader's programs: each collective claimed to run every round must (the lines
    marked `# every`); none of the others may be."""
    code, result = _run(tmp_path, _NOT_EVERY_ROUND[program], include_round_tail=False)
    claimed = {
        c["line"] for f in result.findings for c in f.extra["collectives"] if c["every_round"]
    }
    marked = {i for i, text in enumerate(code.splitlines(), 1) if text.endswith("# every")}
    assert claimed == marked


def test_a_context_manager_runs_up_to_its_yield_on_entry_and_the_rest_on_exit(tmp_path: Path):
    """`@contextmanager` code before the `yield` runs where the `with` starts, the code after it
    where the body is left: the sleep waits for the body's all_reduce, the collection after
    the yield (in `finally`) for the barrier after the `with`."""
    _, result = _run(
        tmp_path,
        """
        import contextlib

        @contextlib.contextmanager
        def profiling():
            time.sleep(1)
            try:
                yield
            finally:
                gc.collect()

        def event_loop():
            while True:
                with profiling():
                    dist.all_reduce(None)
                dist.barrier()
        """,
        include_round_tail=False,
    )
    paired = {
        f.extra["blocking"]["text"]: [c["callee"] for c in f.extra["collectives"]]
        for f in result.findings
    }
    assert paired == {
        "time.sleep(1)": ["torch.distributed.all_reduce"],
        "gc.collect()": ["torch.distributed.barrier"],
    }


def test_a_collective_after_a_context_managers_yield_follows_the_body(tmp_path: Path):
    """The barrier after `value = yield` runs as the body is left: the body's sleep waits for
    it, not for the all_reduce after the `with`."""
    _, result = _run(
        tmp_path,
        """
        import contextlib

        @contextlib.contextmanager
        def synced():
            value = yield
            dist.barrier()

        def event_loop():
            while True:
                with synced():
                    time.sleep(1)
                dist.all_reduce(None)
        """,
        include_round_tail=False,
    )
    (finding,) = result.findings
    assert [c["callee"] for c in finding.extra["collectives"]] == ["torch.distributed.barrier"]


def test_a_with_that_swallows_exceptions_may_leave_its_body_early(tmp_path: Path):
    """`contextlib.suppress` goes on past a raise in the body: the all_reduce may not run, so
    the sleep is not claimed to be followed by it every round, and may still wait for the
    barrier after the `with`, which every round runs."""
    _, result = _run(
        tmp_path,
        """
        import contextlib

        def helper(bad):
            if bad:
                raise ValueError()
            dist.all_reduce(None)

        def event_loop(bad):
            while True:
                time.sleep(1)
                with contextlib.suppress(ValueError):
                    helper(bad)
                dist.barrier()
        """,
        include_round_tail=False,
    )
    (finding,) = result.findings
    paired = {c["callee"]: c["every_round"] for c in finding.extra["collectives"]}
    assert paired == {"torch.distributed.all_reduce": False, "torch.distributed.barrier": True}


_DRAFTERS = """
        class Proposer:
            def propose(self):
                pass

        class Ngram(Proposer):
            def propose(self):
                return 1

        class Medusa(Proposer):
            def propose(self):
                time.sleep(1)

        def make(kind) -> Proposer:
            return Ngram() if kind else Medusa()
"""


@pytest.mark.parametrize(
    ("loop", "reported"),
    [
        (["assert isinstance(self.drafter, Ngram)", "self.drafter.propose()"], False),
        (["if isinstance(self.drafter, (Ngram, Runner)):", "    self.drafter.propose()"], False),
        (
            ["if not isinstance(self.drafter, Ngram):", "    return", "self.drafter.propose()"],
            False,
        ),
        (
            [
                "assert isinstance(self.drafter, Ngram)",
                "self.drafter = make(0)",
                "self.drafter.propose()",
            ],
            True,
        ),
        (["self.drafter.propose()"], True),
        (["assert isinstance(self.drafter, Ngram)", "self.draft()"], False),
    ],
    ids=[
        "assert",
        "if, a tuple of classes",
        "an early return",
        "reassigned after",
        "no test",
        "in a method of self",
    ],
)
def test_isinstance_on_the_path_narrows_the_receivers_overrides(
    tmp_path: Path, loop: list[str], reported: bool
):
    """After `assert isinstance(self.drafter, Ngram)` (or inside `if isinstance(...)`, or past
    the other side's return) the call runs Ngram's override only, not Medusa's sleep, also in a
    method called on `self` where nothing reassigns the attribute after construction; a later
    assignment forgets the test."""
    _, result = _run(
        tmp_path,
        _DRAFTERS
        + f"""
        class Runner:
            def __init__(self, kind):
                self.drafter: Proposer = make(kind)

            def draft(self):
                self.drafter.propose()

            def event_loop(self):
                while True:
                    {(chr(10) + " " * 20).join(loop)}
                    dist.barrier()
        """,
        include_round_tail=False,
    )
    assert bool(result.findings) is reported


def test_a_module_global_memo_is_built_once_per_process(tmp_path: Path):
    """A lazily built module global (`global _h; if _h is None: _h = load()`, or the early
    return of it) runs once per process: at most the first round that needs it stalls, so the
    build is reported cadenced at low confidence. A global another function resets to None is
    no cache, and a global the function tests but never sets is a flag."""
    findings = _assert_marked(
        tmp_path,
        """
        _handle = None
        _table = None
        _reset = None
        _flag = None

        def handle():
            global _handle
            if _handle is None:
                _handle = subprocess.check_output(["probe"])  # expect
            return _handle

        def table():
            global _table
            if _table is not None:
                return _table
            _table = open("table")  # expect
            return _table

        def reset_cache():
            global _reset
            if _reset is None:
                _reset = open("reset")  # expect
            return _reset

        def clear():
            global _reset
            _reset = None

        def flagged():
            if _flag is None:
                subprocess.run(["flag"])  # expect

        def event_loop():
            while True:
                handle()
                table()
                reset_cache()
                clear()
                flagged()
                dist.barrier()
        """,
    )
    got = {f.extra["blocking"]["text"]: f.extra["confidence"] for f in findings}
    assert got == {
        "subprocess.check_output(['probe'])": "low",
        "open('table')": "low",
        "open('reset')": "high",
        "subprocess.run(['flag'])": "high",
    }
    cadence = {f.extra["blocking"]["text"]: f.extra["cadence"] or "" for f in findings}
    assert "once per process" in cadence["open('table')"], cadence
    assert cadence["open('reset')"] == cadence["subprocess.run(['flag'])"] == "", cadence


def test_a_module_global_reset_by_its_own_builder_or_another_module_is_no_memo(tmp_path: Path):
    """A builder that clears its global when its key changes (`if _key != key: _h = None`)
    rebuilds whenever the key does, maybe every round; so does a global another module clears
    through the module (`cache._handle = None`). Neither build is once per process."""
    keyed = HEAD + textwrap.dedent(
        """
        _handle = None
        _key = None

        def get_handle(key):
            global _handle, _key
            if _key != key:
                _handle = None
                _key = key
            if _handle is None:
                _handle = subprocess.check_output(["probe", key])
            return _handle
        """
    )
    cache = HEAD + textwrap.dedent(
        """
        _table = None

        def table():
            global _table
            if _table is None:
                _table = open("table")
            return _table

        _other = None

        def other():
            global _other
            if _other is None:
                _other = open("other")
            return _other
        """
    )
    loop = HEAD + textwrap.dedent(
        """
        import cache
        import keyed

        def event_loop(step):
            while True:
                keyed.get_handle(step)
                cache.table()
                cache._table = None
                cache.other()
                setattr(cache, "_other", None)
                dist.barrier()
        """
    )
    files = {"keyed.py": keyed, "cache.py": cache, "mod.py": loop}
    result = check_files(tmp_path, files, RULE)
    got = {f.extra["blocking"]["text"]: f.extra["confidence"] for f in result.findings}
    assert got == {
        "subprocess.check_output(['probe', key])": "high",
        "open('table')": "high",
        "open('other')": "high",
    }


def test_a_path_that_exits_the_process_meets_no_collective(tmp_path: Path):
    """`exit()`, `sys.exit(1)`, `os._exit(0)` end the process: what blocks just before them
    holds up no collective (the peers are left waiting, but not on a slow call), as past a
    `raise`."""
    _assert_marked(
        tmp_path,
        """
        import os
        import sys

        def forward(profile, info, fatal):
            if profile:
                subprocess.run(["dump"])
                exit()
            if info:
                subprocess.run(["fail"])
                sys.exit(1)
            if fatal:
                subprocess.run(["abort"])
                os._exit(2)
            subprocess.run(["ok"])  # expect

        def event_loop(profile, fatal):
            while True:
                forward(profile, {}, fatal)
                dist.barrier()
        """,
    )
