"""Real stragglers (marked `# expect`) that the precision facts must not drop: a round fact
is inductive only where every writer of what it reads is accounted for (deeper attributes,
properties, writers before the loop or on another thread), a refusal helper is read only where
its test sees the parameter as passed (no reassignment, no unknown decorator), and what a caller
knows of an argument lands on the parameter that takes it and only while nothing may reset it.
Written by a fresh reviewer of that change; each failed before its mend."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_blocking import _assert_marked

ROUNDS = {"rounds": ["*.event_loop_*"]}

MODE = """
class Mode:
    NULL = 0
    PREFILL = 1
"""


KIND = """
class Kind:
    IDLE = 0
    EXTEND = 1
"""

# A handler whose work runs only past `refuse`, called by the loop with `kind == IDLE`.
REFUSED = """
def handle(kind):
    reason = refuse(kind)
    if reason is not None:
        return
    time.sleep(1)  # expect

def loop():
    while True:
        k = recv()
        if k == Kind.IDLE:
            handle(k)
        dist.barrier()
"""


def _mode_loop(before_loop: str = "", in_loop: str = "") -> str:
    """The rest of class `S`: `switch` sets the mode, and the loop, chosen under
    `mode == NULL`, sleeps and switches in its PREFILL branch."""
    return f"""
    def switch(self):
        self.mode = Mode.PREFILL

    def event_loop_normal(self):
{before_loop}        while True:
            if self.mode == Mode.PREFILL:
                time.sleep(1)  # expect
                self.switch()
{in_loop}            dist.barrier()

def dispatch(s: S):
    if s.mode == Mode.NULL:
        s.event_loop_normal()
"""


def test_inductive_rule_misses_writers_of_a_deeper_attribute(tmp_path: Path):
    """The shaky fact reads `self.args.mode`; `round_writers` watches only writers of `args`
    (`reload`, run in doubt), not of `.mode` on the args object (`poke`, run every round
    outside doubt). After the first round `mode` is PREFILL and the sleep runs."""
    _assert_marked(
        tmp_path,
        MODE
        + """
def poke(args):
    args.mode = Mode.PREFILL

class S:
    def __init__(self, args):
        self.args = args

    def reload(self):
        self.args = load()

    def event_loop_normal(self):
        while True:
            if self.args.mode == Mode.PREFILL:
                time.sleep(1)  # expect
                self.reload()
            poke(self.args)
            dist.barrier()

def dispatch(s: S):
    if s.args.mode == Mode.NULL:
        s.event_loop_normal()
""",
        ROUNDS,
    )


def test_inductive_rule_ignores_a_writer_run_before_the_loop(tmp_path: Path):
    """The round function switches the mode before its loop (not walked by `regions`): the
    selecting fact never holds in any round, yet the only writer is also run in doubt in the
    loop, so the rule calls the fact inductive and drops the sleep."""
    _assert_marked(
        tmp_path,
        MODE
        + """
class S:
    def __init__(self, mode):
        self.mode = mode
        self.wanted = None
"""
        + _mode_loop(before_loop="        if self.wanted:\n            self.switch()\n"),
        ROUNDS,
    )


def test_inductive_rule_ignores_a_writer_another_thread_runs(tmp_path: Path):
    """`switch` is also a thread's target: it can break the fact mid-round whatever the round
    does, but the rule only asks whether the round runs it outside doubt."""
    _assert_marked(
        tmp_path,
        MODE
        + """
class S:
    def __init__(self, mode):
        self.mode = mode
        threading.Thread(target=self.watch).start()

    def watch(self):
        while True:
            if control_request():
                self.switch()
"""
        + _mode_loop(),
        ROUNDS,
    )


def test_a_loop_fixpoint_keeps_a_doubted_copy_that_the_inductive_rule_drops(tmp_path: Path):
    """`same()` compares pending keys, not their doubt: the loop's second pass reaches
    `wait_helper` undoubted (`busy` is unknown by then), but the first pass's doubted copy is
    what leaves the loop, and the inductive rule then drops a call an undoubted path runs."""
    _assert_marked(
        tmp_path,
        MODE
        + """
def wait_helper():
    time.sleep(1)  # expect

class S:
    def __init__(self, mode):
        self.mode = mode

    def switch(self):
        self.mode = Mode.PREFILL

    def event_loop_normal(self):
        while True:
            busy = poll()
            if busy:
                continue
            for item in items():
                if busy:
                    wait_helper()
                if self.mode == Mode.PREFILL:
                    wait_helper()
                    self.switch()
                busy = poll()
            dist.barrier()

def dispatch(s: S):
    if s.mode == Mode.NULL:
        s.event_loop_normal()
""",
        ROUNDS,
    )


def test_a_refusal_helper_that_reassigns_its_parameter_first(tmp_path: Path):
    """`refuse` normalises `kind` before testing it: the test reads the new value, but
    `analysis.results` reads it as the argument, so `reason is not None` is taken as
    certain where `kind == IDLE` and the handler's work is dropped."""
    _assert_marked(
        tmp_path,
        KIND
        + """
def refuse(kind):
    kind = normalize(kind)
    if kind == Kind.IDLE:
        return ("idle", True)
    return None
"""
        + REFUSED,
        {"rounds": ["mod.loop"]},
    )


