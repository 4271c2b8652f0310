"""Error records and the one exception type that means "the user's input is unusable".

Analyses never raise for a bad file: they turn it into an `ErrorRecord` so the run goes on and
nothing is dropped quietly. `InputError` is for input the whole command cannot use (a bad flag,
config or ref) and maps to exit code 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import TracebackType


class InputError(Exception):
    """Input the command cannot proceed with; the message names the file, key, row or ref."""


@dataclass(frozen=True, order=True)
class ErrorRecord:
    """A file (or row, or ref) we could not use, kept so the report says so."""

    path: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


REPORT_HINT = "a bug in rankguard: please report it with this line and the command you ran"


def _analysed_function(tb: TracebackType | None) -> tuple[str, str] | None:
    """The innermost frame's local that names an analysed function (anything with a string
    `qualname` and `path`, as the model's function records have): the function the analysis
    was working on when it failed."""
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        for value in frame.f_locals.values():
            qualname, path = getattr(value, "qualname", None), getattr(value, "path", None)
            if isinstance(qualname, str) and isinstance(path, str):
                return qualname, path
    return None


def _raised_at(tb: TracebackType | None) -> str:
    """file:line of the innermost frame (where the exception was raised)."""
    last = None
    while tb is not None:
        last = tb
        tb = tb.tb_next
    if last is None:
        return "?"
    code = last.tb_frame.f_code
    return f"{Path(code.co_filename).name}:{last.tb_lineno}"


def internal_error(what: str, exc: BaseException) -> ErrorRecord:
    """One record for an exception that escaped `what` (a rule, a command): what failed, on
    which analysed function when one is known, the exception, where it was raised, and how to
    report it. Exit 2, never 1: exit 1 means findings, and a crash must not pass for them."""
    where = _analysed_function(exc.__traceback__)
    on = f" while analysing {where[0]}" if where else ""
    detail = f"{type(exc).__name__}: {exc}".strip().splitlines()[0]
    message = (
        f"internal error in {what}{on}: {detail} (at {_raised_at(exc.__traceback__)}); "
        f"{REPORT_HINT}"
    )
    return ErrorRecord(where[1] if where else ".", message)
