"""Where Python sources come from: a directory tree or a git revision, never executed.

Both produce the same `SourceTree`, so every analysis runs unchanged on a working tree, a pinned
commit or a bare repository. Module names come from the package structure: a folder that holds
the top package (sglang's `python/`, an unpacked wheel) needs no configuration.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from rankguard.core.errors import ErrorRecord, InputError

# Folders that never hold code under analysis.
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "build",
        "dist",
        "node_modules",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".eggs",
        "site-packages",
        ".rankguard_cache",
    }
)
PY_SUFFIXES = (".py", ".pyi")


def blob_id(data: bytes) -> str:
    """The git blob id of `data`: the content hash the parse cache is keyed by."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass(frozen=True)
class SourceFile:
    path: str  # posix, relative to the tree's root
    module: str
    data: bytes = field(repr=False)
    blob: str = ""


@dataclass
class SourceTree:
    root: str  # what the paths are relative to, for messages
    files: list[SourceFile]
    errors: list[ErrorRecord]
    revision: str | None = None


def is_excluded(relpath: str, patterns: Iterable[str]) -> bool:
    """fnmatch `relpath` or any of its parent folders against the exclude patterns."""
    parts = PurePosixPath(relpath).parts
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    return any(
        fnmatch.fnmatch(prefix, pat) or fnmatch.fnmatch(prefix, pat.rstrip("/"))
        for pat in patterns
        for prefix in prefixes
    )


def module_names(
    paths: Iterable[str], prefix: tuple[str, ...] = (), by_path: bool = False
) -> dict[str, str]:
    """Dotted module name for each posix path, as Python would import it.

    A file's name runs from the topmost folder above it that holds an `__init__.py`, so folders
    without one inside a package (PEP 420 namespace packages, as in sglang/srt) still count.
    `prefix` names the packages that enclose the root itself (pointing at `sglang/srt`, the
    prefix is `sglang.srt`) and then heads every name; a file under no package is named by its
    path from the root, and so is every file when `by_path` says the root is an install root.
    """
    paths = list(paths)
    package_dirs = {
        str(PurePosixPath(p).parent) for p in paths if PurePosixPath(p).name == "__init__.py"
    }
    names: dict[str, str] = {}
    for p in paths:
        pure = PurePosixPath(p)
        folders = [str(f) for f in pure.parents]  # innermost first, ending with "."
        top = next((f for f in reversed(folders) if f in package_dirs), None)
        rel = pure.with_suffix("").parts
        if top is not None and top != "." and not prefix and not by_path:
            start = len(PurePosixPath(top).parts) - 1
            parts = list(rel[start:])
        else:
            parts = [*prefix, *rel]
        if parts and parts[-1] == "__init__":
            parts.pop()
        names[p] = ".".join(parts) or pure.stem
    return names


_PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


def _is_install_root(folder: Path) -> bool:
    """An unpacked wheel or a site-packages folder: a sys.path entry, so every folder below it
    imports by its path (PEP 420 namespace packages such as megatron-core's `megatron`)."""
    return folder.name in ("site-packages", "dist-packages") or any(
        child.suffix in (".dist-info", ".egg-info") for child in folder.iterdir()
    )


def _enclosing_packages(folder: Path) -> tuple[tuple[str, ...], bool]:
    """Package names from the topmost enclosing package down to `folder`, and whether every
    folder below `folder` is a package by path (the root is, or sits in, an install root).

    `folder` may be a namespace folder inside a package (sglang/srt has no `__init__.py`, its
    parent does). Above an install root nothing is a package; above a project root marker
    only folders with an `__init__.py` are.
    """
    chain: list[Path] = []
    here = folder.resolve()
    for _ in range(12):
        if here.is_dir() and _is_install_root(here):
            return tuple(d.name for d in reversed(chain)), True
        chain.append(here)
        if here.parent == here or any((here / m).exists() for m in _PROJECT_MARKERS):
            break
        here = here.parent
    packaged = [i for i, d in enumerate(chain) if (d / "__init__.py").is_file()]
    if not packaged:
        return (), False
    return tuple(d.name for d in reversed(chain[: packaged[-1] + 1])), False


