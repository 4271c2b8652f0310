"""The HTML report in a real headless browser (Debian's chromium).

`.ci/run` installs Debian's chromium when it is missing, so in CI (`CI` set) a missing browser
fails the test; elsewhere it is skipped with the reason. The page must render (a screenshot is
written), the browser's own DOM must hold every section and the new finding's chain, and the
hostile literal must stay text, with no script element at all.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.report.conftest import render

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
)


def browser() -> str:
    found = next((path for name in BROWSERS if (path := shutil.which(name))), None)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("CI must run the browser test: .ci/run installs chromium with apt-get")
        pytest.skip("no chromium installed (apt-get install chromium): browser check skipped")
    return found


def run_browser(binary: str, tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / "profile"
    return subprocess.run(
        [binary, *FLAGS, f"--user-data-dir={profile}", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_html_report_in_headless_chromium(tmp_path: Path, hostile, capsys):
    binary = browser()
    repo, base, head = hostile
    page = tmp_path / "report.html"
    render(repo, base, head, "html", page)
    capsys.readouterr()
    shot = tmp_path / "report.png"
    done = run_browser(
        binary, tmp_path, f"--screenshot={shot}", "--window-size=1280,1600", page.as_uri()
    )
    assert shot.is_file(), done.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    dom = run_browser(binary, tmp_path, "--dump-dom", page.as_uri()).stdout
    assert "rankguard report" in dom
    # The literal is a text node: serialised with entities, and no element was made of it.
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom
    assert "&lt;img src=x onerror=alert(2)&gt;" in dom
    assert "<script" not in dom.lower() and "<img" not in dom.lower()
    assert 'id="verdict"' in dom and "FAIL: 1 new finding" in dom
    for section in ("findings", "staleness", "literals", "ruff"):
        assert f'id="{section}"' in dom, section
    assert '<ol class="chain">' in dom and "chain: " in dom
