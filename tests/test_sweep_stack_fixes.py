"""What an interrupted sweep and an interrupted stack say: a stopped sweep's unstarted trials are listed as not
started (never as failed) and the sweep exits 130; a stack stopped after its members were stored says they
completed; an interrupted member's line has no dangling colon; a repeated seed is named first; each member's
epoch lines name its seed. Each test is seconds long (smoke profile; Ray itself is replaced by a stand-in)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.cli import main
from harness.runners import stacked_launch
from harness.runners.stacked import StackedTrainer

STACK = ["bench", "--task", "relations_game", "--model", "mlp1", "--profile", "smoke", "train.max_epochs=1",
         "--seeds", "8,9"]


def _results(runs: Path) -> dict[int, dict]:
    found = [json.loads(p.read_text()) for p in runs.glob("relations_game/mlp1/*/results.json")]
    return {int(r["seed"]): r for r in found}


# sweeps ---------------------------------------------------------------------------------------------------------


def _sweep_file(tmp_path: Path) -> Path:
    path = tmp_path / "stopped.yaml"
    path.write_text("name: stopped\ntask: relations_game\nmodels: [mlp1]\nprofile: smoke\nseeds: [0, 1, 2]\n"
                    "overrides: [train.max_epochs=1]\n")
    return path


def _trial(seed: int) -> dict:
    return {"model": "mlp1", "seed": seed, "space": {}}


class _Grid:
    """Ray Tune's ResultGrid after Ctrl-C: a Result carries its config only once its trial reported, and the
    trials of its experiment analysis carry every trial's config (``ray_knows``: whether this Ray says)."""

    def __init__(self, results: list, configs: list[dict], ray_knows: bool) -> None:
        self.results = results
        if ray_knows:
            self._experiment_analysis = SimpleNamespace(trials=[SimpleNamespace(config=c) for c in configs])

    def __iter__(self):
        return iter(self.results)


def _stopped_sweep(monkeypatch: pytest.MonkeyPatch, stopped: bool, ray_knows: bool = True) -> None:
    """Ray replaced by a stand-in whose Tuner returns seed 0 completed and, when ``stopped``, seeds 1 and 2 never
    started (the sweep got Ctrl-C); otherwise all three completed."""
    import ray.tune

    import harness.runners.ray_session

    done = [SimpleNamespace(config=_trial(s), error=None,
                            metrics={"status": "completed", "run_id": f"rg-mlp1-s{s}", "error": "", "test/acc": 0.5,
                                     "config": _trial(s)}) for s in (0, 1, 2)]
    unstarted = [SimpleNamespace(config=None, metrics={}, error=None) for _ in (1, 2)]
    grid = _Grid([done[0], *unstarted] if stopped else done, [_trial(s) for s in (0, 1, 2)], ray_knows)

    class Tuner:
        def __init__(self, *args: object, **kwargs: object) -> None:
            pass

        def fit(self) -> _Grid:
            return grid

    monkeypatch.setattr(harness.runners.ray_session, "ray_session", contextlib.nullcontext)
    monkeypatch.setattr(ray.tune, "Tuner", Tuner)
    monkeypatch.setattr(ray.tune, "with_parameters", lambda trainable, **kwargs: trainable)
    monkeypatch.setattr(ray.tune, "with_resources", lambda trainable, resources: trainable)


def _table(out: str) -> list[str]:
    lines = out.splitlines()
    header = max(i for i, line in enumerate(lines) if line.split()[:3] == ["trial", "run_id", "status"])
    return lines[header + 1:]


def test_a_stopped_sweeps_unstarted_trials_are_listed_as_not_started_not_failed(env, tmp_path, monkeypatch, capsys):
    _stopped_sweep(monkeypatch, stopped=True)
    main(["sweep", str(_sweep_file(tmp_path)), "--runs-dir", str(tmp_path / "runs")])
    out = capsys.readouterr().out
    table = _table(out)
    assert len(table) == 3 and not any(" failed " in line or "KeyError" in line or "None" in line for line in table)
    assert table[0].startswith("mlp1 seed=0 ") and " completed " in table[0]
    for seed, line in zip((1, 2), table[1:], strict=True):
        assert line.startswith(f"mlp1 seed={seed} ") and f"-s{seed}-" in line  # its run id, as the trial computes it
        assert "not started" in line and "the same sweep command runs it" in line
    assert "the same `harness sweep` command resumes it" in out


def test_unstarted_trials_ray_does_not_name_are_counted_as_not_started(env, tmp_path, monkeypatch, capsys):
    _stopped_sweep(monkeypatch, stopped=True, ray_knows=False)
    main(["sweep", str(_sweep_file(tmp_path)), "--runs-dir", str(tmp_path / "runs")])
    table = _table(capsys.readouterr().out)
    assert len(table) == 2 and " completed " in table[0]
    assert table[1].startswith("2 more trials ") and "not started" in table[1] and " failed " not in table[1]


