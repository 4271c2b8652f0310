"""Prose entries say what each hit is: comment, docstring, string argument, string, or a call
nothing recognises as an emitter (naming its callee, so the user can add it to `emitters`)."""

from __future__ import annotations

import textwrap

from rankguard.adapters.sources import SourceFile
from rankguard.analysis.inventory.prose import find_prose
from rankguard.analysis.inventory.sites import EmitSite

SOURCE = textwrap.dedent(
    '''\
    """Module doc: the queue overflowed badly."""
    import argparse

    # logger.error("the queue overflowed badly")
    KEYS = {"the queue overflowed badly": 1}


    def f(parser, d):
        """The queue overflowed badly, it says (not the same case)."""
        d.get("the queue overflowed badly")
        parser.error(
            "the queue overflowed badly"
        )
        # a wrapped comment: the queue
        # overflowed badly
    '''
)


def test_each_prose_hit_says_what_it_is():
    src = SourceFile("m.py", "m", SOURCE.encode())
    call = EmitSite(
        "m.py", 11, "m.f", "call", "parser.error", ((False, "the queue overflowed badly"),), 13
    )
    found = [
        (p.line, p.kind, p.callee) for p in find_prose("the queue overflowed badly", [src], [call])
    ]
    assert found == [
        (1, "docstring", ""),
        (4, "comment", ""),
        (5, "string", ""),
        (10, "string argument", "d.get"),
        (11, "call", "parser.error"),
        (14, "comment", ""),
    ]
    assert (
        str(find_prose("the queue overflowed badly", [src], [call])[4])
        == "m.py:11 (call `parser.error`)"
    )
