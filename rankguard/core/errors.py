"""Error records and the one exception type that means "the user's input is unusable".

Analyses never raise for a bad file: they turn it into an `ErrorRecord` so the run goes on and
nothing is dropped quietly. `InputError` is for input the whole command cannot use (a bad flag,
config or ref) and maps to exit code 2.
"""

from __future__ import annotations

from dataclasses import dataclass


class InputError(Exception):
    """Input the command cannot proceed with; the message names the file, key, row or ref."""


@dataclass(frozen=True, order=True)
class ErrorRecord:
    """A file (or row, or ref) we could not use, kept so the report says so."""

    path: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}
