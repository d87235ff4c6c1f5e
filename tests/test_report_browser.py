"""The report as a person sees it: headless Chromium (Debian's `chromium`, installed by .ci/run) opens the
index and a paper page built from a real smoke run, takes screenshots and reports no console error."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_cli

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0", "--window-size=1280,1600"]


def screenshot(page: Path, png: Path, profile: Path) -> str:
    done = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", f"--screenshot={png}", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stderr


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_report_pages_render_without_console_errors(env, tmp_path):
    bench = run_cli(["bench", "--task", "babi", "--model", "lstm", "--profile", "smoke"], env)
    assert bench.returncode == 0, bench.stderr
    out = tmp_path / "site"
    built = run_cli(["report", "--out", str(out)], env)
    assert built.returncode == 0, built.stderr
    for name in ("index.html", "tpr_rnn.html"):
        png = tmp_path / f"{name}.png"
        log = screenshot(out / name, png, tmp_path / "chromium-profile")
        assert png.exists() and png.stat().st_size > 10_000  # a real picture, not a blank page
        console_errors = [line for line in log.splitlines()
                          if "CONSOLE" in line and ("ERROR" in line or "Uncaught" in line)]
        failed_loads = [line for line in log.splitlines() if "net::ERR_" in line and "file://" in line]
        assert not console_errors and not failed_loads, console_errors + failed_loads
