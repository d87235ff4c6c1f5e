"""The whole task x model matrix trains end to end: `make sweep SWEEP=sweeps/matrix_smoke.yaml` runs every cell
the registry says can run (each through its route in models/adapters.yaml) at the smoke profile, and the
report shows a number in every one of those cells. Minutes, not seconds: the RL cells build an IMPALA
algorithm each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.registry import REGISTRY
from reports.build import main as build_report
from reports.tables import NO_RUN
from tests.conftest import ROOT, requires_loopback_only, run_cli_loopback


@requires_loopback_only
@pytest.mark.slow
def test_matrix_smoke_sweep_trains_every_runnable_cell_and_the_report_shows_each(env: dict[str, str],
                                                                                 tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    done = run_cli_loopback(["sweep", str(ROOT / "sweeps" / "matrix_smoke.yaml"), "--runs-dir", str(runs)], env,
                            timeout=1800)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    runnable = {cell for cell, compat in REGISTRY.matrix().items() if compat.ok}
    stored = {}
    for path in runs.glob("*/*/*/results.json"):
        results = json.loads(path.read_text())
        stored[(results["task"], results["model"])] = results["status"]
    assert set(stored) == runnable and set(stored.values()) == {"completed"}, sorted(runnable - set(stored))

    out = tmp_path / "report"
    assert build_report(["--runs-dir", str(runs), "--results-dir", "", "--out", str(out)]) == 0
    index = (out / "index.html").read_text()
    assert NO_RUN not in index  # every runnable cell has its run; the others give the registry's reason
    assert "tpr_rnn trains supervised; boxworld is rl" in index
    assert "Models ranked per task" in index
