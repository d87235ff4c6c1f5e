"""Sweeps on Ray Tune, end to end. Ray runs in a loopback-only network namespace (it probes cloud
metadata addresses otherwise), so the sweep runs as `unshare -n` subprocess; where that is not allowed
the test is skipped with the reason."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.errors import UserError
from harness.runners.tune import load_sweep, trial_bundles, trial_overrides
from tests.conftest import ROOT, requires_loopback_only, run_cli_loopback


def run_sweep_cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_cli_loopback(["sweep", *args], env)


def test_sweep_files_are_checked(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ntask: babi\nmodels: [lstm]\nspaces: {}\n")
    with pytest.raises(UserError, match="unknown key\\(s\\) spaces"):
        load_sweep(bad)
    bad.write_text("name: x\ntask: babi\nmodels: [lstm]\nspace: {optim.lr: {type: gaussian}}\n")
    with pytest.raises(UserError, match="type 'gaussian'"):
        load_sweep(bad)
    sweep = load_sweep(ROOT / "sweeps" / "predinet_table1.yaml")
    overrides = trial_overrides(sweep, {"model": "mlp1", "seed": 2, "space": {"task.tasks": ["xoccurs"]}})
    assert "task.tasks=[xoccurs]" in overrides and "seed=2" in overrides
    assert "tracking.group=predinet_table1" in overrides


def test_every_shipped_sweep_composes(env):
    for path in sorted((ROOT / "sweeps").glob("*.yaml")):
        done = subprocess.run([sys.executable, "-m", "harness.cli", "sweep", str(path), "--dry-run"], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (path, done.stderr)


@requires_loopback_only
def test_sweep_of_two_models_and_two_seeds_fills_the_store_and_a_failing_trial_is_stored(env, tmp_path):
    data = tmp_path / "data" / "babi" / "en-10k"
    data.mkdir(parents=True)
    (data / "qa6_yes-no-questions_train.txt").write_text("1 Mary moved.\n")  # malformed: no question
    (data / "qa6_yes-no-questions_test.txt").write_text("1 Mary moved.\n")
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("name: tiny\ntask: babi\nmodels: [tpr_rnn, lstm]\nprofile: smoke\nseeds: [0, 1]\n"
                     "overrides: [train.max_epochs=1]\nspace: {task.babi_id: {type: grid, values: [1, 6]}}\n")
    runs = tmp_path / "runs"
    done = run_sweep_cli([str(sweep), "--runs-dir", str(runs)], {**env, "HARNESS_DATA_DIR": str(tmp_path / "data")})
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]  # the task-6 trials failed
    results = [json.loads(p.read_text()) for p in runs.glob("babi/*/*/results.json")]
    assert len(results) == 8
    assert sum(1 for r in results if r["status"] == "completed") == 4
    assert sum(1 for r in results if r["status"] == "failed" and "no question lines" in r["error"]) == 4
    assert "completed" in done.stdout and "failed" in done.stdout

    site = tmp_path / "site"  # the sweep's runs appear in the report
    built = subprocess.run([sys.executable, "-m", "harness.cli", "report", "--runs-dir", str(runs), "--out", str(site)],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    index = (site / "index.html").read_text()
    assert "tpr_rnn" in index and "lstm" in index
    for r in results:
        assert (site / "runs" / f"{r['run_id']}.html").exists()


def test_rl_trials_reserve_a_cpu_for_each_env_runner():
    """RLlib places its EnvRunners in the trial's placement group: bundle 0 is the trial (driver and
    learner), then one bundle per runner. Supervised trials keep a plain CPU request."""
    rl_sweep = load_sweep(ROOT / "sweeps" / "simplicial_bridge_boxworld.yaml")
    assert trial_bundles(rl_sweep) == [{"CPU": 1.0}, {"CPU": 1.0}]
    assert trial_bundles(load_sweep(ROOT / "sweeps" / "babi_smoke.yaml")) is None
