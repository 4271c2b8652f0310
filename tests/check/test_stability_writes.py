"""Writes that land on the round's object after construction must
unsettle the fact the round is chosen under. Each case expects the DECODE-only sleep reported
(low confidence is fine); a missing finding means a feasible path was cut."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.check.test_blocking import _run

_BASE = """
class Mode:
    NULL = 0
    DECODE = 1

class S:
    def __init__(self, mode):
        self._init_mode(mode)
{init}

    def _init_mode(self, mode):
        self.mode = mode
{later}
    def event_loop_normal(self):
        while True:
            if self.mode == Mode.DECODE:
                time.sleep(1)
            dist.barrier()

def dispatch(s: S):
    if s.mode == Mode.NULL:
        s.event_loop_normal()
{extra}
"""

CASES = {
    # the helper is also called after construction
    "also-called-later": (
        "",
        "\n    def switch(self):\n        self._init_mode(Mode.DECODE)\n",
        "",
    ),
    # the helper is also a request handler, run later through a dispatch table
    "handler-table": (
        "    self.handlers = {'switch': self._init_mode}",
        "\n    def handle(self, kind, arg):\n        self.handlers[kind](arg)\n",
        "",
    ),
    # the helper handed to a thread / external registry runs later
    "thread-target": (
        "    self.t = threading.Thread(target=self._init_mode, args=(Mode.DECODE,))",
        "",
        "",
    ),
    # a partial of the helper, called later
    "partial": (
        "",
        "\n    def switch(self):\n        f = functools.partial(self._init_mode, Mode.DECODE)\n"
        "        f()\n",
        "",
    ),
    "setattr": ("", "\n    def switch(self):\n        setattr(self, 'mode', Mode.DECODE)\n", ""),
    "setattr-computed-name-on-self": (
        "",
        "\n    def switch(self, name):\n        setattr(self, name, Mode.DECODE)\n",
        "",
    ),
    "object-setattr": (
        "",
        "\n    def switch(self):\n        object.__setattr__(self, 'mode', Mode.DECODE)\n",
        "",
    ),
    "alias-of-self": (
        "",
        "\n    def switch(self):\n        s = self\n        s.mode = Mode.DECODE\n",
        "",
    ),
    "reinit": ("", "\n    def reset(self):\n        self.__init__(Mode.DECODE)\n", ""),
    "closure-in-init": (
        "    def on_switch():\n        self.mode = Mode.DECODE\n    self.cb = on_switch",
        "",
        "",
    ),
    "dict-of-self": (
        "",
        "\n    def switch(self):\n        self.__dict__['mode'] = Mode.DECODE\n",
        "",
    ),
    "typing-cast": (
        "",
        "",
        "\nimport typing\ndef switch(x):\n    typing.cast(S, x).mode = Mode.DECODE\n",
    ),
    "getattr-call": (
        "",
        "\n    def switch(self):\n        getattr(self, '_init_mode')(Mode.DECODE)\n",
        "",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_later_write_keeps_the_branch(tmp_path: Path, case: str):
    init, later, extra = CASES[case]
    body = _BASE.replace("{init}", init).replace("{later}", later).replace("{extra}", extra)
    _code, result = _run(tmp_path, body, {"rounds": ["*.event_loop_*"]})
    assert [f.extra["blocking"]["callee"] for f in result.findings] == ["time.sleep"], body


def test_a_helper_only_constructors_call_is_part_of_construction(tmp_path: Path):
    """`self._init_mode()` called only from `__init__` sets the mode once, as `__init__` does:
    the DECODE branch cannot run in the NULL loop."""
    body = _BASE.replace("{init}", "").replace("{later}", "").replace("{extra}", "")
    _code, result = _run(tmp_path, body, {"rounds": ["*.event_loop_*"]})
    assert result.findings == []


_DIRECT = """
import typing, weakref

class Mode:
    NULL = 0
    DECODE = 1

class S:
    def __init__(self, mode):
        self.mode = mode
        self.modes = [mode]
        self.flags = {"decode": False}
{later}
    def event_loop_normal(self):
        while True:
            if {read}:
                time.sleep(1)
            dist.barrier()