def test_a_refusal_helper_whose_local_is_reassigned_under_a_branch(tmp_path: Path):
    """`sa` is reassigned under an `if` before the test; `_assigned` sees only top-level
    assignments, so the test is read as `s.args.off` though it may read `s.other.off`."""
    _assert_marked(
        tmp_path,
        """
def refuse(s):
    sa = s.args
    if s.use_other:
        sa = s.other
    if sa.off:
        return ("off", True)
    return None

def handle(s):
    reason = refuse(s)
    if reason is not None:
        return
    time.sleep(1)  # expect

def loop(s):
    while True:
        if s.args.off:
            handle(s)
        dist.barrier()
""",
        {"rounds": ["mod.loop"]},
    )


def test_keyword_into_kwargs_restates_a_fact_on_a_global_of_the_same_name(tmp_path: Path):
    """`work(**opts)` has no parameter `endpoint`; the keyword's facts are restated about the
    name `endpoint` anyway, and the callee's global `endpoint` is then taken as not None."""
    _assert_marked(
        tmp_path,
        """
endpoint = None

def work(**opts):
    if endpoint is None:
        time.sleep(1)  # expect

def loop():
    while True:
        e = recv()
        if e is None:
            continue
        work(endpoint=e)
        dist.barrier()
""",
        {"rounds": ["mod.loop"]},
    )


def test_an_explicit_base_call_gives_self_facts_to_the_wrong_parameter(tmp_path: Path):
    """`Base.process(self, batch)`: `_params` drops the callee's `self` (the call has a dotted
    target) though the call passes `self` first, so the caller's facts on `self` land on
    `batch` (`self.kind == IDLE` read as `batch.kind == IDLE`)."""
    _assert_marked(
        tmp_path,
        KIND
        + """
class Base:
    def process(self, batch):
        if batch.kind == Kind.EXTEND:
            torch.cuda.synchronize()  # expect

class Worker(Base):
    def __init__(self, kind):
        self.kind = kind

    def process(self, batch):
        Base.process(self, batch)

    def event_loop_normal(self):
        while True:
            batch = recv()
            self.process(batch)
            dist.barrier()

def dispatch(w: Worker):
    if w.kind == Kind.IDLE:
        w.event_loop_normal()
""",
        ROUNDS,
    )


def test_inductive_rule_misses_a_write_behind_a_property(tmp_path: Path):
    """`mode` is a property over `_mode`: `round_writers` lists who assigns `.mode` (`switch`,
    run in doubt) but not `rotate`, which assigns `_mode` every round outside doubt."""
    _assert_marked(
        tmp_path,
        MODE
        + """
class S:
    def __init__(self, mode):
        self._mode = mode

    @property
    def mode(self):
        return self._mode

    @mode.setter
    def mode(self, value):
        self._mode = value

    def rotate(self):
        self._mode = Mode.PREFILL
"""
        + _mode_loop(in_loop="            self.rotate()\n"),
        ROUNDS,
    )


def test_a_raise_behind_a_decorator_that_swallows_it_is_no_refusal(tmp_path: Path):
    """`if c: raise` makes the result certain only where nothing between catches the raise:
    `quiet`, a library decorator (not followed: the model calls `refuse` itself), may turn it
    into None, and then the handler's work runs. An unknown decorator is an unknown result."""
    _assert_marked(
        tmp_path,
        """
from retrying_lib import quiet

class Kind:
    IDLE = 0
    EXTEND = 1

@quiet
def refuse(kind):
    if kind == Kind.IDLE:
        raise ValueError("idle")
    return None
"""
        + REFUSED,
        {"rounds": ["mod.loop"]},
    )


def test_a_bound_method_called_through_a_parameter_gives_argument_facts_to_self(
    tmp_path: Path,
):
    """`run(self.process, b)` calls `fn(batch)`: the bare-name call keeps `process`'s `self`
    among the parameters the arguments fill, so `batch.kind == IDLE` lands on `self.kind`."""
    _assert_marked(
        tmp_path,
        KIND
        + """
def run(fn, batch):
    fn(batch)

class Worker:
    def __init__(self, kind):
        self.kind = kind

    def process(self, batch):
        if self.kind == Kind.EXTEND:
            torch.cuda.synchronize()  # expect

    def event_loop_normal(self):
        while True:
            b = recv()
            if b.kind == Kind.IDLE:
                run(self.process, b)
            dist.barrier()
""",
        ROUNDS,
    )


def test_a_fact_on_an_argument_survives_a_method_that_resets_it(tmp_path: Path):
    """The caller knows `work.kind == IDLE`; the callee first runs `work.advance()`, a method
    that reassigns `kind` (`Work.kind` is not stable), then tests it. The restated fact is
    trusted as if nothing could change it; a round fact on the same attribute would be shaky."""
    _assert_marked(
        tmp_path,
        KIND
        + """
class Work:
    def __init__(self):
        self.kind = Kind.IDLE

    def advance(self):
        self.kind = Kind.EXTEND

def run(work):
    work.advance()
    if work.kind == Kind.EXTEND:
        torch.cuda.synchronize()  # expect

def loop():
    while True:
        work = recv()
        if work.kind == Kind.IDLE:
            run(work)
        dist.barrier()
""",
        {"rounds": ["mod.loop"]},
    )
