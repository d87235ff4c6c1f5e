"""The run store as a user whose runs get killed or whose files get damaged finds it: a run without its config is
not published, and a read-only store refuses a retest or a prediction in one line and still reports a completed
run."""

from __future__ import annotations

import json
import socket
import tempfile
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from harness.cli import main
from harness.config import compose
from harness.errors import UserError
from harness.publish import publish
from harness.runners.build_checks import prepare_checked
from harness.runners.retest import retest
from harness.tracking import server_problem

SMOKE = ("babi", "tpr_rnn", "smoke")


def completed_run(runs: Path, config: bool = True, task: str = "babi", model: str = "tpr_rnn", seed: int = 0) -> Path:
    """A completed run's folder as the launcher leaves it (results.json; config.yaml unless ``config`` is off), for
    the command line's smoke run of ``task``/``model``/``seed``, without training it."""
    composed = compose(task, model, "smoke", [f"seed={seed}"])
    prepare_checked(composed)  # the task pins its data source, which the run id hashes
    folder = runs / task / model / composed.run_id
    folder.mkdir(parents=True)
    results = {
        "run_id": composed.run_id,
        "task": task,
        "model": model,
        "profile": "smoke",
        "seed": seed,
        "status": "completed",
        "metrics": {"test/acc": 0.125},
        "wall_time_s": 1.0,
        "throughput": {},
    }
    (folder / "results.json").write_text(json.dumps(results))
    if config:
        (folder / "config.yaml").write_text(f"task:\n  name: {task}\nmodel:\n  name: {model}\n")
    return folder


