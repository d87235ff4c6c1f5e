"""The report as a person sees it: headless Chromium (Debian's `chromium`, installed by .ci/run) opens the
index and a paper page built from a real smoke run, and the pages of reinforcement-learning runs and the
2-simplicial paper built from the synthetic store of test_report, takes screenshots and reports no console
error."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from reports.build import build_report
from tests.conftest import run_cli
from tests.test_report import files_root, make_rl_runs

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0", "--window-size=1280,1600"]


def screenshot(page: Path, png: Path, profile: Path) -> str:
    """Chromium's log while it renders ``page`` into ``png``."""
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
        assert_rendered(png, log)


def assert_rendered(png: Path, log: str) -> None:
    """A real picture (not a blank page), and no console error or failed load in the log."""
    assert png.exists() and png.stat().st_size > 10_000
    console_errors = [line for line in log.splitlines()
                      if "CONSOLE" in line and ("ERROR" in line or "Uncaught" in line)]
    failed_loads = [line for line in log.splitlines() if "net::ERR_" in line and "file://" in line]
    assert not console_errors and not failed_loads, console_errors + failed_loads


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_rl_pages_render_without_console_errors(tmp_path):
    runs = tmp_path / "runs"
    make_rl_runs(runs)
    out = tmp_path / "site"
    build_report(runs, out, files_root=files_root(runs))
    for name in ("simplicial.html", "runs/boxworld-relational-cpu-s0-r.html", "runs/cartpole-mlp_agent-cpu-s0-r.html"):
        png = tmp_path / f"{Path(name).stem}.png"
        assert_rendered(png, screenshot(out / name, png, tmp_path / "chromium-profile"))
