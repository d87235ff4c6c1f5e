"""The options of ``harness sweep`` as a user types them: a mistake is one line, exit code 2, before Ray starts or
the run store is touched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import cli
from tests.conftest import ROOT


def no_ray(*args, **kwargs):
    raise AssertionError("Ray was started")


@pytest.fixture
def no_ray_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("harness.runners.ray_session.ray_session", no_ray)


def test_an_empty_profile_is_refused_not_taken_for_the_files(env, tmp_path, capsys, no_ray_session):
    runs = tmp_path / "store"
    code = cli.main(["sweep", str(ROOT / "sweeps" / "babi_smoke.yaml"), "--profile", "", "--runs-dir", str(runs)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and "unknown profile ''" in err and "smoke, cpu, paper" in err
    assert not Path(runs).exists()


STACKED = ("name: stacked_rerun\ntask: relations_game\nmodels: [mlp1]\nprofile: smoke\nseeds: [0, 1]\n"
           "stack_seeds: true\noverrides: [train.threads=1, train.max_epochs=1]\n")


def test_a_finished_stacked_sweep_is_reported_from_the_store_without_ray(env, tmp_path, monkeypatch, capsys,
                                                                       no_ray_session):
    """A grid sweep with ``stack_seeds`` lists its trials (one per stack) before Tune runs, as an unstacked one does:
    run again once every member's run is completed, it prints the table from the store and starts no Ray."""
    from harness.runners.sweep_file import load_sweep
    from harness.runners.tune import grid_trials, run_stack_trial, split_completed

    path, runs = tmp_path / "stacked_rerun.yaml", tmp_path / "runs"
    path.write_text(STACKED)
    sweep = load_sweep(path)
    trials = grid_trials(sweep)
    assert trials == [{"model": "mlp1", "seeds": [0, 1], "space": {}}]  # what Tune's grid would generate
    assert split_completed(sweep, runs) == ([], trials)
    monkeypatch.setenv("HARNESS_RUNS_DIR", str(runs))
    run_stack_trial(trials[0], sweep)  # as the sweep's one trial trains it
    done, left = split_completed(sweep, runs)
    assert left == [] and [row["trial"] for row in done] == ["mlp1 seed=0", "mlp1 seed=1"]
    capsys.readouterr()
    assert cli.main(["sweep", str(path), "--runs-dir", str(runs)]) == 0
    out = capsys.readouterr().out
    assert "the runs of its one stacked trial are completed in" in out and "(2 runs); nothing to run" in out
    assert all(row["run_id"] in out for row in done)


@pytest.mark.parametrize("name", ["predinet_stacked_smoke", "predinet_table1_stacked", "babi_smoke"])
def test_listed_trials_are_the_ones_tune_would_generate(name):
    from ray.tune.search.variant_generator import generate_variants

    from harness.runners.sweep_file import load_sweep
    from harness.runners.tune import _tune_space, grid_trials

    sweep = load_sweep(ROOT / "sweeps" / f"{name}.yaml")
    generated = [variant for _, variant in generate_variants(_tune_space(sweep))]
    assert sorted(map(repr, grid_trials(sweep))) == sorted(map(repr, generated))


def test_repeated_cells_add_up_as_repeated_only_does(capsys):
    sweep = str(ROOT / "sweeps" / "babi_smoke.yaml")
    assert cli.main(["sweep", sweep, "--dry-run", "--cells", "babi/tpr_rnn", "--cells", "babi/lstm"]) == 0
    assert "babi x tpr_rnn, lstm, profile smoke, 4 trials" in capsys.readouterr().out  # not the last --cells alone
    assert cli.main(["sweep", sweep, "--dry-run", "--cells", "babi/tpr_rnn", "--cells", "babi/lstmm"]) == 2
    assert "--cells babi/lstmm matches none of its cells" in capsys.readouterr().err


