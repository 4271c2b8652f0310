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
