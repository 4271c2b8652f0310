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
    # Files Python would import under another file's name, each kept under a name of its own.
    warnings: list[ErrorRecord] = field(default_factory=list)


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
) -> tuple[dict[str, str], list[ErrorRecord]]:
    """Dotted module name for each posix path, as Python would import it, one name per file;
    and a warning for each file whose name Python gives to another file.

    A file's name runs from its import root: the folder above the topmost folder holding an
    `__init__.py`, so folders without one inside a package (PEP 420 namespace packages, as in
    sglang/srt) still count. An import root that is itself a namespace folder is no root: one
    that holds plain modules (they are named by their path, so the folder is a package by path)
    or lies inside another import root. There the names come from paths, and two `utils/common.py`
    in different folders keep different names.
    `prefix` names the packages that enclose the root itself (pointing at `sglang/srt`, the
    prefix is `sglang.srt`) and then heads every name; a file under no package is named by its
    path from the root, and so is every file when `by_path` says the root is an install root.
    """
    paths = list(paths)
    package_dirs = {
        str(PurePosixPath(p).parent) for p in paths if PurePosixPath(p).name == "__init__.py"
    }
    roots: dict[str, str | None] = {}  # path -> the folder it imports from; None: by path
    for p in paths:
        folders = [str(f) for f in PurePosixPath(p).parents]  # innermost first, ending with "."
        top = next((f for f in reversed(folders) if f in package_dirs), None)
        by_its_path = top is None or top == "." or prefix or by_path
        roots[p] = None if by_its_path else str(PurePosixPath(top).parent)
    namespaces = {  # folders that modules named by their path make packages by path
        str(folder)
        for p, root in roots.items()
        if root is None
        for folder in PurePosixPath(p).parents
    }
    found = set(roots.values())

    def outer_root(root: str) -> str | None:
        chain = [*(str(f) for f in reversed(PurePosixPath(root).parents[:-1])), root]
        if any(folder in namespaces for folder in chain):
            return None
        return next(folder for folder in chain if folder in found)

    names = {
        p: _dotted(p, prefix, None if root in (None, ".") else outer_root(root))
        for p, root in roots.items()
    }
    return _one_name_per_file(names, prefix)


def _dotted(path: str, prefix: tuple[str, ...], root: str | None) -> str:
    pure = PurePosixPath(path)
    rel = pure.with_suffix("").parts
    parts = [*prefix, *rel] if root is None else list(rel[len(PurePosixPath(root).parts) :])
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts) or pure.stem


def _precedence(path: str) -> tuple[int, str]:
    """Which of two files Python imports under one name: a package, then a module, a stub."""
    name = PurePosixPath(path).name
    return (0 if name.startswith("__init__.") else 1 if path.endswith(".py") else 2), path


def _shared_names(names: dict[str, str]) -> dict[str, list[str]]:
    """Names given to several files, each with its files in import precedence."""
    groups: dict[str, list[str]] = {}
    for path, name in names.items():
        groups.setdefault(name, []).append(path)
    return {n: sorted(g, key=_precedence) for n, g in sorted(groups.items()) if len(g) > 1}


def _one_name_per_file(
    names: dict[str, str], prefix: tuple[str, ...]
) -> tuple[dict[str, str], list[ErrorRecord]]:
    """Files sharing a name take their path names; a file whose path name Python gives to
    another file (`m.py` beside `m/__init__.py`, a stub) keeps a name of its own, with a warning."""
    for group in _shared_names(names).values():
        for path in group:
            names[path] = _dotted(path, prefix, None)
    clashes: list[ErrorRecord] = []
    for name, (first, *others) in _shared_names(names).items():
        for path in others:
            names[path] = f"{name}@{path}"
            message = f"module {name} is {first}, as Python imports it: kept as {names[path]}"
            clashes.append(ErrorRecord(path, message))
    return names, sorted(clashes)


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
    names, clashes = module_names(rels, prefix, by_path)
    files: list[SourceFile] = []
    for rel in rels:
        try:
            data = (root / rel).read_bytes()
        except OSError as exc:
            errors.append(ErrorRecord(rel, f"cannot read: {exc.strerror or exc}"))
            continue
        files.append(SourceFile(rel, names[rel], data, blob_id(data)))
    return SourceTree(str(root), files, sorted(errors), warnings=clashes)


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
    names, clashes = module_names(blobs, prefix)
    files = [
        SourceFile(rel, names[rel], blob.data_stream.read(), blob.hexsha)
        for rel, blob in sorted(blobs.items())
    ]
    return SourceTree(
        f"{repo_path}@{rev}", files, sorted(errors), revision=commit.hexsha, warnings=clashes
    )


def _has_init(tree, folder: str) -> bool:
    try:
        tree / f"{folder}/__init__.py"
    except KeyError:
        return False
    return True