ACTOR_DIED = ("The actor died unexpectedly before finishing this task.\n\tclass_name: ImplicitFunc\n\tpid: 4242\n"
              "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit "
              "detail: Worker unexpectedly exits with a connection error code 2. End of file. Some common causes "
              "include: (1) the process was killed by the OOM killer due to high memory usage, ...")


def test_a_trial_whose_process_died_is_listed_with_its_run_and_how_it_resumes(env, tmp_path, monkeypatch):
    """A trial's worker killed outright (the OOM killer, a kill -9) is a Tune error without a report. Its row names
    the run the store holds for it and says that the same command resumes it (it used to say ``failed``, with no run
    id and Ray's 300 characters about the actor), as ``harness runs`` lists that run as killed, not failed."""
    import subprocess
    import sys
    from types import SimpleNamespace

    from harness.runners.sweep_file import load_sweep
    from harness.runners.tune import grid_trials, run_trial, sweep_rows

    path, runs = tmp_path / "died.yaml", tmp_path / "runs"
    path.write_text("name: died\ntask: babi\nmodels: [lstm]\nprofile: smoke\nseeds: [0, 1]\n"
                    "overrides: [train.max_epochs=1]\n")
    sweep = load_sweep(path)
    killed, never = grid_trials(sweep)
    monkeypatch.setenv("HARNESS_RUNS_DIR", str(runs))
    run_id = run_trial(killed, sweep)["run_id"]
    results = runs / "babi" / "lstm" / run_id / "results.json"
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    record = json.loads(results.read_text())  # as a worker killed mid-run leaves it: running, its process gone
    results.write_text(json.dumps({**record, "status": "running", "owner": {**record["owner"],
                                                                            "pid": int(gone.stdout)}}))
    died = [SimpleNamespace(config=trial, metrics={}, error=RuntimeError(ACTOR_DIED)) for trial in (killed, never)]
    first, second = sweep_rows(died, sweep, runs)
    assert (first["run_id"], first["status"]) == (run_id, "interrupted")
    assert "Worker unexpectedly exits with a connection error code 2" in first["reason"]
    assert "the same sweep command resumes it" in first["reason"] and "class_name" not in first["reason"]
    assert (second["run_id"], second["status"]) != (None, "interrupted")  # no run: its trial failed, as before
    assert second["status"] == "failed" and "Worker unexpectedly exits" in second["reason"]


def test_only_a_process_that_died_is_said_to_have_died():
    from harness.runners.tune import _death

    assert "process died" in _death(RuntimeError(ACTOR_DIED)) and "pid" not in _death(RuntimeError(ACTOR_DIED))
    assert _death(RuntimeError("boom\nat line 2")) == ("its trial ended in an error before its run did "
                                                       "(RuntimeError: boom)")


def test_the_store_line_of_a_stacked_sweep_run_in_part_counts_stacks_and_runs(tmp_path):
    from harness.runners.sweep_file import load_sweep
    from harness.runners.tune import split_note

    path = tmp_path / "stacked_rerun.yaml"
    path.write_text(STACKED)
    sweep = load_sweep(path)
    rows = [{"trial": "mlp1 seed=0"}, {"trial": "mlp1 seed=1"}]
    assert split_note(sweep, tmp_path, rows, [{"model": "predinet"}], 2) == (
        f"sweep stacked_rerun: 1 of its 2 stacked trials' runs are completed in {tmp_path} (2 runs, reported from "
        "the store); running the other 1")


def test_repeated_seeds_add_up_too(capsys):
    sweep = str(ROOT / "sweeps" / "babi_smoke.yaml")
    assert cli.main(["sweep", sweep, "--dry-run", "--seeds", "0", "--seeds", "2,3"]) == 0
    assert "profile smoke, 6 trials" in capsys.readouterr().out  # seeds 0, 2 and 3, not the last --seeds alone
    assert cli.main(["sweep", sweep, "--dry-run", "--seeds", "0,1", "--seeds", "1"]) == 2
    assert "--seeds 0,1,1 repeats 1" in capsys.readouterr().err
