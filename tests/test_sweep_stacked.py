"""Sweeps with ``stack_seeds: true``: the seeds of one trial point train as one stack (one Tune trial), each member
an ordinary run with its unstacked trial's run id and its own row of the table. The end-to-end test starts Ray in a
loopback-only network namespace (``unshare -n``), as ``tests/test_sweep.py`` does."""

from __future__ import annotations

import json

import pytest

from harness.config import compose
from harness.errors import UserError
from harness.runners.build import prepare_task
from harness.runners.sweep_file import check_sweep, load_sweep
from harness.runners.tune import member_trials, trial_overrides
from tests.conftest import requires_loopback_only, run_cli, run_cli_loopback

SWEEP = ("name: stacked\ntask: relations_game\nmodels: [predinet]\nprofile: smoke\nseeds: [0, 1]\nstack_seeds: true\n"
         "overrides: [train.threads=1]\n"
         "space: {optim.decay_below_val_loss: {type: grid, values: [null, 10.0]}}\n")


@pytest.mark.parametrize("value", ["1", "yes_please", "[true]", "null"])
def test_stack_seeds_must_be_a_boolean(value, tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_text(f"name: x\ntask: babi\nmodels: [lstm]\nstack_seeds: {value}\n")
    with pytest.raises(UserError, match="'stack_seeds' must be true or false, not"):
        load_sweep(path)


def test_stack_seeds_is_refused_on_a_cluster(tmp_path, monkeypatch):
    path = tmp_path / "sweep.yaml"
    path.write_text(SWEEP)
    sweep = load_sweep(path)
    assert sweep.stack_seeds and not load_sweep(_without_stacking(path)).stack_seeds
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    with pytest.raises(UserError, match="stack_seeds runs on a local Ray session only"):
        check_sweep(sweep)


def test_a_stacked_trial_is_the_unstacked_trials_of_its_seeds():
    trial = {"model": "lstm", "seeds": [0, 3], "space": {"optim.lr": 0.1}}
    assert member_trials(trial) == [{"model": "lstm", "seed": 0, "space": {"optim.lr": 0.1}},
                                    {"model": "lstm", "seed": 3, "space": {"optim.lr": 0.1}}]


def test_a_model_that_cannot_run_under_vmap_trains_its_seeds_one_by_one(tmp_path, monkeypatch):
    """The launcher refuses the stack before storing anything (UnstackableModelError); the trial then runs each
    seed as its unstacked trial."""
    from harness.runners import stacked_launch, tune

    path = tmp_path / "sweep.yaml"
    path.write_text("name: x\ntask: babi\nmodels: [lstm]\nprofile: smoke\nseeds: [0, 1]\nstack_seeds: true\n")
    monkeypatch.setenv("HARNESS_RUNS_DIR", str(tmp_path / "runs"))

    def refuse(stack, runs_dir=None):
        raise stacked_launch.UnstackableModelError("lstm cannot train as a stack on babi (vmap: .item())")

    solo = []
    monkeypatch.setattr(stacked_launch, "launch_stack", refuse)
    monkeypatch.setattr(tune, "run_trial", lambda trial, sweep: solo.append(trial["seed"]) or {"status": "completed"})
    outcome = tune.run_stack_trial({"model": "lstm", "seeds": [0, 1], "space": {}}, load_sweep(path))
    assert solo == [0, 1]
    assert json.loads(outcome["members"]) == {"0": {"status": "completed"}, "1": {"status": "completed"}}


def test_a_dry_run_counts_one_trial_per_stack(env, tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_text(SWEEP)
    stacked = run_cli(["sweep", str(path), "--dry-run"], env)
    plain = run_cli(["sweep", str(_without_stacking(path)), "--dry-run"], env)
    assert stacked.returncode == plain.returncode == 0, stacked.stderr + plain.stderr
    assert "2 trials of 2 seeds each, stacked where the cell can stack" in stacked.stdout  # 2 grid points x 2 seeds
    assert "one after another (4 runs)" in stacked.stdout
    assert "4 trials;" in plain.stdout


def _without_stacking(path):
    plain = path.with_name("plain.yaml")
    plain.write_text(path.read_text().replace("stack_seeds: true\n", ""))
    return plain


@requires_loopback_only
@pytest.mark.slow
def test_a_stacked_sweep_stores_each_seed_as_its_unstacked_run(env, tmp_path):
    """One trial point stacks (seeds 0 and 1 in one stack); the other sets optim.decay_below_val_loss, which the
    stacked trainer refuses, so its seeds run one by one in their trial. Four runs, four rows, the run ids of the
    unstacked sweep."""
    path = tmp_path / "sweep.yaml"
    path.write_text(SWEEP)
    runs = tmp_path / "runs"
    done = run_cli_loopback(["sweep", str(path), "--runs-dir", str(runs)], env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    stored = [json.loads(p.read_text()) for p in runs.glob("relations_game/*/*/results.json")]
    results = {r["run_id"]: r for r in stored}
    sweep = load_sweep(path)
    expected = {}
    for decay in (None, 10.0):
        for seed in (0, 1):
            trial = {"model": "predinet", "seed": seed, "space": {"optim.decay_below_val_loss": decay}}
            composed = compose("relations_game", "predinet", "smoke", trial_overrides(sweep, trial))
            prepare_task(composed)  # the run id holds the data's fingerprint
            expected[composed.run_id] = decay
    assert set(results) == set(expected) and all(r["status"] == "completed" for r in results.values())
    stacked = {run_id for run_id, decay in expected.items() if decay is None}
    for run_id, decay in expected.items():  # the refused point's runs are solo runs: no stack
        assert set(results[run_id].get("stack") or ()) == (stacked if decay is None else set()), run_id
    lines = done.stdout.splitlines()
    header = max(i for i, line in enumerate(lines) if line.split()[:3] == ["trial", "run_id", "status"])
    table = [line for line in lines[header + 1:] if line.startswith("predinet seed=")]
    assert len(table) == 4 and all(" completed " in line and "test/acc=" in line for line in table), table
    assert {line.split()[0] + " " + line.split()[1] for line in table} == {"predinet seed=0", "predinet seed=1"}
    assert all(any(run_id in line for line in table) for run_id in expected)
