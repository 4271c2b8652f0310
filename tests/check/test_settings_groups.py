"""A nested settings group's field is not the top-level setting of
the same name (a draft model's own parallelism)."""

from __future__ import annotations

from pathlib import Path

from tests.check.test_blocking import _assert_marked

_PROGRAM = """
class Draft:
    def __init__(self):
        self.pp_size = 1
        self.disable_overlap = False

class Exec:
    def __init__(self):
        self.draft = Draft()
        self.pp_size = 1
        self.disable_overlap = False

_CFG = Exec()

def get_exec() -> Exec:
    return _CFG

def validate(cfg):
    if cfg.pp_size > 1:
        assert cfg.disable_overlap

def start():
    validate(_CFG)

class S:
    def event_loop_pp(self):
        while True:
            {body}
            dist.barrier()

    def event_loop_normal(self):
        while True:
            dist.barrier()

def run(s: S):
    if get_exec().pp_size > 1:
        s.event_loop_pp()
    else:
        s.event_loop_normal()
"""


def test_a_groups_field_is_not_the_derived_setting(tmp_path: Path):
    body = "if not get_exec().draft.disable_overlap:\n                time.sleep(1)  # expect"
    _assert_marked(tmp_path, _PROGRAM.replace("{body}", body), {"rounds": ["*.event_loop_*"]})


def test_a_groups_field_is_not_the_selecting_setting(tmp_path: Path):
    body = "if get_exec().draft.pp_size <= 1:\n                time.sleep(1)  # expect"
    _assert_marked(tmp_path, _PROGRAM.replace("{body}", body), {"rounds": ["*.event_loop_*"]})


_GROUPED = """
class Bag:
    def __init__(self, path):
        object.__setattr__(self, "_path", path)

    def __getattr__(self, name):
        return getattr(_FLAT, name)

class Flat:
    def __init__(self):
        self.pp_size = 1
        self.elastic_ep_backend = None

_FLAT = Flat()

def get_parallel() -> Bag:
    return Bag("parallel")

def get_exec() -> Bag:
    return Bag("exec")

def validate(cfg):
    if cfg.elastic_ep_backend is not None:
        assert cfg.pp_size == 1, "PP size should be 1 under elastic EP"

def start():
    validate(_FLAT)

class S:
    def step(self):
        if get_exec().moe.elastic_ep_backend is not None:
            time.sleep(1)  # expect

    def event_loop_pp(self):
        while True:
            self.step()
            dist.barrier()

    def event_loop_normal(self):
        while True:
            self.step()
            dist.barrier()

def run(s: S):
    if get_parallel().pp_size > 1:
        s.event_loop_pp()
    else:
        s.event_loop_normal()
"""


def test_a_field_only_one_group_holds_is_the_setting(tmp_path: Path):
    """`get_exec().moe.elastic_ep_backend`: the settings object the getter returns holds no
    `elastic_ep_backend` of its own and no other group has one, so the group's field is the
    validated setting, and the pipeline loop (`pp_size > 1`) runs without elastic EP."""
    findings = _assert_marked(tmp_path, _GROUPED, {"rounds": ["*.event_loop_*"]})
    assert [f.extra["round"].rsplit(".", 1)[-1] for f in findings] == ["event_loop_normal"]