def read_only(monkeypatch: pytest.MonkeyPatch, runs: Path) -> None:
    """Every folder under ``runs`` refuses a new entry, as on a read-only file system (also for root, which chmod
    does not stop); the other folders (the cache) stay writable."""
    make = tempfile.mkdtemp

    def refuse(*args: object, dir: object = None, **kwargs: object) -> str:  # noqa: A002  mkdtemp's own name
        if dir is not None and Path(str(dir)).is_relative_to(runs):
            raise OSError(30, "Read-only file system")
        return make(*args, dir=dir, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(tempfile, "mkdtemp", refuse)


def test_publish_refuses_a_run_whose_config_is_missing(env, tmp_path):
    runs, store = tmp_path / "runs", tmp_path / "results"
    folder = completed_run(runs, config=False)
    with pytest.raises(UserError, match=r"config\.yaml is missing; cannot be published"):
        publish([folder.name], runs, store)
    assert not store.exists() or not any(store.rglob("results.json"))


@pytest.mark.parametrize("command", ["retest", "predict"])
def test_retest_and_predict_refuse_a_read_only_store_in_one_line(env, tmp_path, monkeypatch, capsys, command):
    runs = tmp_path / "runs"
    folder = completed_run(runs)
    before = (folder / "results.json").read_text()
    read_only(monkeypatch, runs)
    extra = ["task.test_on=[generator]"] if command == "retest" else []
    assert main([command, folder.name, *extra, "--runs-dir", str(runs)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"cannot be {command}ed: cannot write into" in err[0]
    assert (folder / "results.json").read_text() == before


def test_retest_checks_the_store_before_loading_anything(env, tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    folder = completed_run(runs, config=False)  # without the check, the missing config would be reported instead
    read_only(monkeypatch, runs)
    with pytest.raises(UserError, match="cannot be retested: cannot write into"):
        retest(folder.name, ["task.test_on=[generator]"], runs)


def test_bench_reports_a_completed_run_from_a_read_only_store(env, tmp_path, monkeypatch, capsys):
    runs = tmp_path / "runs"
    completed_run(runs)
    read_only(monkeypatch, runs)
    assert main(["bench", "--task", "babi", "--model", "tpr_rnn", "--profile", "smoke", "--runs-dir", str(runs)]) == 0
    assert "already completed" in capsys.readouterr().out


def test_sync_asks_whether_the_wandb_server_answers_before_it_waits_on_it():
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        assert server_problem(f"http://127.0.0.1:{port}", timeout_s=2) is None
    problem = server_problem(f"http://127.0.0.1:{port}", timeout_s=2)  # closed now: refused at once
    assert problem is not None and problem.startswith(f"cannot reach the W&B server http://127.0.0.1:{port}")
    assert "names no host" in (server_problem("not a url") or "")


@pytest.mark.parametrize("damage", ["missing", "empty"])
def test_bench_writes_a_completed_runs_lost_config_again(env, tmp_path, capsys, damage):
    runs = tmp_path / "runs"
    folder = completed_run(runs)
    config = folder / "config.yaml"
    config.unlink() if damage == "missing" else config.write_text("")
    assert main(["bench", "--task", "babi", "--model", "tpr_rnn", "--profile", "smoke", "--runs-dir", str(runs)]) == 0
    assert "written again from this command's config" in capsys.readouterr().out
    composed = compose(*SMOKE)
    prepare_checked(composed)
    assert config.read_text() == OmegaConf.to_yaml(composed.cfg, resolve=True)
    assert len(list(folder.glob("config.yaml.damaged-*"))) == (damage == "empty")  # set aside, not deleted


def test_a_completed_stack_is_reported_from_a_read_only_store(env, tmp_path, monkeypatch, capsys):
    runs = tmp_path / "runs"
    for seed in (0, 1):
        completed_run(runs, task="relations_game", model="predinet", seed=seed)
    read_only(monkeypatch, runs)
    args = ["bench", "--task", "relations_game", "--model", "predinet", "--profile", "smoke", "--seeds", "0,1"]
    assert main([*args, "--runs-dir", str(runs)]) == 0
    assert capsys.readouterr().out.count("already completed") == 2


def test_force_keeps_the_offline_wandb_runs_of_the_run_it_clears(env, tmp_path, capsys):
    from harness.runners.existing_run import _existing
    from harness.runs import Run

    runs = tmp_path / "runs"
    folder = completed_run(runs)
    offline = folder / "wandb" / "offline-run-20260101_000000-abc"
    offline.mkdir(parents=True)
    (offline / "run-abc.wandb").write_bytes(b"history")
    composed = compose(*SMOKE)
    prepare_checked(composed)
    for attempt in (1, 2):  # a second forced start within the same second gets its own folder
        assert _existing(Run(folder), True, composed) is None and not folder.exists()
        assert "its 1 offline W&B run(s) are kept in" in capsys.readouterr().out
        kept = sorted(folder.parent.glob(f".{folder.name}.wandb-*"))
        assert len(kept) == attempt
        assert (kept[-1] / offline.name / "run-abc.wandb").read_bytes() == b"history"
        if attempt == 1:
            completed_run(runs)
            offline.mkdir(parents=True)
            (offline / "run-abc.wandb").write_bytes(b"history")


@pytest.mark.parametrize(("kind", "marker", "epochs"), [("stepwise", "val/acc", 3),
                                                       ("supervised", "train/examples_per_s", 4)])
def test_an_unfinished_attempt_records_how_far_its_curve_reached(tmp_path, kind, marker, epochs):
    from harness.runners.launch import record_progress
    from harness.runs import CurveWriter, Run

    run = Run(tmp_path / "run")
    run.path.mkdir()
    curve = CurveWriter(run.metrics_path)
    curve.append(10, 2, {marker: 1.0})
    curve.append(20, 3, {marker: 0.5})
    curve.append(20, 3, {"val/acc": 0.4})
    curve.flush()
    results = {"status": "interrupted", "steps": 0, "attempts": [{"status": "interrupted"}]}
    record_progress(run, results, kind)
    assert results["steps"] == 20 and results["epochs"] == epochs and results["attempts"][-1]["steps"] == 20


def test_an_unfinished_stepwise_attempt_records_the_cycle_of_its_checkpoint(tmp_path):
    """Stepwise training logs every ``log_every`` cycles but flushes its curve and checkpoints only when it
    validates (``eval_every``): killed after cycle 15's validation (logged at 10, validated at 15), it resumes from
    cycle 15, which its attempt records, not the 10 of its last training row."""
    from harness.runners.launch import record_progress
    from harness.runs import CurveWriter, Run

    run = Run(tmp_path / "run")
    run.path.mkdir()
    curve = CurveWriter(run.metrics_path)
    curve.append(10, 0, {"train/loss": 1.0})
    curve.append(15, 1, {"val/acc": 0.4, "val/loss": 2.0, "train/world_steps_per_s": 100.0})
    curve.flush()
    results = {"status": "interrupted", "steps": 0, "attempts": [{"status": "interrupted"}]}
    record_progress(run, results, "stepwise")
    assert (results["steps"], results["epochs"], results["attempts"][-1]["steps"]) == (15, 1, 15)
