"""The options of ``harness sweep`` as a user types them: a mistake is one line, exit code 2, before Ray starts or
the run store is touched."""

from __future__ import annotations

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