def test_an_interrupted_sweep_exits_130_as_an_interrupted_bench(env, tmp_path, monkeypatch, capsys):
    _stopped_sweep(monkeypatch, stopped=True)
    assert main(["sweep", str(_sweep_file(tmp_path)), "--runs-dir", str(tmp_path / "runs")]) == 130
    captured = capsys.readouterr()
    assert _table(captured.out)  # the table is printed before the command stops
    assert captured.err.strip() == ("interrupted; the same command resumes the sweep (completed trials are not "
                                    "trained again)")
    _stopped_sweep(monkeypatch, stopped=False)  # a sweep that was not interrupted: exit 0, as before
    assert main(["sweep", str(_sweep_file(tmp_path)), "--runs-dir", str(tmp_path / "runs")]) == 0


# stacks ---------------------------------------------------------------------------------------------------------


def test_ctrl_c_while_a_completed_stack_writes_its_predictions_says_the_runs_completed(env, monkeypatch, capsys):
    import harness.runners.predictions

    def ctrl_c(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(harness.runners.predictions, "write_after_run", ctrl_c)
    assert main(STACK) == 130
    err = capsys.readouterr().err.strip()
    assert "resumes the run" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("interrupted after the stack's 2 runs completed: they are stored as completed (the same "
                          "command reports them); the predictions of relations_game-mlp1-smoke-s8-"), err
    assert err.endswith("were not written: the same command writes them (or `harness predict <run_id>`)")
    results = _results(Path(env["HARNESS_RUNS_DIR"]))
    assert [results[s]["status"] for s in (8, 9)] == ["completed", "completed"]  # both stored before the Ctrl-C


def test_ctrl_c_while_the_stack_stores_its_members_waits_and_says_they_completed(env, monkeypatch, capsys,
                                                                                   foreground_ctrl_c):
    real_finish, sent = stacked_launch._finish, []

    def finish_with_ctrl_c(*args: object) -> None:
        if not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGINT)  # deferred until every member is stored
        real_finish(*args)

    monkeypatch.setattr(stacked_launch, "_finish", finish_with_ctrl_c)
    assert main(STACK) == 130
    captured = capsys.readouterr()
    assert "resumes the run" not in captured.err
    assert captured.err.strip() == ("interrupted after the stack's 2 runs completed: they are stored as completed "
                                    "(the same command reports them)")
    assert captured.out.count("predictions: ") == 2  # the predictions were written before the command stopped
    assert [r["status"] for r in _results(Path(env["HARNESS_RUNS_DIR"])).values()] == ["completed", "completed"]


def test_an_interrupted_members_line_names_its_seed_without_a_dangling_colon(env, monkeypatch, capsys):
    original = StackedTrainer._end_epoch

    def end_then_ctrl_c(self: StackedTrainer) -> None:
        original(self)
        raise KeyboardInterrupt

    monkeypatch.setattr(StackedTrainer, "_end_epoch", end_then_ctrl_c)
    assert main(STACK) == 130
    captured = capsys.readouterr()
    lines = [line for line in captured.out.splitlines() if line.startswith("interrupted")]
    assert [line.split(" after ")[0] for line in lines] == ["interrupted: relations_game/mlp1 seed 8",
                                                            "interrupted: relations_game/mlp1 seed 9"]
    assert not any(line.rstrip().endswith(":") for line in lines), lines
    assert captured.err.strip() == "interrupted; the same command resumes the run"  # true: they resume


def test_a_repeated_seed_is_named_before_what_the_config_cannot_stack(env, capsys):
    for model in ("tpr_rnn", "predinet"):  # tpr_rnn's smoke config decays its learning rate on validation loss
        task = "babi" if model == "tpr_rnn" else "relations_game"
        assert main(["bench", "--task", task, "--model", model, "--profile", "smoke", "--seeds", "0,0"]) == 2
        err = capsys.readouterr().err.strip()
        assert err == "error: --seeds 0,0 repeats 0: give each seed once", (model, err)


def test_each_members_epoch_lines_name_its_seed(env, capsys):
    assert main(STACK) == 0
    epochs = [line for line in capsys.readouterr().out.splitlines() if "epoch 1/1 " in line]
    assert [line.split(" epoch")[0] for line in epochs] == ["[seed 8]", "[seed 9]"]
    stream = io.StringIO()
    with contextlib.redirect_stdout(stream), stacked_launch.seed_lines(3):
        print("one", end="")
        print(" line\n\ntwo")
        print("three", end="")  # an unfinished last line ends with the block
    assert stream.getvalue() == "[seed 3] one line\n\n[seed 3] two\n[seed 3] three\n"
