"""Branches a round cannot take are not walked: facts from the caller that selects the round,
constant arguments (and omitted defaults), asserts; calling a generator runs nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.check.test_blocking import _assert_marked, _run


def test_the_callers_branch_selecting_the_round_holds_inside_it(tmp_path: Path):
    findings = _assert_marked(
        tmp_path,
        """
        class Mode:
            NULL = 0
            DECODE = 1

        class S:
            def __init__(self, overlap, mode):
                self.enable_overlap = overlap
                self.mode = mode
                self.busy = False

            def drain(self):
                torch.cuda.synchronize()  # expect

            def event_loop_normal(self):
                while True:
                    if self.enable_overlap and self.busy:
                        self.drain()
                    if self.mode == Mode.DECODE:
                        time.sleep(1)
                    if self.mode != Mode.NULL:
                        gc.collect()
                    if self.busy:
                        open("x")  # expect
                    self.handle()
                    dist.barrier()

            def handle(self):
                if self.mode != Mode.DECODE:
                    return
                subprocess.run(["x"])

            def event_loop_overlap(self):
                while True:
                    self.drain()
                    dist.barrier()

            def poke(self):
                self.busy = True

        def dispatch(s: S):
            mode = s.mode
            if mode == Mode.NULL:
                if s.enable_overlap:
                    s.event_loop_overlap()
                else:
                    s.event_loop_normal()
        """,
        {"rounds": ["*.event_loop_*"]},
    )
    rounds = {f.extra["blocking"]["callee"]: f.extra["round"] for f in findings}
    assert rounds["torch.cuda.synchronize"].endswith("event_loop_overlap")


def test_reassigned_attributes_give_no_round_fact(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        class S:
            def __init__(self):
                self.enable_overlap = False

            def switch(self):
                self.enable_overlap = True

            def event_loop_normal(self):
                while True:
                    if self.enable_overlap:
                        torch.cuda.synchronize()  # expect
                    dist.barrier()

        def dispatch(s: S):
            if not s.enable_overlap:
                s.event_loop_normal()
        """,
        {"rounds": ["*.event_loop_*"]},
    )


def test_a_path_that_needs_the_round_fact_to_change_is_low_confidence(tmp_path: Path):
    """The loop runs with `mode == NULL`, but `switch` may reassign the mode mid-round, so a
    DECODE-only branch stays reported: with low confidence, saying which fact must change. A
    call the loop also reaches on a path that needs no such change keeps its confidence."""
    findings = _assert_marked(
        tmp_path,
        """
        class Mode:
            NULL = 0
            DECODE = 1

        class S:
            def __init__(self, mode):
                self.mode = mode
                self.busy = False

            def switch(self):
                self.mode = Mode.DECODE

            def poke(self):
                self.busy = True  # else construction's `False` decides `if self.busy:`

            def drain(self):
                subprocess.run(["x"])  # expect

            def event_loop_normal(self):
                while True:
                    if self.mode == Mode.DECODE:
                        time.sleep(1)  # expect
                        self.drain()
                    if self.busy:
                        self.drain()
                    dist.barrier()

        def dispatch(s: S):
            if s.mode == Mode.NULL:
                s.event_loop_normal()
        """,
        {"rounds": ["*.event_loop_*"]},
    )
    by_callee = {f.extra["blocking"]["callee"]: f.extra for f in findings}
    assert by_callee["time.sleep"]["confidence"] == "low"
    assert "self.mode" in by_callee["time.sleep"]["confidence_note"]
    assert by_callee["subprocess.run"]["confidence"] == "high"


