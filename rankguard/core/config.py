"""`[tool.rankguard]` configuration: discovery, validation and a stable digest.

The digest feeds the parse cache key, so a config change that could alter a summary invalidates
the cached summaries without touching unrelated state.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rankguard.core.errors import InputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

DEFAULT_ROUNDS = ("*.event_loop*",)

# Keys whose value is a list of strings.
_STRING_LIST_KEYS = (
    "rounds",
    "watchdog-hooks",
    "collectives",
    "non-blocking",
    "cadence-helpers",
    "emitters",
    "exclude",
    "plugins",
    "smaller-is-risky",
)
# Keys whose value is a list of strings or of tables (catalog extensions).
_ENTRY_LIST_KEYS = ("blocking", "driver-terms")
KNOWN_KEYS = frozenset(_STRING_LIST_KEYS + _ENTRY_LIST_KEYS)


@dataclass(frozen=True)
class Config:
    """Validated settings; field names are the kebab-case keys in snake_case."""

    rounds: tuple[str, ...] = DEFAULT_ROUNDS
    watchdog_hooks: tuple[str, ...] = ()
    collectives: tuple[str, ...] = ()
    blocking: tuple[Any, ...] = ()
    non_blocking: tuple[str, ...] = ()
    driver_terms: tuple[Any, ...] = ()
    cadence_helpers: tuple[str, ...] = ()
    emitters: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    plugins: tuple[str, ...] = ()
    smaller_is_risky: tuple[str, ...] = ()
    source: Path | None = field(default=None, compare=False)

    @property
    def base_dir(self) -> Path | None:
        """Folder that relative plugin paths and excludes are taken from."""
        return self.source.parent if self.source else None

    def digest(self) -> str:
        """A short stable hash of every setting (not of where it was read from)."""
        payload = {key: getattr(self, key.replace("-", "_")) for key in sorted(KNOWN_KEYS)}
        text = json.dumps(payload, sort_keys=True, default=list)
        return hashlib.sha1(text.encode()).hexdigest()[:16]


def _validate(table: dict[str, Any], origin: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in KNOWN_KEYS:
            known = ", ".join(sorted(KNOWN_KEYS))
            raise InputError(f"{origin}: unknown key '{key}' in [tool.rankguard] (known: {known})")
        if not isinstance(value, list):
            raise InputError(f"{origin}: '{key}' must be a list, got {type(value).__name__}")
        for item in value:
            ok = isinstance(item, str) or (key in _ENTRY_LIST_KEYS and isinstance(item, dict))
            if not ok:
                raise InputError(f"{origin}: '{key}' holds {item!r}, which is not a string")
        values[key.replace("-", "_")] = tuple(value)
    if "rounds" in values and not values["rounds"]:
        raise InputError(f"{origin}: 'rounds' is empty; give at least one pattern")
    return values


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise InputError(f"{path}: cannot read config: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: TOML syntax error: {exc}") from exc


def load_file(path: Path) -> Config:
    """Read `[tool.rankguard]` from a TOML file (a pyproject.toml or a standalone file).

    A standalone file may also hold the keys at its top level.
    """
    data = _read_toml(path)
    tool = data.get("tool", {})
    if isinstance(tool, dict) and "rankguard" in tool:
        table = tool["rankguard"]
    elif path.name == "pyproject.toml":
        table = {}
    else:
        table = {k: v for k, v in data.items() if k != "tool"}
    if not isinstance(table, dict):
        raise InputError(f"{path}: [tool.rankguard] must be a table")
    return Config(**_validate(table, str(path)), source=path.resolve())


def discover(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above `start` that has a [tool.rankguard] table."""
    here = start.resolve()
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            data = _read_toml(candidate)
            if "rankguard" in data.get("tool", {}):
                return candidate
    return None


def load(config_file: Path | None, start: Path) -> Config:
    """`--config FILE` when given, else the nearest pyproject.toml above `start`, else defaults."""
    if config_file is not None:
        if not config_file.is_file():
            raise InputError(f"{config_file}: config file not found")
        return load_file(config_file)
    found = discover(start)
    return load_file(found) if found else Config()
