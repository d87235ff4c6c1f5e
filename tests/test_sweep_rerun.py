"""A sweep whose every trial's run is already completed in the store is reported from the store, without starting
Ray (before, each trial started a Ray worker only to say ``already completed``); one with some trials left gives
Tune only those and reports the others from the store; one whose trials cannot be listed before Tune samples them
goes to Ray whole. The trials here are trained by the sweep's own trial function, in this process (smoke profile,
seconds)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from harness import cli
from harness.runners.sweep_file import load_sweep
from harness.runners.tune import grid_trials, run_sweep, run_trial, split_completed
from tests.conftest import requires_loopback_only, run_cli_loopback

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
    assert split_completed(sweep, runs) == ([], trials)  # nothing trained yet
    monkeypatch.setitem(os.environ, "HARNESS_RUNS_DIR", str(runs))
    first = run_trial(trials[0], sweep)
    assert first["status"] == "completed"
    assert split_completed(sweep, runs)[1] == [trials[1]]  # seed 1 still to run
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
    assert split_completed(sweep, runs)[1] == [trials[1]]
    with pytest.raises(AssertionError, match="Ray was started"):
        run_sweep(sweep, runs)


def test_a_sweep_whose_trials_tune_samples_is_not_listed_beforehand(sweep_file):
    sweep = load_sweep(sweep_file)
    sweep.space = {"optim.lr": {"type": "loguniform", "low": 1e-4, "high": 1e-2}}
    assert grid_trials(sweep) is None
    sweep.space, sweep.num_samples = {}, 3
    assert grid_trials(sweep) is None
    sweep.num_samples, sweep.stack_seeds = 1, True  # a stacked grid is listed: one trial per stack
    assert grid_trials(sweep) == [{"model": "lstm", "seeds": [0, 1], "space": {}}]


@requires_loopback_only
@pytest.mark.slow
def test_a_sweep_run_again_part_way_gives_tune_only_the_trials_left(env, sweep_file, monkeypatch):
    runs = Path(env["HARNESS_RUNS_DIR"])
    sweep = load_sweep(sweep_file)
    trials = grid_trials(sweep)
    monkeypatch.setitem(os.environ, "HARNESS_RUNS_DIR", str(runs))
    first = run_trial(trials[0], sweep)  # seed 0 trained before, as by a sweep stopped after its first trial
    done, left = split_completed(sweep, runs)
    assert [(row["trial"], row["run_id"]) for row in done] == [("lstm seed=0 train.max_epochs=1", first["run_id"])]
    assert left == [trials[1]]

    result = run_cli_loopback(["sweep", str(sweep_file), "--runs-dir", str(runs)], env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "1 of its 2 trials' runs are completed" in result.stdout and "running the other 1" in result.stdout
    assert "already completed" not in result.stdout + result.stderr  # no Ray worker started for seed 0
    table = [line for line in result.stdout.splitlines() if line.startswith("lstm seed=")]
    assert [line.split()[:2] for line in table] == [["lstm", "seed=0"], ["lstm", "seed=1"]]
    assert first["run_id"] in table[0] and all("completed" in line for line in table)
    tune_trials = list((runs / "_tune" / "rerun_check").glob("*/params.json"))
    assert len(tune_trials) == 1 and json.loads(tune_trials[0].read_text())["listed_trial"]["seed"] == 1
    assert tune_trials[0].parent.name.endswith("_lstm_seed=1_train.max_epochs=1")  # named by its trial
    assert split_completed(sweep, runs)[1] == []  # and now the sweep is finished
