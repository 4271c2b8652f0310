"""A pull request cannot change what judges it: config and plugins come from the base
revision (or a trusted `--config`), and code in the analysed repository runs only on opt-in."""

from __future__ import annotations

from pathlib import Path

from rankguard.cli import main
from tests.report.conftest import Repo

SERVE = """
import torch
import torch.distributed as dist


class Server:
    def serve(self):
        while True:
            dist.barrier()
"""
STALLED = SERVE.replace(
    "            dist.barrier()", "            torch.cuda.synchronize()\n            dist.barrier()"
)
PLUGIN = """
from pathlib import Path

Path(__file__).with_name("MARK").write_text("plugin code ran")

from rankguard.rules.base import Rule


class Hostile(Rule):
    name = "hostile"
    code = "RG999"
    description = "runs in CI"

    def check(self, context):
        return []
"""
HOSTILE_CONFIG = '[tool.rankguard]\nplugins = [".x"]\nrounds = ["*.not_a_round"]\n'


def report(repo: Repo, base: str, head: str, *extra: str) -> int:
    argv = ["report", "--repo", str(repo.root), "--base", base, "--head", head, "--no-cache"]
    return main([*argv, *extra])


def test_a_hostile_head_leaves_no_mark(make_repo, monkeypatch, capsys):
    repo = make_repo("shop")
    base = repo.commit({"pkg/__init__.py": "", "pkg/loop.py": SERVE})
    head = repo.commit({"pkg/loop.py": STALLED, "pyproject.toml": HOSTILE_CONFIG, "x.py": PLUGIN})
    monkeypatch.chdir(repo.root)  # CI: the working tree is the head
    code = report(repo, base, head, "--format", "md")
    out = capsys.readouterr()
    assert not (repo.root / "MARK").exists()
    # The head's config is not read either: its rounds would match nothing and exit 2.
    assert code == 1, out.err
    assert "FAIL: 1 new finding" in out.out and "hostile" not in out.out
    assert "rankguard: rounds discovered: pkg.loop.Server.serve " in out.err


def test_local_plugins_of_the_base_config_need_an_opt_in(make_repo, monkeypatch, capsys):
    repo = make_repo("shop")
    config = '[tool.rankguard]\nplugins = [".x"]\n'
    base = repo.commit({"pyproject.toml": config, "x.py": PLUGIN, "pkg/__init__.py": "",
                        "pkg/loop.py": SERVE})  # fmt: skip
    head = repo.commit({"pkg/loop.py": STALLED})
    monkeypatch.chdir(repo.root)
    assert report(repo, base, head) == 2
    assert capsys.readouterr().err == (
        f"rankguard: error: {base}:pyproject.toml names plugins .x, code from the analysed "
        "repository; pass --allow-local-plugins to run them, or --config FILE to choose the "
        "configuration\n"
    )
    assert not (repo.root / "MARK").exists()
    assert report(repo, base, head, "--allow-local-plugins") == 1
    assert (repo.root / "MARK").exists()


def test_html_and_markdown_show_the_repository_name(make_repo, tmp_path: Path, capsys):
    repo = make_repo("shop")
    base = repo.commit({"pkg/__init__.py": "", "pkg/loop.py": SERVE})
    head = repo.commit({"pkg/loop.py": STALLED})
    for fmt in ("html", "md"):
        out = tmp_path / f"r.{fmt}"
        assert report(repo, base, head, "--format", fmt, "-o", str(out)) == 1
        text = out.read_text()
        assert "<code>shop</code>" in text or "`shop`" in text
        assert str(tmp_path) not in text
    capsys.readouterr()
