"""Robustness of a run's life: killed runs in the listing, a second Ctrl-C while the final status is written, a
stack member resumed alone, a stopped sweep's table, repeated ``--only``, missing predictions, leftover temporary
files, the advice on a diverged run and the refusals of ``--seeds``. Each test is seconds long (smoke profile)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from harness.cli import main
from harness.errors import UserError
from harness.runners import build, build_checks, killed_attempts, sweep_file, tune
from harness.runners import launch as launch_module
from harness.runners.stacked_launch import short_vmap_reason
from harness.runs import GONE, owner_state, run_dir
from tests.conftest import ROOT, only_run
from tests.test_cli_e2e import nan_model_registered

RELATIONS = ["bench", "--task", "relations_game", "--model", "mlp1", "--profile", "smoke", "train.max_epochs=1"]


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _fake_run(runs: Path, run_id: str, **fields: object) -> Path:
    path = runs / "babi" / "lstm" / run_id
    path.mkdir(parents=True)
    (path / "results.json").write_text(json.dumps({"run_id": run_id, "task": "babi", "model": "lstm", **fields}))
    return path


def _results(run: Path) -> dict:
    return json.loads((run / "results.json").read_text())


def test_runs_marks_a_running_run_whose_process_is_gone_but_not_one_of_another_host(env, capsys):
    runs = Path(env["HARNESS_RUNS_DIR"])
    here = socket.gethostname()
    _fake_run(runs, "a-killed", status="running", owner={"host": here, "pid": _dead_pid()})
    _fake_run(runs, "b-elsewhere", status="running", owner={"host": here + "-other", "pid": _dead_pid()})
    assert main(["runs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    row = {line.split()[0]: line for line in lines[1:3]}
    assert GONE in row["a-killed"]
    assert row["b-elsewhere"].split()[1] == "running" and "gone" not in row["b-elsewhere"]
    assert owner_state({"status": "running", "owner": {"host": here, "pid": os.getpid()}}) is None  # itself
    assert "1 run(s) say running but their process has ended" in lines[-1]


def test_a_sweep_trials_run_is_alive_while_its_ray_worker_runs_under_the_workers_title():
    """A Ray worker rewrites its command line (``ray::ImplicitFunc.train``): its run is still alive, so `harness runs`
    does not call it killed and `harness bench` of the same run does not become its second writer; a process of
    another program with the run's pid (reused) still means the run's process is gone."""
    here = socket.gethostname()
    worker = subprocess.Popen(["bash", "-c", "exec -a ray::ImplicitFunc.train sleep 30"])
    other = subprocess.Popen(["sleep", "30"])
    try:
        deadline = time.monotonic() + 10
        while b"ray::" not in Path(f"/proc/{worker.pid}/cmdline").read_bytes() and time.monotonic() < deadline:
            time.sleep(0.05)  # until bash has exec'd
        assert owner_state({"status": "running", "owner": {"host": here, "pid": worker.pid}}) == "alive"
        assert owner_state({"status": "running", "owner": {"host": here, "pid": other.pid}}) == "gone"
    finally:
        for process in (worker, other):
            process.kill()
            process.wait()


def test_a_second_ctrl_c_while_the_final_status_is_written_leaves_the_run_interrupted(env, monkeypatch, capsys):
    real_train, real_code_files = launch_module._train, launch_module.code_files
    handler_before = signal.getsignal(signal.SIGINT)  # default_int_handler, or SIG_IGN in a background job

    def train_then_ctrl_c(*args, **kwargs):
        real_train(*args, **kwargs)  # the curve reaches its last epoch
        raise KeyboardInterrupt  # the first Ctrl-C

    def second_ctrl_c():
        os.kill(os.getpid(), signal.SIGINT)  # lands while _finish fingerprints the code
        return real_code_files()

    monkeypatch.setattr(launch_module, "_train", train_then_ctrl_c)
    monkeypatch.setattr(launch_module, "code_files", second_ctrl_c)
    assert main(RELATIONS) == 130
    assert "interrupted; the same command resumes the run" in capsys.readouterr().err
    results = _results(only_run(Path(env["HARNESS_RUNS_DIR"])))
    assert results["status"] == "interrupted"
    assert (results["steps"], results["epochs"]) == (4, 1)  # the progress the curve reached, not 0
    assert (results["attempts"][-1]["steps"], results["attempts"][-1]["status"]) == (4, "interrupted")
    assert signal.getsignal(signal.SIGINT) == handler_before  # the handler is restored


def test_an_unfinished_stack_member_is_not_resumed_alone_and_a_completed_one_is_reported(env, capsys):
    stack = ["bench", "--task", "relations_game", "--model", "mlp1", "--profile", "smoke", "train.max_epochs=1"]
    assert main([*stack, "--seeds", "8,9"]) == 0
    runs = Path(env["HARNESS_RUNS_DIR"])
    member = next(runs.glob("*/*/*-s8-*"))
    results = _results(member)
    results["status"] = "interrupted"  # as a kill leaves it (its checkpoint is the stacked trainer's)
    (member / "results.json").write_text(json.dumps(results))
    before = {p: p.read_bytes() for p in member.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert main([*stack, "--seed", "8"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--seeds 8,9 in place of --seed 8" in err and "Traceback" not in err
    assert {p: p.read_bytes() for p in member.rglob("*") if p.is_file()} == before  # nothing written
    assert main([*stack, "--seed", "9"]) == 0
    out = capsys.readouterr().out
    assert "already completed" in out and "predictions are missing" not in out


def test_a_completed_run_without_predictions_gets_them_from_the_same_command(env, capsys):
    assert main(RELATIONS) == 0
    run = only_run(Path(env["HARNESS_RUNS_DIR"]))
    for path in (run / "predictions").iterdir():
        path.unlink()
    capsys.readouterr()
    assert main(RELATIONS) == 0
    out = capsys.readouterr().out
    assert "already completed" in out and f"{run.name}: its predictions are missing" in out
    assert (run / "predictions" / "summary.json").is_file()


def test_leftover_temporary_files_of_killed_writes_are_removed_when_the_run_resumes(env, capsys):
    assert main(RELATIONS) == 0
    run = only_run(Path(env["HARNESS_RUNS_DIR"]))
    results = _results(run)
    results["status"] = "interrupted"
    (run / "results.json").write_text(json.dumps(results))
    leftovers = [run / "checkpoints" / ".last.ckpt.k3x_9ab2.tmp", run / ".results.json.abcdefgh.tmp"]
    others = [run / "checkpoints" / ".notes.tmp", run / "checkpoints" / "last.ckpt.tmp"]
    for path in [*leftovers, *others]:
        path.write_text("x")
    assert main(RELATIONS) == 0
    assert not any(path.exists() for path in leftovers)
    assert all(path.exists() for path in others)  # only atomic_write's naming pattern
    assert "removed 2 temporary file(s) left by a killed write" in capsys.readouterr().out


def test_the_diverged_advice_mentions_a_checkpoint_only_when_there_is_one(env, capsys):
    with nan_model_registered("nan_model2"):
        assert main(["bench", "--task", "babi", "--model", "nan_model2", "--profile", "smoke"]) == 1
    (why,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("diverged: ")]
    assert "no checkpoint was written" in why and "checkpoint (" not in why
    assert "repeats the same steps" in why and "optim.lr" in why
    run = only_run(Path(env["HARNESS_RUNS_DIR"]))
    (run / "checkpoints").mkdir(exist_ok=True)
    (run / "checkpoints" / "last.ckpt").write_bytes(b"")
    composed = SimpleNamespace(kind="supervised")
    assert "resumes from its last checkpoint (checkpoints/last.ckpt)" in launch_module.diverged_advice(
        launch_module.Run(run), composed)


def test_seeds_refusals_are_plain(env, capsys):
    assert main(["bench", "--task", "cartpole", "--model", "mlp_agent", "--profile", "smoke", "--seeds", "0,1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("error: --seeds stacks supervised runs only; cartpole is an RL task: run one seed at a time with "
                   "--seed")
    long_reason = ("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over calling "
                   ".item() on a Tensor, please try to rewrite what you're doing with other operations. If error is "
                   "occurring somewhere inside PyTorch internals, please file a bug report.")
    assert short_vmap_reason(long_reason) == "the model calls .item() on a tensor (reads its value on the host)"
    assert short_vmap_reason("vmap: " + "x" * 200 + ". More.") == "x" * 77 + "..."


def test_a_stopped_sweeps_trials_are_read_from_the_run_store(tmp_path, capsys):
    sweep = sweep_file.Sweep(name="lc", task="relations_game", models=["mlp1"], profile="smoke", seeds=[0, 1, 2],
                       overrides=["train.max_epochs=1"])
    runs = tmp_path / "runs"
    ids = {}
    for seed, fields in ((0, {"status": "completed", "metrics": {"test/acc": 0.75}}),
                         (1, {"status": "running", "owner": {"host": socket.gethostname(), "pid": _dead_pid()}})):
        trial = {"model": "mlp1", "seed": seed, "space": {}}
        composed = tune.compose_trial(sweep, trial)
        build.prepare_task(composed)  # the data fingerprint is part of the run id
        run = run_dir("relations_game", "mlp1", composed.run_id, runs)
        run.path.mkdir(parents=True)
        run.write_results({"run_id": composed.run_id, "task": "relations_game", "model": "mlp1", **fields})
        ids[seed] = composed.run_id
    nothing = [SimpleNamespace(config={"model": "mlp1", "seed": seed, "space": {}}, metrics={}, error=None)
               for seed in (0, 1, 2)]
    rows = tune.sweep_rows(nothing, sweep, runs)
    assert [(r["run_id"], r["status"]) for r in rows] == [(ids[0], "completed"), (ids[1], "interrupted"),
                                                          (rows[2]["run_id"], "interrupted")]
    assert rows[0]["metrics"] == {"test/acc": 0.75} and "resumes it from its checkpoint" in rows[1]["reason"]
    assert rows[2]["run_id"] and "before its run started" in rows[2]["reason"]
    stored = run_dir("relations_game", "mlp1", ids[1], runs).read_results()  # the store says what the table says
    assert stored["status"] == "interrupted"
    assert stored["error"] == "interrupted: the sweep stopped its run (the same sweep command resumes it)"
    out = capsys.readouterr().out
    assert "sweep lc was stopped (interrupted) before 3 of its 3 trials reported (1 of their runs had completed all " \
        "the same: the run store says so below)" in out
    assert "the same `harness sweep` command resumes it" in out


def test_a_killed_runs_record_is_closed_only_when_its_process_is_gone_and_no_one_holds_its_folder(tmp_path):
    here, started = socket.gethostname(), "2026-01-01T00:00:00Z"
    attempt = {"status": "running", "started_at": started}
    run = run_dir("babi", "lstm", "r", tmp_path)
    run.path.mkdir(parents=True)
    run.write_results({"run_id": "r", "task": "babi", "model": "lstm", "status": "running", "wall_time_s": 5.0,
                       "owner": {"host": here, "pid": _dead_pid()}, "attempts": [dict(attempt)]})
    os.utime(run.results_path, (0, 1767225610))  # its last write: 10 s after the attempt started
    locked = os.open(run.path, os.O_RDONLY)
    try:
        import fcntl

        fcntl.flock(locked, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a command that claimed the run meanwhile
        assert killed_attempts.close_killed_run(run, "stopped") is None
    finally:
        os.close(locked)
    assert run.read_results()["status"] == "running"
    closed = killed_attempts.close_killed_run(run, "stopped")
    assert closed == run.read_results() and closed["status"] == "interrupted" and closed["error"] == "stopped"
    assert closed["attempts"][0]["status"] == "interrupted" and closed["attempts"][0]["error"] == killed_attempts.KILLED
    assert closed["attempts"][0]["finished_at"] == "2026-01-01T00:00:10Z" and closed["wall_time_s"] == 15.0
    assert killed_attempts.close_killed_run(run, "again") is None  # interrupted already: left as it was
    alive = run_dir("babi", "lstm", "alive", tmp_path)
    alive.path.mkdir(parents=True)
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "harness"])  # a live trainer
    try:
        alive.write_results({"run_id": "alive", "task": "babi", "model": "lstm", "status": "running",
                             "owner": {"host": here, "pid": owner.pid}})
        assert killed_attempts.close_killed_run(alive, "stopped") is None and alive.status == "running"
    finally:
        owner.kill()
        owner.wait()


def test_repeated_only_for_one_key_adds_values_and_for_two_keys_narrows_both(tmp_path):
    sweep = sweep_file.load_sweep(ROOT / "sweeps" / "babi_tpr_rnn_ablations_cpu.yaml")
    sweep_file.narrow_grid(sweep, "task.babi_id=15")
    sweep_file.narrow_grid(sweep, "task.babi_id=1")
    sweep_file.narrow_grid(sweep, "model.operations=[write]")
    assert sweep.space["task.babi_id"]["values"] == [1, 15]
    assert sweep.space["model.operations"]["values"] == [["write"]]
    with pytest.raises(UserError, match="21 not among the sweep's values"):
        sweep_file.narrow_grid(sweep, "task.babi_id=21")
    bad = tmp_path / "only.yaml"  # --only is the command line's, not a key of the file
    bad.write_text((ROOT / "sweeps" / "babi_smoke.yaml").read_text() + "only: {}\n")
    with pytest.raises(UserError, match=r"unknown key\(s\) only"):
        sweep_file.load_sweep(bad)


def test_a_missing_sweep_file_suggests_the_close_one_of_sweeps():
    with pytest.raises(UserError, match=r"no sweep file babi_smok \(did you mean sweeps/babi_smoke.yaml\?\)"):
        sweep_file.load_sweep(Path("babi_smok"))
    with pytest.raises(UserError, match=r"the sweep files are sweeps/<name>.yaml"):
        sweep_file.load_sweep(Path("zzzz_qqqq"))


def test_last_ckpt_follows_every_validation_not_only_a_new_best(env):
    """A killed run resumes from its last validation: with a learning rate too small to move the validation accuracy,
    best.ckpt stays at the first epoch while last.ckpt follows the third."""
    assert main([*RELATIONS[:-1], "train.max_epochs=3", "optim.lr=1e-12"]) == 0
    checkpoints = only_run(Path(env["HARNESS_RUNS_DIR"])) / "checkpoints"
    best, last = (torch.load(checkpoints / name, weights_only=True) for name in ("best.ckpt", "last.ckpt"))
    assert (best["epoch"], last["epoch"]) == (0, 2)
    assert last["harness"]["fit_stopped"] is False  # max_epochs ended it, after the checkpoint


def test_the_checkpoint_callback_keeps_lightnings_state_key():
    """A run checkpointed by Lightning's own ModelCheckpoint resumes its best score under LastAfterEveryValidation."""
    from lightning.pytorch.callbacks import ModelCheckpoint

    from harness.runners.supervised import LastAfterEveryValidation

    settings = {"filename": "best", "monitor": "val/acc", "mode": "max", "save_last": True, "save_top_k": 1}
    assert LastAfterEveryValidation(**settings).state_key == ModelCheckpoint(**settings).state_key


