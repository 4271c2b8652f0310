"""Enum members: `Mode.IDLE` is an instance of `Mode` at run time, whatever the class body
assigns it (`IDLE = auto()`, `A = 0`). Read as the assigned value, a member was what `auto()`
returns or `enum.IntEnum`'s attribute of that name, so a method called on it (`mode.is_idle()`)
reached an outside function beside the enum's own, and no helper test could be read there."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rankguard.model.program import Program

_ENUM_BASES = frozenset(
    ("enum.Enum", "enum.IntEnum", "enum.StrEnum", "enum.Flag", "enum.IntFlag", "enum.ReprEnum")
)


class Enums:
    """Per program: which classes are enums, found once per class."""

    def __init__(self, program: Program) -> None:
        self.p = program
        self._enums: dict[str, bool] = {}

    def member(self, cls: str, attr: str) -> bool:
        """`attr` is a member of the enum `cls`, by the convention enums follow: an upper-case
        name, not private. The class body's attributes also hold annotations and methods made
        by a call (`client: Client`, `parse = staticmethod(f)`), which are no members."""
        return attr.isupper() and attr[:1] != "_" and self.enum(cls)

    def enum(self, cls: str) -> bool:
        """`cls` derives from one of `enum`'s member-making classes."""
        found = self._enums.get(cls)
        if found is None:
            classes = self.p.classes
            bases = (b for c in self.p.mro(cls) if c in classes for b in classes[c].external_bases)
            found = self._enums[cls] = any(b in _ENUM_BASES for b in bases)
        return found
