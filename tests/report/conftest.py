"""Repositories with history, built with the git CLI in a temporary folder."""

from __future__ import annotations

import os
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from rankguard.cli import main
from tests.report.programs import CONFIG, HOSTILE_LOOP, LOOP

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
}


def git(repo: Path, *argv: str) -> str:
    env = {**os.environ, **GIT_ENV}
    out = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", *argv],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


class Repo:
    """`repo.commit({"pkg/m.py": "..."})` writes files (None deletes) and commits them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        git(root, "init", "-q")

    def commit(self, files: dict[str, str | None], message: str = "change") -> str:
        for rel, text in files.items():
            path = self.root / rel
            if text is None:
                path.unlink()
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text).lstrip("\n"))
        git(self.root, "add", "-A")
        git(self.root, "commit", "-q", "--allow-empty", "-m", message)
        return git(self.root, "rev-parse", "HEAD")


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[[str], Repo]:
    def build(name: str = "repo") -> Repo:
        return Repo(tmp_path / name)

    return build


@pytest.fixture
def hostile(make_repo: Callable[[str], Repo]) -> tuple[Repo, str, str]:
    repo = make_repo("hostile")
    base = repo.commit({"pyproject.toml": CONFIG, "pkg/__init__.py": "", "pkg/loop.py": LOOP})
    head = repo.commit({"pkg/loop.py": HOSTILE_LOOP})
    return repo, base, head


def render(repo: Repo, base: str, head: str, fmt: str, out: Path) -> int:
    return main(
        ["report", "--repo", str(repo.root), "--base", base, "--head", head, "--format", fmt,
         "-o", str(out), "--no-cache"]
    )  # fmt: skip
