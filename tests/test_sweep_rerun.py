"""A sweep whose every trial's run is already completed in the store is reported from the store, without starting
Ray (before, each trial started a Ray worker only to say ``already completed``); a sweep with anything left to do,
or whose trials cannot be listed before Tune samples them, still goes to Ray. The trials here are trained by the
sweep's own trial function, in this process (smoke profile, seconds)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness import cli
from harness.runners.sweep_file import load_sweep
from harness.runners.tune import completed_sweep_rows, grid_trials, run_sweep, run_trial

SWEEP = """name: rerun_check
task: babi
models: [lstm]
profile: smoke
seeds: [0, 1]
space: {train.max_epochs: {type: grid, values: [1]}}
"""


def no_ray(*args, **kwargs):
    raise AssertionError("Ray was started")


@pytest.fixture
def sweep_file(tmp_path: Path) -> Path:
    path = tmp_path / "rerun_check.yaml"
    path.write_text(SWEEP)
    return path


def test_a_finished_sweep_is_reported_from_the_store_without_ray(env, sweep_file, monkeypatch, capsys):
    runs = Path(env["HARNESS_RUNS_DIR"])
    sweep = load_sweep(sweep_file)
    trials = grid_trials(sweep)
    assert [(t["model"], t["seed"], t["space"]) for t in trials] == [("lstm", 0, {"train.max_epochs": 1}),
                                                                    ("lstm", 1, {"train.max_epochs": 1})]
    assert completed_sweep_rows(sweep, runs) is None  # nothing trained yet
    monkeypatch.setitem(os.environ, "HARNESS_RUNS_DIR", str(runs))
    first = run_trial(trials[0], sweep)
    assert first["status"] == "completed"
    assert completed_sweep_rows(sweep, runs) is None  # seed 1 still to run
    second = run_trial(trials[1], sweep)

    monkeypatch.setattr("harness.runners.ray_session.ray_session", no_ray)
    rows = run_sweep(sweep, runs)
    assert [(row["trial"], row["run_id"], row["status"]) for row in rows] == [
        ("lstm seed=0 train.max_epochs=1", first["run_id"], "completed"),
        ("lstm seed=1 train.max_epochs=1", second["run_id"], "completed")]
    assert rows[0]["metrics"]["test/acc"] == pytest.approx(first["test/acc"])  # as the trial reported it to Tune
    capsys.readouterr()
    assert cli.main(["sweep", str(sweep_file), "--runs-dir", str(runs)]) == 0
    out = capsys.readouterr().out
    assert "every one of its 2 trials' runs is completed" in out and second["run_id"] in out

    results = next(runs.glob(f"babi/lstm/{second['run_id']}/results.json"))  # one run left unfinished: to Ray
    record = json.loads(results.read_text())
    results.write_text(json.dumps({**record, "status": "interrupted"}))
    assert completed_sweep_rows(sweep, runs) is None
    with pytest.raises(AssertionError, match="Ray was started"):
        run_sweep(sweep, runs)


def test_a_sweep_whose_trials_tune_samples_is_not_listed_beforehand(sweep_file):
    sweep = load_sweep(sweep_file)
    sweep.space = {"optim.lr": {"type": "loguniform", "low": 1e-4, "high": 1e-2}}
    assert grid_trials(sweep) is None
    sweep.space, sweep.num_samples = {}, 3
    assert grid_trials(sweep) is None
    sweep.num_samples, sweep.stack_seeds = 1, True
    assert grid_trials(sweep) is None
