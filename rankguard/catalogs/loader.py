"""One loader for every catalog: shipped TOML files and the entries users add in config.

Catalogs are data, so the mistakes in them are data mistakes: a misspelt key, a guard that does
not exist, a string where a list belongs. Each catalog `NAME.toml` ships with a JSON Schema,
`schemas/NAME.schema.json`; the shipped file is checked against it once per process, and a
config entry is checked against the same schema's `$defs/entry`, so the user's table and the
shipped one cannot drift apart. A violation names the file (or config key), the entry and the
JSON path of the bad value.
"""

from __future__ import annotations

import json
import sys
from functools import cache
from importlib import resources
from typing import Any

import jsonschema

from rankguard.core.errors import InputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_PACKAGE = "rankguard.catalogs"


def shipped_catalogs() -> list[str]:
    """The names of every shipped catalog (`blocking` for `blocking.toml`)."""
    files = resources.files(_PACKAGE).iterdir()
    return sorted(f.name.removesuffix(".toml") for f in files if f.name.endswith(".toml"))


@cache
def _validator(name: str) -> jsonschema.protocols.Validator:
    schema_file = resources.files(_PACKAGE).joinpath("schemas", f"{name}.schema.json")
    if not schema_file.is_file():
        raise InputError(f"catalog {name}.toml has no schema (schemas/{name}.schema.json)")
    schema = json.loads(schema_file.read_text("utf-8"))
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema)


def _violations(validator: jsonschema.protocols.Validator, data: Any, where: str) -> None:
    errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        first = errors[0]
        at = "/".join(str(part) for part in first.absolute_path) or "(top level)"
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise InputError(f"{where}: at {at}: {first.message}{more}")


@cache
def load_catalog(name: str) -> dict[str, Any]:
    """The shipped catalog `NAME.toml`, validated against its schema (read once a process)."""
    text = resources.files(_PACKAGE).joinpath(f"{name}.toml").read_text("utf-8")
    data = tomllib.loads(text)
    _violations(_validator(name), data, f"catalog {name}.toml")
    return data


def check_entry(name: str, entry: Any, where: str) -> None:
    """A user's entry for catalog `name` (from config) must fit the catalog's entry schema."""
    validator = _validator(name)
    entry_schema = {**validator.schema["$defs"]["entry"], "$defs": validator.schema["$defs"]}
    _violations(type(validator)(entry_schema), entry, where)
