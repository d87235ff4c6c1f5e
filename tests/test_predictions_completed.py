"""A completed run whose predictions a kill kept it from writing (the kill landed between the run's completion and
the predictions' writing) gets them from the command that trained it, run again: ``harness bench`` (one run or a
stack of seeds) and a sweep whose runs are all completed write them from the run's checkpoint as ``harness
predict`` does, the same bytes as those written after training; a write that cannot happen leaves the run as it
is, with one line naming the ``harness predict`` command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness import cli
from harness.cli import main
from harness.errors import UserError
from harness.runners import existing_run
from harness.runners.predictions import FOLDER, SUMMARY, TABLE

RELATIONS = ["bench", "--task", "relations_game", "--model", "mlp1", "--profile", "smoke", "train.threads=1",
             "train.max_epochs=1"]


def written(run: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted((run / FOLDER).iterdir())}


def lose_predictions(run: Path) -> None:
    """What a kill after the run completed and before its summary was written leaves."""
    (run / FOLDER / SUMMARY).unlink()


def test_bench_run_again_writes_the_predictions_a_kill_left_out(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(RELATIONS) == 0
    (run,) = (path.parent for path in Path(env["HARNESS_RUNS_DIR"]).glob("*/*/*/results.json"))
    before, results = written(run), (run / "results.json").read_bytes()
    lose_predictions(run)
    capsys.readouterr()
    assert main(RELATIONS) == 0
    out = capsys.readouterr().out
    assert "already completed" in out and "its predictions are missing" in out and "writing them" in out
    assert written(run) == before  # from the checkpoint the test metrics were measured with: the same bytes
    assert (run / "results.json").read_bytes() == results  # the run itself is not touched
    capsys.readouterr()
    assert main(RELATIONS) == 0
    assert "predictions" not in capsys.readouterr().out  # nothing missing any more


def test_a_stack_run_again_writes_its_members_missing_predictions(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*RELATIONS, "--seeds", "3,4"]) == 0
    runs = sorted(path.parent for path in Path(env["HARNESS_RUNS_DIR"]).glob("*/*/*/results.json"))
    before = [written(run) for run in runs]
    lose_predictions(runs[1])
    assert main([*RELATIONS, "--seeds", "3,4"]) == 0
    assert f"{runs[1].name}: its predictions are missing" in capsys.readouterr().out
    assert [written(run) for run in runs] == before


def test_a_write_that_fails_names_the_predict_command(env: Any, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(RELATIONS) == 0
    (run,) = (path.parent for path in Path(env["HARNESS_RUNS_DIR"]).glob("*/*/*/results.json"))
    lose_predictions(run)

    def refused(name: str, runs_dir: Path | None = None) -> dict[str, Any]:
        raise UserError(f"{Path(name).name} cannot be predicted now: another process holds it")

    monkeypatch.setattr("harness.runners.predictions.predict_run", refused)
    capsys.readouterr()
    assert main(RELATIONS) == 0  # the run stands
    out = capsys.readouterr().out
    assert f"predictions not written (UserError: {run.name} cannot be predicted now" in out
    assert f"`harness predict {run.name}` writes them" in out
    assert not (run / FOLDER / SUMMARY).exists() and (run / FOLDER / TABLE).exists()


def test_a_read_only_store_is_left_as_it_is(env: Any, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(RELATIONS) == 0
    (run,) = (path.parent for path in Path(env["HARNESS_RUNS_DIR"]).glob("*/*/*/results.json"))
    lose_predictions(run)
    monkeypatch.setattr(existing_run.os, "access", lambda path, mode: Path(path) != run)  # root may write anywhere
    capsys.readouterr()
    assert main(RELATIONS) == 0
    out = capsys.readouterr().out
    assert "store is read-only here" in out and f"`harness predict {run.name}`" in out
    assert not (run / FOLDER / SUMMARY).exists()


STACKED = ("name: stacked_predictions\ntask: relations_game\nmodels: [mlp1]\nprofile: smoke\nseeds: [0, 1]\n"
           "stack_seeds: true\noverrides: [train.threads=1, train.max_epochs=1]\n")


def test_a_finished_sweep_run_again_writes_missing_predictions_without_ray(env: Any, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from harness.runners.sweep_file import load_sweep
    from harness.runners.tune import grid_trials, run_stack_trial

    def no_ray(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("Ray was started")

    monkeypatch.setattr("harness.runners.ray_session.ray_session", no_ray)
    path, runs = tmp_path / "stacked_predictions.yaml", tmp_path / "runs"
    path.write_text(STACKED)
    sweep = load_sweep(path)
    monkeypatch.setenv("HARNESS_RUNS_DIR", str(runs))
    run_stack_trial(grid_trials(sweep)[0], sweep)  # as the sweep's one trial trains it
    members = sorted(p.parent for p in runs.glob("*/*/*/results.json"))
    before = [written(run) for run in members]
    lose_predictions(members[0])
    capsys.readouterr()
    assert cli.main(["sweep", str(path), "--runs-dir", str(runs)]) == 0
    out = capsys.readouterr().out
    assert f"{members[0].name}: its predictions are missing" in out and "nothing to run" in out
    assert [written(run) for run in members] == before
