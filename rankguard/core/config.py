"""`[tool.rankguard]` configuration: discovery, validation and a stable digest.

The digest keys the rules' cached results (rules read config); summaries never depend on config,
so a changed setting re-runs the rules without re-parsing anything.
"""

from __future__ import annotations

import difflib
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

TABLE = "rankguard"

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
    "platforms",
)
# Keys whose value is a list of strings or of tables (catalog extensions).
_ENTRY_LIST_KEYS = ("blocking", "driver-terms")
KNOWN_KEYS = frozenset(_STRING_LIST_KEYS + _ENTRY_LIST_KEYS)


@dataclass(frozen=True)
class Config:
    """Validated settings; field names are the kebab-case keys in snake_case."""

    rounds: tuple[str, ...] = ()  # empty: discovered (analysis.discovery)
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
    platforms: tuple[str, ...] = ()  # empty: CUDA (catalogs.platforms)
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


def near_miss(data: dict[str, Any]) -> str | None:
    """A `[tool.X]` (or top-level `[X]`) table whose name looks like a misspelt `rankguard`."""
    tool = data.get("tool", {})
    names = [f"tool.{k}" for k in tool if isinstance(tool, dict) and k != TABLE]
    names += [k for k in data if k != "tool" and isinstance(data[k], dict)]
    for name in names:
        leaf = name.rsplit(".", 1)[-1].lower()
        if leaf != TABLE and difflib.SequenceMatcher(None, leaf, TABLE).ratio() >= 0.75:
            return name
    return None


def _table(data: dict[str, Any], path: Path, origin: str = "") -> dict[str, Any] | None:
    origin = origin or str(path)
    tool = data.get("tool", {})
    if isinstance(tool, dict) and TABLE in tool:
        table = tool[TABLE]
        if not isinstance(table, dict):
            raise InputError(f"{origin}: [tool.rankguard] must be a table")
        return table
    typo = near_miss(data)
    if typo is not None:
        raise InputError(
            f"{origin}: [{typo}] looks like a misspelling of [tool.rankguard]; "
            "rename the table (nothing in it is read)"
        )
    top = {k: v for k, v in data.items() if k != "tool"}
    return top if top and path.name != "pyproject.toml" else None


def load_file(path: Path) -> Config:
    """Read `[tool.rankguard]` from a TOML file given with `--config` (a pyproject.toml or a
    standalone file, which may also hold the keys at its top level).

    A file with no settings at all, or with a near-miss table name, is an error: a gate whose
    configuration is silently ignored passes what it should judge.
    """
    table = _table(_read_toml(path), path)
    if table is None:
        raise InputError(
            f"{path}: no [tool.rankguard] table (and no settings at the top level); "
            "add the table, or leave out --config to use the nearest pyproject.toml"
        )
    return Config(**_validate(table, str(path)), source=path.resolve())


def from_bytes(data: bytes, origin: str, source: Path) -> Config | None:
    """`[tool.rankguard]` of a pyproject.toml read from elsewhere than the disk (a revision's
    git objects), or None when it has no table; `origin` names it in messages (`REV:path`),
    `source` is where relative plugin paths would be taken from."""
    try:
        parsed = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"{origin}: TOML syntax error: {exc}") from exc
    table = _table(parsed, Path("pyproject.toml"), origin)
    if table is None:
        return None
    return Config(**_validate(table, origin), source=source)


def discover(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above `start` that has a [tool.rankguard] table."""
    here = start.resolve()
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file() and _table(_read_toml(candidate), candidate) is not None:
            return candidate
    return None


def load(config_file: Path | None, start: Path) -> Config:
    """`--config FILE` when given, else the nearest pyproject.toml above `start`, else defaults.

    `start` must exist: a misspelt path would otherwise analyse nothing and pass.
    """
    if config_file is not None:
        if not config_file.is_file():
            raise InputError(f"{config_file}: config file not found")
        return load_file(config_file)
    if not start.exists():
        raise InputError(f"{start}: no such file or folder")
    found = discover(start)
    return load_file(found) if found else Config()
