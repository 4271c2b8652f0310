"""How `rankguard check`'s PATH arguments become analysed roots and report filters.

A finding is a chain through many files, so analysing only the files a commit touches would
miss most of them (and pre-commit passes exactly those files). So:

- a folder argument is an analysed root: the whole program under it;
- a file argument inside an analysed root does not start an analysis of its own: it restricts
  that root's report to findings whose evidence (location, chain, blocking call, collective)
  touches one of the files given; a root with no file argument reports everything;
- with file arguments only (how pre-commit calls the hook), the analysed root is the folder of
  the configuration found above the first file (the nearest pyproject.toml with
  `[tool.rankguard]`), or the current folder with `--config` or no configuration at all;
- a file outside every root is analysed on its own, as a program of one file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from rankguard.core.config import Config

T = TypeVar("T")


@dataclass
class Target:
    root: Path
    files: set[str] | None = None  # posix paths relative to root; None: report everything

    def restrict(self, items: Iterable[T], key: Callable[[T], set[str]]) -> list[T]:
        if self.files is None:
            return list(items)
        return [item for item in items if not key(item).isdisjoint(self.files)]


def _inside(path: Path, root: Path) -> str | None:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def default_root(config: Config, explicit_config: bool) -> Path:
    if not explicit_config and config.source is not None:
        return config.source.parent
    return Path(".")


def plan_targets(paths: Sequence[Path], config: Config, explicit_config: bool) -> list[Target]:
    folders = [p for p in paths if p.is_dir()]
    files = [p for p in paths if not p.is_dir()]
    roots = folders or ([default_root(config, explicit_config)] if files else [Path(".")])
    targets = [Target(root) for root in roots]
    alone: list[Target] = []
    for path in files:
        owner = next(
            (t for t in targets if (rel := _inside(path, t.root)) is not None and rel != "."),
            None,
        )
        if owner is None:
            alone.append(Target(path))  # read_directory reads a file as a one-file tree
            continue
        rel = _inside(path, owner.root)
        assert rel is not None
        owner.files = {*(owner.files or set()), rel}
    if files and not folders:
        targets = [t for t in targets if t.files is not None]
    return targets + alone
