"""The report as a person sees it: headless Chromium (Debian's `chromium`, installed by .ci/run) opens the
index and a paper page built from a real smoke run and the shipped reference runs, and the pages of
reinforcement-learning runs and the 2-simplicial paper built from the synthetic store of test_report, takes
screenshots and reports no console error; a probe script run inside the browser counts the rendered cells
of the matrix and the comparison tables and measures every figure, so a page that renders empty fails.

Under ``CI=true`` a missing Chromium fails these tests instead of skipping them (.ci/run installs it)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from reports.build import build_report
from tests.conftest import run_cli
from tests.test_report import files_root, make_rl_runs

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
needs_chromium = pytest.mark.skipif(CHROMIUM is None and not IN_CI,
                                    reason="Debian's chromium is not installed (.ci/run installs it)")
PROBE = """<script>
window.addEventListener('load', () => {
  const size = el => { const r = el.getBoundingClientRect(); return [Math.round(r.width), Math.round(r.height)]; };
  const out = {
    matrix: Array.from(document.querySelectorAll('table.matrix td')).filter(td => size(td)[0] > 0).length,
    paper: Array.from(document.querySelectorAll('table.paper-table td')).filter(td => size(td)[0] > 0).length,
    figures: Array.from(document.querySelectorAll('figure svg')).map(size),
    drawn: Array.from(document.querySelectorAll('figure svg')).map(svg => svg.querySelectorAll('path, text').length),
    images: Array.from(document.images).map(img => [img.naturalWidth, img.naturalHeight]),
  };
  const pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def probe(page: Path, profile: Path) -> dict:
    """What Chromium rendered of ``page``: cell counts, every figure's size and drawn elements, image sizes."""
    if CHROMIUM is None:
        pytest.fail("chromium is not installed: CI=true requires it (.ci/run installs Debian's chromium)")
    probed = page.with_name(f".probe-{page.name}")
    probed.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    done = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=5000",
                           "--dump-dom", probed.as_uri()], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    match = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S)
    assert match, "the probe did not run"
    return json.loads(match.group(1).replace("&quot;", '"'))
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0", "--window-size=1280,1600"]


def screenshot(page: Path, png: Path, profile: Path) -> str:
    """Chromium's log while it renders ``page`` into ``png``."""
    if CHROMIUM is None:
        pytest.fail("chromium is not installed: CI=true requires it (.ci/run installs Debian's chromium)")
    done = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", f"--screenshot={png}", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stderr


@needs_chromium
@pytest.mark.slow
def test_report_pages_render_without_console_errors(env, tmp_path):
    bench = run_cli(["bench", "--task", "babi", "--model", "lstm", "--profile", "smoke"], env)
    assert bench.returncode == 0, bench.stderr
    out = tmp_path / "site"
    built = run_cli(["report", "--out", str(out)], env)  # the user's run beside the shipped reference runs
    assert built.returncode == 0, built.stderr
    for name in ("index.html", "tpr_rnn.html", "predinet.html"):
        png = tmp_path / f"{name}.png"
        log = screenshot(out / name, png, tmp_path / "chromium-profile")
        assert_rendered(png, log)
    from harness.registry import REGISTRY
    from reports.build import PAPERS_DIR
    from reports.papers import load_papers

    index = probe(out / "index.html", tmp_path / "chromium-profile")
    assert index["matrix"] == len(REGISTRY.tasks) * len(REGISTRY.models)  # every cell of the matrix drawn
    predinet = next(p for p in load_papers(PAPERS_DIR) if p.name == "predinet")
    table = predinet.tables[0]
    labels = len({key for row in table.rows for key in table.labels(row)})
    paper = probe(out / "predinet.html", tmp_path / "chromium-profile")
    assert paper["paper"] == len(table.rows) * (labels + 1 + 3 * len(table.models))
    assert paper["figures"] and all(w > 100 and h > 100 for w, h in paper["figures"]), paper["figures"]
    assert all(n > 20 for n in paper["drawn"]) and all(w > 0 and h > 0 for w, h in paper["images"])


def assert_rendered(png: Path, log: str) -> None:
    """A real picture (not a blank page), and no console error or failed load in the log."""
    assert png.exists() and png.stat().st_size > 10_000
    console_errors = [line for line in log.splitlines()
                      if "CONSOLE" in line and ("ERROR" in line or "Uncaught" in line)]
    failed_loads = [line for line in log.splitlines() if "net::ERR_" in line and "file://" in line]
    assert not console_errors and not failed_loads, console_errors + failed_loads


@needs_chromium
@pytest.mark.slow
def test_rl_pages_render_without_console_errors(tmp_path):
    runs = tmp_path / "runs"
    make_rl_runs(runs)
    out = tmp_path / "site"
    build_report(runs, out, files_root=files_root(runs))
    for name in ("simplicial.html", "runs/boxworld-relational-cpu-s0-r.html", "runs/cartpole-mlp_agent-cpu-s0-r.html"):
        png = tmp_path / f"{Path(name).stem}.png"
        assert_rendered(png, screenshot(out / name, png, tmp_path / "chromium-profile"))
    run = probe(out / "runs/boxworld-relational-cpu-s0-r.html", tmp_path / "chromium-profile")
    assert len(run["figures"]) >= 2 and all(w > 100 and h > 100 for w, h in run["figures"])