def dispatch(s: S):
    if {outer}:
        s.event_loop_normal()
{extra}
"""

DIRECT = {
    # a write through an external call's result (the object itself, re-typed)
    "typing-cast": (
        "",
        "self.mode == Mode.DECODE",
        "s.mode == Mode.NULL",
        "\ndef switch(x):\n    typing.cast(S, x).mode = Mode.DECODE\n",
    ),
    "weakref-proxy": (
        "\n    def switch(self):\n        p = weakref.proxy(self)\n        p.mode = Mode.DECODE\n",
        "self.mode == Mode.DECODE",
        "s.mode == Mode.NULL",
        "",
    ),
    # a property computed from state a method mutates
    "property": (
        "\n    @property\n    def current(self):\n        return self.modes[-1]\n"
        "\n    def switch(self):\n        self.modes.append(Mode.DECODE)\n",
        "self.current == Mode.DECODE",
        "s.current == Mode.NULL",
        "",
    ),
    # an item a method stores
    "subscript": (
        "\n    def switch(self):\n        self.flags['decode'] = True\n",
        "self.flags['decode']",
        "not s.flags['decode']",
        "",
    ),
}


@pytest.mark.parametrize("case", sorted(DIRECT))
def test_a_later_write_keeps_the_branch_direct(tmp_path: Path, case: str):
    later, read, outer, extra = DIRECT[case]
    body = (
        _DIRECT.replace("{later}", later)
        .replace("{read}", read)
        .replace("{outer}", outer)
        .replace("{extra}", extra)
    )
    _code, result = _run(tmp_path, body, {"rounds": ["*.event_loop_*"]})
    assert [f.extra["blocking"]["callee"] for f in result.findings] == ["time.sleep"], body


_ASSERTED = """
class Mode:
    NULL = 0
    DECODE = 1

class Base:
    def __init__(self, mode):
        self.mode = mode
        assert self.mode == Mode.NULL
{more}
    def event_loop_normal(self):
        while True:
            if self.mode == Mode.DECODE:
                time.sleep(1)
            dist.barrier()
{sub}
"""

ASSERTED = {
    # a construction helper run after the assert changes what it checked
    "helper-after-assert": (
        "        self._upgrade()\n\n    def _upgrade(self):\n        self.mode = Mode.DECODE\n",
        "",
    ),
    # a subclass's constructor runs after the base's assert
    "subclass-constructor": (
        "",
        "\nclass Decode(Base):\n    def __init__(self):\n        super().__init__(Mode.NULL)\n"
        "        self.mode = Mode.DECODE\n",
    ),
}


@pytest.mark.parametrize("case", sorted(ASSERTED))
def test_a_constructors_assert_is_undone_later_in_construction(tmp_path: Path, case: str):
    more, sub = ASSERTED[case]
    body = _ASSERTED.replace("{more}", more).replace("{sub}", sub)
    _code, result = _run(tmp_path, body, {"rounds": ["*.event_loop_*"]})
    assert [f.extra["blocking"]["callee"] for f in result.findings] == ["time.sleep"], body


_CLASS_ATTRIBUTE = """
class Mode:
    NULL = 0
    DECODE = 1

class S:
    mode = Mode.NULL

    def switch(self):
        type(self).mode = Mode.DECODE

    def event_loop_normal(self):
        while True:
            if self.mode == Mode.DECODE:
                time.sleep(1)
            dist.barrier()

def dispatch(s: S):
    if s.mode == Mode.NULL:
        s.event_loop_normal()
"""


def test_a_class_attribute_set_through_type_of_self(tmp_path: Path):
    """`type(self).mode = ...` is an external call's result to the model, yet it is `S`."""
    _code, result = _run(tmp_path, _CLASS_ATTRIBUTE, {"rounds": ["*.event_loop_*"]})
    assert [f.extra["blocking"]["callee"] for f in result.findings] == ["time.sleep"]


def test_reflection_on_an_untyped_receiver_with_a_computed_name_is_not_followed(tmp_path: Path):
    """An assumption, as for an unresolved call: `setattr(module, name, t)` on a value the
    model cannot type, with a name it cannot read, is not taken as writing every attribute of
    every object (which would leave no fact standing in a real program)."""
    extra = "\ndef load(module, name, t):\n    setattr(module, name, t)\n"
    body = _BASE.replace("{init}", "").replace("{later}", "").replace("{extra}", extra)
    _code, result = _run(tmp_path, body, {"rounds": ["*.event_loop_*"]})
    assert result.findings == []