def _walk(root: Path, exclude: tuple[str, ...], errors: list[ErrorRecord]) -> list[str]:
    found: list[str] = []
    real_root = root.resolve()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = os.path.relpath(dirpath, root)
        kept = []
        for name in sorted(dirnames):
            full = os.path.join(dirpath, name)
            rel = os.path.normpath(os.path.join(rel_dir, name)).replace(os.sep, "/")
            if name in SKIP_DIRS or name.endswith(".egg-info") or is_excluded(rel, exclude):
                continue
            if os.path.isfile(os.path.join(full, "pyvenv.cfg")):
                continue
            if os.path.islink(full):
                errors.append(ErrorRecord(rel, "symbolic link to a folder: not followed"))
                continue
            kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            if not name.endswith(PY_SUFFIXES):
                continue
            full = os.path.join(dirpath, name)
            rel = os.path.normpath(os.path.join(rel_dir, name)).replace(os.sep, "/")
            if is_excluded(rel, exclude):
                continue
            if os.path.islink(full):
                try:
                    target = Path(full).resolve()
                except (RuntimeError, OSError):  # a link that points back at itself
                    errors.append(ErrorRecord(rel, "looping symbolic link"))
                    continue
                if not target.is_relative_to(real_root):
                    errors.append(ErrorRecord(rel, f"symbolic link out of the tree to {target}"))
                    continue
                if not target.is_file():
                    errors.append(ErrorRecord(rel, "broken or looping symbolic link"))
                    continue
            found.append(rel)
    return found


def read_directory(path: Path, exclude: tuple[str, ...] = ()) -> SourceTree:
    """Every Python file under `path` (or `path` itself when it is a file)."""
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    errors: list[ErrorRecord] = []
    if path.is_file():
        root, rels = path.parent, [path.name]
    else:
        root, rels = path, _walk(path, exclude, errors)
    prefix, by_path = _enclosing_packages(root)
    names = module_names(rels, prefix, by_path)
    files: list[SourceFile] = []
    for rel in rels:
        try:
            data = (root / rel).read_bytes()
        except OSError as exc:
            errors.append(ErrorRecord(rel, f"cannot read: {exc.strerror or exc}"))
            continue
        files.append(SourceFile(rel, names[rel], data, blob_id(data)))
    return SourceTree(str(root), files, sorted(errors))


def open_repository(repo_path: Path):  # -> git.Repo
    """A gitpython Repo for `repo_path` (bare or not), or an InputError that names the path."""
    import git  # imported lazily: only git-backed commands pay for it

    try:
        return git.Repo(repo_path)
    except git.NoSuchPathError as exc:
        raise InputError(f"{repo_path}: no such repository") from exc
    except git.InvalidGitRepositoryError as exc:
        raise InputError(f"{repo_path}: not a git repository") from exc


def resolve_revision(repo, rev: str):  # -> git.Commit
    """The commit `rev` names; refuses option-like refs before git ever sees them."""
    import git
    import gitdb.exc

    if not rev or rev.startswith("-"):
        raise InputError(f"ref '{rev}': a revision may not be empty or start with '-'")
    try:
        return repo.commit(rev)
    except (git.BadName, gitdb.exc.BadName, ValueError, git.GitCommandError) as exc:
        raise InputError(f"ref '{rev}': does not resolve to a commit in {repo.git_dir}") from exc


def read_revision(
    repo_path: Path, rev: str, subdir: str = "", exclude: tuple[str, ...] = ()
) -> SourceTree:
    """Every Python file of `rev` (below `subdir`), read from git objects: no checkout."""
    repo = open_repository(repo_path)
    commit = resolve_revision(repo, rev)
    tree = commit.tree
    if subdir:
        try:
            tree = tree / subdir.strip("/")
        except KeyError as exc:
            raise InputError(f"{subdir}: not a folder at {rev}") from exc
    errors: list[ErrorRecord] = []
    blobs = {}
    for item in tree.traverse():
        if item.type != "blob" or not item.path.endswith(PY_SUFFIXES):
            continue
        rel = item.path[len(subdir.strip("/")) + 1 :] if subdir else item.path
        if is_excluded(rel, exclude) or any(part in SKIP_DIRS for part in rel.split("/")[:-1]):
            continue
        if item.mode == 0o120000:
            errors.append(ErrorRecord(rel, "symbolic link in the repository: not followed"))
            continue
        blobs[rel] = item
    prefix: tuple[str, ...] = ()
    if subdir:
        parts = PurePosixPath(subdir.strip("/")).parts
        packaged = [
            i for i in range(len(parts)) if _has_init(commit.tree, "/".join(parts[: i + 1]))
        ]
        if packaged:
            prefix = tuple(parts[packaged[0] :])
    names = module_names(blobs, prefix)
    files = [
        SourceFile(rel, names[rel], blob.data_stream.read(), blob.hexsha)
        for rel, blob in sorted(blobs.items())
    ]
    return SourceTree(f"{repo_path}@{rev}", files, sorted(errors), revision=commit.hexsha)


def _has_init(tree, folder: str) -> bool:
    try:
        tree / f"{folder}/__init__.py"
    except KeyError:
        return False
    return True