def test_constant_arguments_and_omitted_defaults(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        def free_memory(device, distributed=False):
            free = torch.cuda.mem_get_info()  # expect
            if distributed:
                dist.all_reduce(free)
            return free

        def report(verbose, limit=None):
            if limit is not None and verbose:
                time.sleep(1)
            if verbose:
                gc.collect()  # expect

        def event_loop(flag):
            while True:
                free_memory(0)
                free_memory(1, distributed=False)
                report(True)
                report(False, 3)
                dist.barrier()
                x = free_memory(0, flag)
        """,
    )


def test_a_call_in_a_conditional_expression_runs_only_on_its_side(tmp_path: Path):
    """`x if no_copy else x.tolist()` copies only when `no_copy` is false, and `quiet or
    torch.cuda.synchronize()` syncs only when `quiet` is: a side the facts exclude is not
    walked, while the side they allow (or do not decide) still is."""
    _assert_marked(
        tmp_path,
        """
        def rows(x, no_copy=False):
            return x if no_copy else x.tolist()

        class S:
            def __init__(self, quiet):
                self.quiet = quiet

            def event_loop_normal(self):
                while True:
                    t = torch.ones(2, device="cuda")
                    rows(t, no_copy=True)
                    self.quiet or torch.cuda.synchronize()
                    self.quiet and time.sleep(1)  # expect
                    dist.barrier()

            def offline(self):
                rows(torch.ones(2, device="cuda"))

        def dispatch(s: S):
            if s.quiet:
                s.event_loop_normal()
        """,
        {"rounds": ["*.event_loop_*"]},
    )


def test_asserts_cut_paths(tmp_path: Path):
    _assert_marked(
        tmp_path,
        """
        class Offload:
            def __init__(self, mode):
                self.mode = mode
                assert self.mode == "decode"

            def check(self):
                if self.mode != "decode":
                    torch.cuda.synchronize()
                time.sleep(1)  # expect

        def event_loop(o: Offload, n):
            while True:
                o.check()
                assert n is None
                if n is not None:
                    gc.collect()
                dist.barrier()
        """,
    )


def test_calling_a_generator_function_runs_nothing(tmp_path: Path):
    findings = _assert_marked(
        tmp_path,
        """
        def chunks():
            torch.cuda.synchronize()  # expect
            yield 1

        class R:
            def reset(self):
                self.it = chunks()

        def event_loop(r: R):
            while True:
                r.reset()
                g = chunks()
                dist.barrier()
                for c in chunks():
                    pass
                dist.all_reduce(None)
        """,
    )
    # Only the `for` advances the generator: its wait comes before the all_reduce, never the
    # barrier that follows the calls that merely create it.
    assert [f.extra["collective"]["callee"] for f in findings] == ["torch.distributed.all_reduce"]


_TWO_LOOPS = """
    class S:
        def __init__(self):
            self.{member} = {cls}()

        def event_loop_normal(self):
            while True:
{calls}
                dist.barrier()

        def event_loop_pp(self):
            while True:
{calls}
                dist.barrier()

    def dispatch(s: S):
        if {getter}().pp_size > 1:
            s.event_loop_pp()
        else:
            s.event_loop_normal()
"""


def _two_loops(cls: str, member: str, *methods: str, getter: str = "get_config") -> str:
    """A scheduler whose normal and pipeline loops both call `self.<member>.<method>()`,
    the pipeline loop chosen on `<getter>().pp_size > 1`."""
    calls = "\n".join(f"                self.{member}.{m}()" for m in methods)
    return _TWO_LOOPS.format(cls=cls, member=member, calls=calls, getter=getter)


_GRAMMAR_COPIES_A_SETTING = """
    def get_config():
        return None

    class Grammar:
        def __init__(self):
            self.pp_size = get_config().pp_size

        def sync(self):
            if self.pp_size <= 1:
                return
            torch.cuda.synchronize()  # expect
""" + _two_loops("Grammar", "grammar", "sync")


def test_global_settings_copied_by_a_constructor(tmp_path: Path):
    findings = _assert_marked(tmp_path, _GRAMMAR_COPIES_A_SETTING, {"rounds": ["*.event_loop_*"]})
    assert [f.extra["round"].rsplit(".", 1)[-1] for f in findings] == ["event_loop_pp"]


def test_an_attribute_of_the_same_name_on_an_unrelated_class_does_not_unsettle_it(
    tmp_path: Path,
):
    """Stability is per class: a store that sets its own `pp_size` later, or a class whose
    `pp_size` is a property, cannot change the grammar's copy of the setting."""
    findings = _assert_marked(
        tmp_path,
        _GRAMMAR_COPIES_A_SETTING
        + """
    class Store:
        def __init__(self):
            self.pp_size = 1

        def configure(self, n):
            self.pp_size = n

    class Topology:
        @property
        def pp_size(self):
            return len(self.stages)
    """,
        {"rounds": ["*.event_loop_*"]},
    )
    assert [f.extra["round"].rsplit(".", 1)[-1] for f in findings] == ["event_loop_pp"]


@pytest.mark.parametrize(
    "writer",
    [
        # a subclass's method runs on the same object
        """
    class BigGrammar(Grammar):
        def resize(self, n):
            self.pp_size = n
    """,
        # a sibling mixin of a class derived from it runs on the same object
        """
    class Resizer:
        def resize(self, n):
            self.pp_size = n

    class Both(Resizer, Grammar):
        pass
    """,
        # a write through a receiver of unknown class may land on a grammar
        """
    def resize(thing, n):
        thing.pp_size = n
    """,
    ],
    ids=["subclass", "mixin-sibling", "unknown-receiver"],
)
def test_a_write_that_may_reach_the_object_unsettles_its_attribute(tmp_path: Path, writer: str):
    findings = _run(tmp_path, _GRAMMAR_COPIES_A_SETTING + writer, {"rounds": ["*.event_loop_*"]})[
        1
    ].findings
    rounds = sorted(f.extra["round"].rsplit(".", 1)[-1] for f in findings)
    assert rounds == ["event_loop_normal", "event_loop_pp"]


_RANK_READ_BY_A_RECEIVER = """
    def get_config():
        return None

    class Receiver:
        def __init__(self):
            self.pp_rank = get_config().pp_rank

        def pull(self):
            if get_config().pp_rank == 0:
                return []
            time.sleep(1)  # expect

        def forward(self):
            if self.pp_rank > 0:
                subprocess.run(["x"])  # expect
""" + _two_loops("Receiver", "receiver", "pull", "forward")


def test_a_dimension_of_one_rank_has_only_rank_zero(tmp_path: Path):
    """With `pp_size <= 1` known in the round, `pp_rank` (read through the same receiver, or
    copied by a constructor) is 0: a later pipeline stage's receive is not on the path."""
    findings = _assert_marked(
        tmp_path,
        _RANK_READ_BY_A_RECEIVER,
        {"rounds": ["*.event_loop_*"]},
    )
    assert {f.extra["round"].rsplit(".", 1)[-1] for f in findings} == {"event_loop_pp"}


def test_a_callable_argument_binds_per_call_site(tmp_path: Path):
    """A helper that calls what it is handed runs, on each path, what that call site hands it
    (a bound method, a lambda), not what every other caller hands it."""
    _assert_marked(
        tmp_path,
        """
        class Handler:
            def step(self, post):
                post()

        class Quiet:
            def __init__(self):
                self.handler = Handler()

            def tick(self):
                self.handler.step(self._note)

            def _note(self):
                pass

        class Slow:
            def __init__(self):
                self.handler = Handler()

            def tick(self):
                self.handler.step(self._write)

            def _write(self):
                time.sleep(1)

        class Lambdas:
            def __init__(self):
                self.handler = Handler()

            def quiet(self):
                self.handler.step(lambda: None)

            def slow(self):
                self.handler.step(lambda: subprocess.run(["x"]))  # expect

        class S:
            def __init__(self):
                self.quiet = Quiet()
                self.slow = Slow()
                self.lambdas = Lambdas()

            def event_loop_normal(self):
                while True:
                    self.quiet.tick()
                    self.lambdas.quiet()
                    self.lambdas.slow()
                    dist.barrier()

        def offline(s: S):
            s.slow.tick()
        """,
        {"rounds": ["*.event_loop_*"]},
    )


def test_a_group_of_one_rank_is_not_a_path_a_straggler_takes(tmp_path: Path):
    """`if world_size == 1: return` skips the collective only where nobody could wait: the
    sleep before `tp_all_reduce` waits for its all_reduce, not also for the barrier after."""
    _, result = _run(
        tmp_path,
        """
        class Group:
            def __init__(self, ranks):
                self.world_size = len(ranks)

            def all_reduce(self, x):
                if self.world_size == 1:
                    return x
                dist.all_reduce(x)
                return x

        def tp_all_reduce(x):
            if dist.get_world_size() <= 1:
                return x
            dist.all_reduce(x)
            return x

        def quiet_reduce(x, quiet):
            if quiet and dist.get_world_size() == 1:
                return x
            dist.all_reduce(x)
            return x

        def pipeline_barrier(pp_size):
            if pp_size == 1:
                dist.barrier()

        def event_loop(group: Group, quiet, pp_size):
            while True:
                subprocess.run(["x"])
                pipeline_barrier(pp_size)  # one stage is an ordinary setting, not a lone rank
                time.sleep(1)
                tp_all_reduce(None)
                gc.collect()
                group.all_reduce(None)
                open("x")
                quiet_reduce(None, quiet)
                dist.barrier()
        """,
        include_round_tail=False,
    )
    paired = {
        f.extra["blocking"]["callee"]: sorted(
            c["chain"][-1]["function"] for c in f.extra["collectives"]
        )
        for f in result.findings
    }
    assert paired == {
        "time.sleep": ["mod.tp_all_reduce"],
        "gc.collect": ["mod.Group.all_reduce"],
        # inside `and`: decided by the facts' own evaluation, like any other condition
        "open": ["mod.quiet_reduce"],
        "subprocess.run": ["mod.pipeline_barrier", "mod.tp_all_reduce"],
    }


VALIDATED = """
    class Config:
        def __init__(self):
            self.pp_size = 1
            self.disable_overlap = False

    _CFG = Config()

    def get_parallel() -> Config:
        return _CFG

    def get_schedule() -> Config:
        return _CFG

    def check_pipeline(cfg):
        assert cfg.disable_overlap, "pipeline parallelism needs overlap scheduling off"

    def validate(cfg):
        if cfg.pp_size > 1:
            check_pipeline(cfg)
        if cfg.pp_size > 2:
            assert cfg.chunked
        if cfg.eager and cfg.pp_size > 1:
            raise ValueError("eager mode runs one stage")
        if cfg.legacy:
            check_legacy(cfg)
        if cfg.pp_size > 1:
            ok = cfg.fast or check_spill(cfg)  # runs only when not fast

    def check_spill(cfg):
        assert not cfg.spill
        return True

    def model_hook(cfg):  # run from a registry, for one model
        assert cfg.spill

    def check_legacy(cfg):
        if cfg.pp_size > 1:
            assert not cfg.fused

    def start():
        validate(_CFG)

    class S:
        def __init__(self):
            self.enable_overlap = not get_schedule().disable_overlap
            self.busy = False

        def poke(self):
            self.busy = True

        def event_loop_pp(self):
            while True:
                if self.enable_overlap and self.busy:
                    torch.cuda.synchronize()  # {overlap}
                if not get_schedule().disable_overlap:
                    time.sleep(1)  # {overlap}
                if not get_schedule().chunked:
                    open("x")  # expect
                if get_schedule().eager:
                    gc.collect()  # {overlap}
                if get_schedule().fused:
                    subprocess.run(["x"])  # expect
                if get_schedule().spill:
                    zmq.Context().socket(zmq.PULL).recv()  # expect
                else:
                    queue.Queue().get()  # expect
                dist.barrier()

    def run(s: S):
        if {guard}:
            s.event_loop_pp()
"""


@pytest.mark.parametrize(
    ("guard", "overlap"),
    [("get_parallel().pp_size > 1", "not walked"), ("get_parallel().pp_size == 1", "expect")],
)
def test_what_the_configuration_validation_asserts_holds_in_the_round(
    tmp_path: Path, guard: str, overlap: str
):
    """The launcher picks the pipeline loop on `pp_size > 1`, and start-up validation asserts
    that pipelining runs with overlap scheduling off (and raises on eager mode): the loop's
    overlap and eager branches cannot run, though it reads the settings through other getters.
    An implication whose premise the round does not know (`pp_size > 2`) decides nothing, and
    neither does a check that runs only in some mode (`if cfg.legacy: check_legacy(cfg)`), one
    that short-circuits (`cfg.fast or check_spill(cfg)`), or one under no condition at all
    (`model_hook`: a registry may run it for one model only)."""
    _assert_marked(
        tmp_path,
        VALIDATED.format(guard=guard, overlap=overlap),
        {"rounds": ["*.event_loop_pp"]},
    )


_ELASTIC_EP_VALIDATED = """
    class Exec:
        def __init__(self):
            self.elastic_ep_backend = None
            self.pp_size = 1

    _CFG = Exec()

    def get_exec() -> Exec:
        return _CFG

    def validate(cfg):
        if cfg.elastic_ep_backend is not None:
            assert cfg.pp_size == 1, "PP size should be 1 under elastic EP"

    def start():
        validate(_CFG)

    class Runner:
        def __init__(self):
            self.elastic = get_exec().elastic_ep_backend is not None

        def forward(self):
            if self.elastic:
                time.sleep(1)  # expect
""" + _two_loops("Runner", "runner", "forward", getter="get_exec")


_DIRECT_START = "    def start():\n        validate(_CFG)\n"


def _started(start: str) -> str:
    """The elastic-EP program with its launcher's `start()` replaced."""
    validated = _ELASTIC_EP_VALIDATED.replace(_DIRECT_START, start)
    assert validated != _ELASTIC_EP_VALIDATED
    return validated


def test_what_the_validation_asserts_holds_backwards_too(tmp_path: Path):
    """`if cfg.elastic_ep_backend is not None: assert cfg.pp_size == 1`: the pipeline loop
    (`pp_size > 1`) therefore runs without elastic EP, which a runner reads through a getter
    (`get_exec().elastic_ep_backend`) and keeps as `self.elastic`. The
    normal loop knows nothing of elastic EP and keeps the branch."""
    findings = _assert_marked(
        tmp_path,
        _ELASTIC_EP_VALIDATED,
        {"rounds": ["*.event_loop_*"]},
    )
    assert [f.extra["round"].rsplit(".", 1)[-1] for f in findings] == ["event_loop_normal"]


def test_a_receiver_of_known_class_runs_its_own_overrides(tmp_path: Path):
    """`FLAG = Plain(None)` is exactly a `Plain`: `FLAG.get()` runs the base's `get`, whose
    `self.parse()` is `Plain.parse`, not every subclass's override (class-hierarchy analysis
    alone unions them). A receiver of another known class, or of a declared one (which may be
    any subclass), keeps the overrides it may run."""
    _, result = _run(
        tmp_path,
        """
        class Field:
            def __init__(self, default):
                self.default = default

            def get(self):
                return self.parse(self.default)  # each subclass defines parse

        class Plain(Field):
            def parse(self, value):
                return str(value)

        class FromFile(Field):
            def parse(self, value):
                with open(value) as f:
                    return f.read()

        FLAG = Plain(None)
        PATH = FromFile("x")

        def read(field: Field):
            return field.get()

        class S:
            def event_loop_known(self):
                while True:
                    FLAG.get()
                    local = Plain(1)
                    local.get()
                    dist.barrier()

            def event_loop_file(self):
                while True:
                    PATH.get()
                    dist.barrier()

            def event_loop_declared(self, field: Field):
                while True:
                    read(field)
                    dist.barrier()
        """,
        {"rounds": ["*.event_loop_*"]},
    )
    rounds = sorted(f.extra["round"].rsplit(".", 1)[1] for f in result.findings)
    assert rounds == ["event_loop_declared", "event_loop_file"]


_RUN_HOOK = """
    _HOOKS = {}

    def _bind(fn, previous):
        def wrapped(server_args):
            fn(server_args, previous)

        return wrapped

    def run_hook(builtin, server_args):
        step = builtin
        for fn in _HOOKS.get(builtin.__name__, ()):
            step = _bind(fn, step)
        step(server_args)

    def start():
        run_hook(validate, _CFG)
"""


def test_a_validation_step_run_through_a_local_copy_of_a_parameter(tmp_path: Path):
    """`step = builtin; ...; step(server_args)`: the local holds what the parameter does, so
    the validation function a launcher hands to its hook runner is called there, and what it
    asserts holds in the round as if it were called directly."""
    validated = _started(_RUN_HOOK)
    findings = _assert_marked(tmp_path, validated, {"rounds": ["*.event_loop_*"]})
    assert [f.extra["round"].rsplit(".", 1)[-1] for f in findings] == ["event_loop_normal"]


def test_what_a_validation_asserts_past_its_early_return(tmp_path: Path):
    """`if cfg.elastic_ep_backend is None: return` and then `assert cfg.pp_size == 1`: the
    assert holds wherever the early return was not taken, as if it sat under the opposite
    test."""
    early = (
        "    def validate(cfg):\n"
        "        if cfg.elastic_ep_backend is None:\n"
        "            return\n"
        "        assert cfg.pp_size == 1, 'PP size should be 1 under elastic EP'\n"
    )
    nested = (
        "    def validate(cfg):\n"
        "        if cfg.elastic_ep_backend is not None:\n"
        '            assert cfg.pp_size == 1, "PP size should be 1 under elastic EP"\n'
    )
    validated = _ELASTIC_EP_VALIDATED.replace(nested, early)
    assert validated != _ELASTIC_EP_VALIDATED
    findings = _assert_marked(tmp_path, validated, {"rounds": ["*.event_loop_*"]})
    assert [f.extra["round"].rsplit(".", 1)[-1] for f in findings] == ["event_loop_normal"]


def test_a_hook_runner_run_under_a_condition_elsewhere_still_runs_this_step(tmp_path: Path):
    """The hook runner runs other steps only in some modes (`if legacy: run_hook(...)`);
    what it runs for this step depends on the call that hands this step over, which runs
    unconditionally, so the step's asserts still hold."""
    guarded_too = _RUN_HOOK.replace(
        "        run_hook(validate, _CFG)\n",
        "        run_hook(validate, _CFG)\n"
        "        if _CFG.legacy:\n"
        "            run_hook(legacy_step, _CFG)\n"
        "\n"
        "    def legacy_step(cfg):\n"
        "        pass\n",
    )
    assert guarded_too != _RUN_HOOK
    validated = _started(guarded_too)
    findings = _assert_marked(tmp_path, validated, {"rounds": ["*.event_loop_*"]})
    assert [f.extra["round"].rsplit(".", 1)[-1] for f in findings] == ["event_loop_normal"]


def test_what_a_validation_skipped_by_an_early_return_asserts_is_a_doubt(tmp_path: Path):
    """The launcher validates only past `if cfg.model_path == "dummy": return`, a real mode:
    with a dummy model elastic EP may run in the pipeline loop, so its branch stays walked.
    But it runs there only in the mode the validation is skipped in, so the pipeline loop's
    finding is low confidence and says which check and which early return; the normal loop,
    whose facts imply nothing here, keeps its finding as it was."""
    skipped = (
        "    def start():\n"
        '        if _CFG.model_path == "dummy":\n'
        "            return\n"
        "        validate(_CFG)\n"
    )
    _assert_pipeline_loop_doubted(tmp_path, _started(skipped), "model_path", "`validate`")


def _assert_pipeline_loop_doubted(tmp_path: Path, code: str, *named: str) -> None:
    """Both loops report the elastic-EP finding: the normal loop as it was, the pipeline loop
    at low confidence with a note naming each of `named`."""
    _, result = _run(tmp_path, code, {"rounds": ["*.event_loop_*"]})
    by_round = {f.extra["round"].rsplit(".", 1)[-1]: f for f in result.findings}
    assert sorted(by_round) == ["event_loop_normal", "event_loop_pp"]
    assert by_round["event_loop_normal"].extra["confidence"] == "high"
    doubted = by_round["event_loop_pp"]
    assert doubted.extra["confidence"] == "low"
    assert all(name in doubted.extra["confidence_note"] for name in named)


def test_a_validation_in_a_try_whose_handler_re_raises_still_holds(tmp_path: Path):
    """`try: validate(cfg) except BaseException: mark_failed(); raise`: the launch goes on
    only if the validation passed, so what it asserts holds in the round; a handler that
    swallows the error leaves the launch going on without it."""
    re_raised = (
        "    def start():\n"
        "        try:\n"
        "            validate(_CFG)\n"
        "        except BaseException:\n"
        "            _CFG.failed = True\n"
        "            raise\n"
        "        finally:\n"
        "            _CFG.frozen = False\n"
    )
    validated = _started(re_raised)
    findings = _assert_marked(tmp_path, validated, {"rounds": ["*.event_loop_*"]})
    assert [f.extra["round"].rsplit(".", 1)[-1] for f in findings] == ["event_loop_normal"]
    swallowed = validated.replace("            raise\n", "            pass\n")
    _, result = _run(tmp_path, swallowed, {"rounds": ["*.event_loop_*"]})
    rounds = sorted(f.extra["round"].rsplit(".", 1)[-1] for f in result.findings)
    assert rounds == ["event_loop_normal", "event_loop_pp"]


def test_a_skipped_check_reached_through_a_helper_is_named_by_the_helper(tmp_path: Path):
    """`validate` returns early for a dummy model before it calls `check_pp`, whose opening
    assert is the implication: the note names `check_pp` and the early return."""
    code = _ELASTIC_EP_VALIDATED.replace(
        "    def validate(cfg):\n"
        "        if cfg.elastic_ep_backend is not None:\n"
        '            assert cfg.pp_size == 1, "PP size should be 1 under elastic EP"\n',
        "    def validate(cfg):\n"
        "        assert cfg.tp_size >= 1\n"
        '        if cfg.model_path == "dummy":\n'
        "            return\n"
        "        if cfg.elastic_ep_backend is not None:\n"
        "            check_pp(cfg)\n"
        "\n"
        "    def check_pp(cfg):\n"
        '        assert cfg.pp_size == 1, "PP size should be 1 under elastic EP"\n',
    )
    assert "check_pp" in code
    _, result = _run(tmp_path, code, {"rounds": ["*.event_loop_*"]})
    notes = [f.extra["confidence_note"] for f in result.findings if f.extra["confidence"] == "low"]
    assert len(notes) == 1
    assert "`check_pp`" in notes[0] and "model_path" in notes[0]


def test_a_finally_that_returns_swallows_the_failed_validation(tmp_path: Path):
    """`try: validate(cfg) finally: return`: a failed validation is dropped and the launch
    goes on, so nothing it asserts holds."""
    swallowing = (
        "    def start():\n"
        "        try:\n"
        "            validate(_CFG)\n"
        "        finally:\n"
        "            return\n"
    )
    _, result = _run(tmp_path, _started(swallowing), {"rounds": ["*.event_loop_*"]})
    rounds = sorted(f.extra["round"].rsplit(".", 1)[-1] for f in result.findings)
    assert rounds == ["event_loop_normal", "event_loop_pp"]


_ALSO_UNDER_A_WITH = (
    "    def start():\n"
    "        validate(_CFG)\n"
    "\n"
    "    def relaunch(ctx):\n"
    "        with ctx:\n"
    "            start()\n"
)


def test_a_validation_some_launch_reaches_only_conditionally_is_a_doubt(tmp_path: Path):
    """A second launcher reaches the validation only inside a `with` (something other than a
    setting decides whether it runs), so a launch may start the round without it: elastic EP
    stays walked in the pipeline loop, but that finding is low confidence and names the check
    and the conditional call; the normal loop keeps its finding as it was."""
    code = _started(_ALSO_UNDER_A_WITH)
    _assert_pipeline_loop_doubted(tmp_path, code, "`validate`", "`mod.relaunch`")


def test_a_validation_run_only_in_a_mode_the_settings_choose_decides_nothing(tmp_path: Path):
    """`if _CFG.legacy: start()`: what the validation asserts holds only in legacy mode, which
    the round does not know, so it neither cuts nor doubts the pipeline loop's path."""
    legacy = _ALSO_UNDER_A_WITH.replace("        with ctx:\n", "        if _CFG.legacy:\n").replace(
        "    def relaunch(ctx):\n", "    def relaunch():\n"
    )
    _, result = _run(tmp_path, _started(legacy), {"rounds": ["*.event_loop_*"]})
    confidence = {
        f.extra["round"].rsplit(".", 1)[-1]: f.extra["confidence"] for f in result.findings
    }
    assert confidence == {"event_loop_normal": "high", "event_loop_pp": "high"}


@pytest.mark.parametrize(
    "launcher",
    [
        "    def relaunch(tries):\n        for _ in range(tries):\n            start()\n",
        "    def relaunch():\n        try:\n            start()\n        except OSError:\n"
        "            pass\n",
        "    def relaunch(ready):\n        if not ready:\n            start()\n",
    ],
    ids=["loop", "try", "if-on-one-path"],
)
def test_a_validation_a_second_launcher_may_pass_by_is_a_doubt(tmp_path: Path, launcher: str):
    """`launch()` validates whenever it starts; a second launcher reaches the validation in a
    loop that may not run, a `try` that swallows the failure, or under an `if` the first does
    without: the pipeline loop's path is doubted, not cut and not trusted."""
    code = _started(
        "    def start():\n        validate(_CFG)\n\n    def launch():\n        start()\n\n"
        + launcher
    )
    _assert_pipeline_loop_doubted(tmp_path, code, "`validate`", "`mod.relaunch`")


def test_a_step_handed_to_a_runner_only_in_a_mode_decides_nothing(tmp_path: Path):
    """`if _CFG.legacy: run_hook(validate, _CFG)`: the runner runs this step only in legacy
    mode (the runner's other, unconditional callers hand it other steps)."""
    moded = _RUN_HOOK.replace(
        "    def start():\n        run_hook(validate, _CFG)\n",
        "    def start():\n        run_hook(other_step, _CFG)\n        if _CFG.legacy:\n"
        "            run_hook(validate, _CFG)\n\n    def other_step(cfg):\n        pass\n",
    )
    assert moded != _RUN_HOOK
    _, result = _run(tmp_path, _started(moded), {"rounds": ["*.event_loop_*"]})
    confidence = {
        f.extra["round"].rsplit(".", 1)[-1]: f.extra["confidence"] for f in result.findings
    }
    assert confidence == {"event_loop_normal": "high", "event_loop_pp": "high"}


_BUILDERS = """
class Builder:
    def load(self):
        return self.jit_load()

    def jit_load(self):
        if not self.check():
            return None
        return 1

    def check(self):
        return True

class Noisy(Builder):
    def check(self):
        return subprocess.run(["lscpu"]).returncode == 0  # expect
"""


def test_a_receiver_built_in_the_call_runs_its_own_class_overrides(tmp_path: Path):
    """`Quiet().load()` calls a method on an object the call builds: exactly a `Quiet`, so the
    base's `load` -> `self.check()` runs `Quiet`'s MRO (the base's `check`), not a sibling
    subclass's override that shells out. An object a factory returns (`made(flag).load()`)
    is not told by this rule, and a sibling built the same way keeps its override."""
    rest = """
class Quiet(Builder):
    pass

handle = None

def get_handle():
    global handle
    if handle is None:
        handle = Quiet().load()
    return handle

def made(flag):
    if flag:
        return Noisy()
    return Quiet()

class S:
    def event_loop_quiet(self):
        while True:
            get_handle()
            dist.barrier()

    def event_loop_noisy(self):
        while True:
            Noisy().load()
            dist.barrier()

    def event_loop_made(self, flag):
        while True:
            made(flag).load()
            dist.barrier()
"""
    _, result = _run(tmp_path, _BUILDERS + rest, {"rounds": ["*.event_loop_*"]})
    rounds = sorted(f.extra["round"].rsplit(".", 1)[1] for f in result.findings)
    assert rounds == ["event_loop_made", "event_loop_noisy"]


_LOOP = """
class S:
    def event_loop_x(self, flag):
        while True:
            Quiet(flag).load()
            dist.barrier()
"""


@pytest.mark.parametrize(
    "quiet",
    [
        "class Quiet(Builder):\n    def __new__(cls, noisy=False):\n"
        "        return Noisy() if noisy else super().__new__(cls)\n",
        "class Quiet(Builder):\n    pass\ntry:\n    import fastlib\n    Quiet = Noisy\n"
        "except ImportError:\n    pass\n",
        "def swap(cls):\n    return Noisy\n@swap\nclass Quiet(Builder):\n    pass\n",
        "class Quiet(Builder):\n    pass\nQuiet.check = Noisy.check\n",
        "class Meta(type):\n    def __call__(cls, *a):\n        return Noisy()\n"
        "class Quiet(Builder, metaclass=Meta):\n    pass\n",
        "class Quiet(Builder):\n    def __init__(self, flag):\n        self.__class__ = Noisy\n",
    ],
    ids=["new", "rebound", "decorator", "patched", "metaclass", "class-assigned"],
)
def test_a_class_called_by_name_that_may_build_another_is_not_exact(tmp_path: Path, quiet: str):
    """`Quiet(flag).load()` is exactly a `Quiet` only where calling the class by name surely
    builds one with its own methods (a review's programs, each dropped the `lscpu` probe)."""
    _assert_marked(tmp_path, _BUILDERS + quiet + _LOOP, {"rounds": ["*.event_loop_*"]})