def test_a_run_another_command_is_training_is_refused_before_it_writes(env, tmp_path, capsys):
    """Two commands of one config started moments apart both passed the owner check (results.json is written only
    once the model is built) and trained into one folder; the folder's lock now stops the second in one line.
    The lock is held here by another open descriptor, as another process would hold it."""
    import fcntl

    from harness.config import compose

    args = ["bench", "--task", "babi", "--model", "lstm", "--profile", "smoke", "task.source=generator"]
    composed = compose("babi", "lstm", "smoke", ["task.source=generator"])
    build_checks.prepare_checked(composed)  # the data fingerprint, part of the run id
    folder = Path(env["HARNESS_RUNS_DIR"]) / "babi" / "lstm" / composed.run_id
    folder.mkdir(parents=True)
    holder = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert main(args) == 2
        assert capsys.readouterr().err.strip() == (
            f"error: run {composed.run_id} is being trained by another process (the same config, started moments "
            "before), or retested or predicted; wait for it or stop it")
        assert not list(folder.iterdir())
    finally:
        os.close(holder)
    assert main(args) == 0  # the lock let go: it trains, and lets go of it in turn
    assert main(args) == 0 and "already completed" in capsys.readouterr().out


def test_a_sweep_trial_waits_for_the_trial_training_its_config_and_reports_that_run(tmp_path, monkeypatch, capsys):
    """A sampled sweep may draw one config twice; the second trial failed on the folder's lock. In a trial
    (``HARNESS_WAIT_FOR_RUN=1``, set by the sweep) it now waits, then finds the run the first trained."""
    import fcntl
    import threading

    from harness.runs import Run

    composed = SimpleNamespace(run_id="babi-lstm-smoke-s0-00000000")
    run = Run(tmp_path / composed.run_id)
    run.path.mkdir()
    holder = os.open(run.path, os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
    monkeypatch.setenv(launch_module.WAIT_FOR_RUN, "1")
    monkeypatch.setattr(launch_module, "already_completed", lambda run, composed, force, complete=True: True)
    outcome: list[bool] = []
    waiter = threading.Thread(target=lambda: outcome.append(launch_module.claim_run(run, composed, False)))
    try:
        waiter.start()
        waiter.join(timeout=1.0)
        assert waiter.is_alive() and not outcome  # waiting on the other trial
    finally:
        os.close(holder)  # the other trial ends
    waiter.join(timeout=10)
    assert outcome == [True]
    assert "being trained by another trial (the sweep drew its config twice); waiting" in capsys.readouterr().out
    launch_module.release_claims()


def test_a_command_that_needs_a_completed_run_says_a_killed_one_resumes_with_its_command(tmp_path):
    from harness.errors import UserError
    from harness.runs import Run

    killed = _fake_run(tmp_path, "a-killed", status="running", owner={"host": socket.gethostname(),
                                                                       "pid": _dead_pid()})
    with pytest.raises(UserError, match="status 'running'; only a completed run can be retested; its process is "
                                        "gone \\(killed\\?\\): the command that trained it resumes it"):
        Run(killed).completed_results("retested")
    elsewhere = _fake_run(tmp_path, "b-elsewhere", status="running", owner={"host": "another-host", "pid": 1})
    with pytest.raises(UserError) as caught:
        Run(elsewhere).completed_results("retested")
    assert "gone" not in str(caught.value)


def test_a_summary_with_nothing_to_report_ends_at_the_wall_time(tmp_path):
    from harness.runners.existing_run import _summary_line
    from harness.runs import Run

    base = {"status": "diverged", "task": "babi", "model": "lstm", "wall_time_s": 0.2}
    assert _summary_line(Run(tmp_path), base).splitlines()[0] == "diverged: babi/lstm in 0 s"
    rated = {**base, "status": "completed", "metrics": {"test/acc": 0.5}, "throughput": {"train/examples_per_s": 31}}
    assert _summary_line(Run(tmp_path), rated).splitlines()[0] == ("completed: babi/lstm in 0 s: test/acc=0.5000  31 "
                                                                   "train examples/s")
