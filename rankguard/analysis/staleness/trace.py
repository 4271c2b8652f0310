"""What one evaluation of a function read and put, so a later round can replay it.

A function's evaluation (`Flows.result`) is a function of the table entries it reads (the
attributes, module globals and its own arguments the fixpoint has grown so far) and of the
returns of the functions it calls, asked in order; everything else it asks (targets, classes,
the catalog) is fixed for the run. It writes this round's new attributes, globals and callee
arguments, and composites. A `Trace` holds the entries read, the callees' returns as they were
answered, and the writes, in the order they were made.

The fixpoint stamps each table entry with the round at whose end it last changed; an evaluation
that saw the tables up to round `seen` still holds while no entry it read has a later stamp.
Replaying it asks its callees again in the same order (so every function a fresh evaluation
would reach is reached, in the same order) and compares their returns; on the first difference
the function is evaluated again (the writes made so far are joins of the same values: made
twice, they are made once).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rankguard.analysis.staleness.algebra import EMPTY, Val

# ("r", callee, its return as answered) | ("a" / "g", key, value) for attributes / globals |
# ("p", callee, ((parameter, value), ...)) | ("c", composite)
Entry = tuple[Any, ...]


@dataclass
class Trace:
    seen: int  # the rounds whose table changes the evaluation saw
    reads: set[tuple[str, Any]] = field(default_factory=set)  # ("a" | "g" | "p", table key)
    log: list[Entry] = field(default_factory=list)
    ret: Val = EMPTY
