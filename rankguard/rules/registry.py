"""Which rules exist: the built-in ones, config plugins and the `rankguard.rules` entry points.

Built-in rules are every `Rule` subclass defined in a module of `rankguard/rules/`. A plugin is
a module path (`pkg.module`, imported normally) or a path relative to the config file's folder
(`.local_rules` -> `<folder>/local_rules.py` or `<folder>/local_rules/__init__.py`). A plugin
that cannot be imported stops the run with exit 2: a silently skipped rule would read as a clean
result.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
import sys
import traceback
from importlib import metadata
from pathlib import Path
from types import ModuleType

from rankguard import rules as rules_package
from rankguard.core.config import Config
from rankguard.core.errors import InputError
from rankguard.rules.base import Rule
from rankguard.rules.codes import check_codes

ENTRY_POINT_GROUP = "rankguard.rules"
_NOT_RULES = frozenset(("base", "catalog", "codes", "engine", "registry", "session"))


class RuleLoadError(InputError):
    """A rule module (built-in or plugin) could not be imported or is malformed."""


def _why(exc: BaseException) -> str:
    last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = f" ({last[0].filename}:{last[0].lineno})" if last else ""
    return f"{type(exc).__name__}: {exc}{where}"


def rules_in(module: ModuleType) -> list[type[Rule]]:
    """`Rule` subclasses defined in `module` itself (not imported into it)."""
    return [
        obj
        for _, obj in sorted(vars(module).items())
        if inspect.isclass(obj)
        and issubclass(obj, Rule)
        and obj is not Rule
        and obj.__module__ == module.__name__
        and isinstance(getattr(obj, "name", None), str)
    ]


def builtin_rules() -> list[type[Rule]]:
    found: list[type[Rule]] = []
    for info in sorted(pkgutil.iter_modules(rules_package.__path__), key=lambda m: m.name):
        if info.name in _NOT_RULES or info.name.startswith("_"):
            continue
        name = f"rankguard.rules.{info.name}"
        try:
            module = importlib.import_module(name)
        except Exception as exc:
            raise RuleLoadError(
                f"built-in rule module {name} failed to import: {_why(exc)}"
            ) from exc
        found.extend(rules_in(module))
    return found


def _import_local(spec_text: str, base: Path) -> ModuleType:
    relative = spec_text.lstrip(".")
    parts = relative.split(".")
    candidates = [base.joinpath(*parts).with_suffix(".py"), base.joinpath(*parts, "__init__.py")]
    path = next((c for c in candidates if c.is_file()), None)
    if path is None:
        tried = " or ".join(str(c) for c in candidates)
        raise RuleLoadError(f"plugin '{spec_text}': no such file ({tried})")
    name = f"rankguard_local_rules.{relative}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise RuleLoadError(f"plugin '{spec_text}' ({path}) failed to import: {_why(exc)}") from exc
    return module


def plugin_rules(config: Config) -> list[type[Rule]]:
    """Rules from config `plugins`, in the order given."""
    found: list[type[Rule]] = []
    for spec_text in config.plugins:
        if spec_text.startswith("."):
            base = config.base_dir or Path.cwd()
            module = _import_local(spec_text, base)
        else:
            try:
                module = importlib.import_module(spec_text)
            except Exception as exc:
                raise RuleLoadError(f"plugin '{spec_text}' failed to import: {_why(exc)}") from exc
        rules = rules_in(module)
        if not rules:
            raise RuleLoadError(f"plugin '{spec_text}' defines no Rule subclass with a name")
        found.extend(rules)
    return found


def entry_point_rules() -> list[type[Rule]]:
    """Rules that installed packages register under the `rankguard.rules` entry-point group."""
    found: list[type[Rule]] = []
    for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            obj = ep.load()
        except Exception as exc:
            raise RuleLoadError(
                f"entry point '{ep.name}' ({ep.value}) failed to load: {_why(exc)}"
            ) from exc
        if inspect.isclass(obj) and issubclass(obj, Rule):
            found.append(obj)
        elif isinstance(obj, ModuleType):
            found.extend(rules_in(obj))
        else:
            raise RuleLoadError(
                f"entry point '{ep.name}' ({ep.value}) is neither a Rule nor a module"
            )
    return found


def all_rules(config: Config | None = None) -> dict[str, type[Rule]]:
    """Every rule by name; two rules with one name are an error, not a silent override."""
    rules: dict[str, type[Rule]] = {}
    sources = [*builtin_rules(), *entry_point_rules(), *plugin_rules(config or Config())]
    for rule in sources:
        have = rules.get(rule.name)
        if have is not None and have is not rule:
            raise RuleLoadError(
                f"two rules are named '{rule.name}': {have.__module__}.{have.__qualname__} "
                f"and {rule.__module__}.{rule.__qualname__}"
            )
        rules[rule.name] = rule
    check_codes(rules.values())
    return dict(sorted(rules.items()))
