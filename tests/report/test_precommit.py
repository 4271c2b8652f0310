"""The pre-commit hooks, run by `pre-commit try-repo` against a committed copy of this package.

try-repo clones a git repository, so the hook repository is a temporary commit of the working
tree's package files (`.pre-commit-hooks.yaml`, `pyproject.toml`, `rankguard/`). The hook
environment is created with access to this interpreter's site-packages
(VIRTUALENV_SYSTEM_SITE_PACKAGES), so installing it needs no download of rankguard's
dependencies; if pre-commit still cannot install it (offline, no build backend), the tests
are skipped with pre-commit's own message.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE
from tests.report.conftest import GIT_ENV, git

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_FILES = (".pre-commit-hooks.yaml", "pyproject.toml", "README.md")
INSTALL_FAILURES = ("An unexpected error has occurred", "CalledProcessError")


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if importlib.util.find_spec("pre_commit") is None:
        pytest.skip("pre-commit is not installed (pip install -e '.[test]')")
    repo = tmp_path_factory.mktemp("hook-repo")
    for name in PACKAGE_FILES:
        shutil.copy2(ROOT / name, repo / name)
    shutil.copytree(
        ROOT / "rankguard", repo / "rankguard", ignore=shutil.ignore_patterns("__pycache__")
    )
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "hook")
    return repo


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """The bundled toysched example as a repository with staged files."""
    repo = tmp_path / "sample"
    shutil.copytree(EXAMPLE, repo)
    (repo / "toysched" / "notes.py").write_text("NOTE = 'no collective here'\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    return repo


def try_repo(home: Path, hook_repo: Path, sample: Path, hook: str, *argv: str):
    env = {
        **os.environ,
        **GIT_ENV,
        "PRE_COMMIT_HOME": str(home),
        "VIRTUALENV_SYSTEM_SITE_PACKAGES": "1",
        "RANKGUARD_CACHE_DIR": str(home / "rankguard-cache"),
        "PRE_COMMIT_COLOR": "never",
    }
    done = subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), hook, *argv],
        cwd=sample,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = done.stdout + done.stderr
    if done.returncode not in (0, 1) or any(m in output for m in INSTALL_FAILURES):
        log = home / "pre-commit.log"
        detail = log.read_text()[-1500:] if log.is_file() else output[-1500:]
        pytest.skip(f"pre-commit could not install the hook environment: {detail}")
    return done.returncode, output


def test_hook_reports_findings_whose_chain_touches_the_files(home, hook_repo, sample):
    code, output = try_repo(
        home, hook_repo, sample, "rankguard", "--files",
        "toysched/managers/scheduler_pp_mixin.py",
    )  # fmt: skip
    assert code == 1, output
    assert "rankguard check" in output and "Failed" in output
    assert "unwatched-collective" in output and "scheduler_pp_mixin.py" in output


def test_hook_passes_when_no_chain_touches_the_files(home, hook_repo, sample):
    code, output = try_repo(home, hook_repo, sample, "rankguard", "--files", "toysched/notes.py")
    assert code == 0, output
    assert "Passed" in output


def test_stamp_watchdog_hook_is_check_only(home, hook_repo, sample):
    target = sample / "toysched" / "managers" / "scheduler_pp_mixin.py"
    before = target.read_text()
    code, output = try_repo(home, hook_repo, sample, "rankguard-stamp-watchdog", "--all-files")
    assert code == 1, output
    assert 'on_blocked_recv("broadcast_pyobj")' in output
    assert target.read_text() == before
