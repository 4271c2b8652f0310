"""What judges a pull request: configuration from the base revision, never from the head.

In CI the working tree is the pull request's head, so a config read from it lets the change
under review choose its own judge: drop the rounds it breaks, or name `plugins = [".x"]` and run
its own `x.py` inside the job. So `report` reads `[tool.rankguard]` from the base revision's git
objects (the nearest pyproject.toml with the table at or above `--subdir`), unless `--config`
names a file the user trusts. Plugins are code: one that would be imported from the analysed
repository (a relative `.x`, or a module found inside the repository) runs only with
`--allow-local-plugins` or when it comes from a trusted `--config`; otherwise the run stops with
exit 2 saying so, since a silently skipped rule reads as a clean result.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path, PurePosixPath

from rankguard.core.config import Config, from_bytes, load_file
from rankguard.core.errors import InputError
from rankguard.pipelines.report.sides import commit_of


def base_config(repo_path: Path, base_rev: str, subdir: str) -> Config:
    """`[tool.rankguard]` as the base revision has it (defaults when it has none)."""
    tree = commit_of(repo_path, base_rev).tree
    folder = PurePosixPath(subdir.strip("/")) if subdir.strip("/") else PurePosixPath()
    for here in (folder, *folder.parents):
        rel = (here / "pyproject.toml").as_posix()
        try:
            blob = tree / rel
        except KeyError:
            continue
        config = from_bytes(blob.data_stream.read(), f"{base_rev}:{rel}", repo_path / rel)
        if config is not None:
            return config
    return Config()


def _inside(path: str | None, root: Path) -> bool:
    if not path:
        return False
    try:
        Path(path).resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def local_plugins(config: Config, repo_path: Path) -> list[str]:
    """The config's plugins that would run code from the analysed repository."""
    out: list[str] = []
    for spec in config.plugins:
        if spec.startswith("."):
            out.append(spec)
            continue
        try:
            # The top-level name only: finding it imports nothing.
            found = importlib.util.find_spec(spec.split(".")[0])
        except (ImportError, ValueError):
            found = None
        origin = found.origin if found is not None else None
        locations = list(found.submodule_search_locations or []) if found is not None else []
        if _inside(origin, repo_path) or any(_inside(loc, repo_path) for loc in locations):
            out.append(spec)
    return out


def report_config(
    repo_path: Path, base_rev: str, subdir: str, config_file: Path | None, allow_local: bool
) -> Config:
    if config_file is not None:
        if not config_file.is_file():
            raise InputError(f"{config_file}: config file not found")
        return load_file(config_file)  # trusted: the user named it
    config = base_config(repo_path, base_rev, subdir)
    risky = local_plugins(config, repo_path)
    if risky and not allow_local:
        raise InputError(
            f"{base_rev}:pyproject.toml names plugins {', '.join(risky)}, code from the analysed "
            "repository; pass --allow-local-plugins to run them, or --config FILE to choose "
            "the configuration"
        )
    return config
