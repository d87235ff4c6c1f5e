"""The run store's files, and what a run does when it is stopped or its files are damaged."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.cli import main
from harness.runs import CurveWriter, Run, atomic_write_text, new_results
from tests.conftest import (
    ROOT,
    command_environ,
    curves,
    only_run,
    requires_loopback_only,
    run_cli,
    run_cli_loopback,
)


def test_atomic_write_leaves_only_the_file(tmp_path):
    target = tmp_path / "a" / "results.json"
    atomic_write_text(target, "one")
    atomic_write_text(target, "two")
    assert target.read_text() == "two"
    assert [p.name for p in target.parent.iterdir()] == ["results.json"]


def test_curves_grow_columns_and_truncate_on_resume(tmp_path):
    path = tmp_path / "metrics.csv"
    curves = CurveWriter(path)
    curves.append(1, 0, {"train/loss": 2.0})
    curves.append(2, 0, {"train/loss": 1.5, "val/acc": 0.5})
    curves.append(3, 1, {"train/loss": 1.0})
    curves.flush()
    assert path.read_text().splitlines()[0] == "step,epoch,train/loss,val/acc"
    reread = CurveWriter(path)
    assert reread.rows[1] == {"step": 2, "epoch": 0, "train/loss": 1.5, "val/acc": 0.5}
    reread.truncate_after(2)
    assert [row["step"] for row in CurveWriter(path).rows] == [1, 2]


def test_results_round_trip_and_owner(tmp_path):
    run = Run(tmp_path / "r")
    run.write_results(new_results("r", {"task": "t", "model": "m"}, "now"))
    assert run.status == "running"
    assert not run.owner_alive()  # this process is the owner: not "another" live writer
    results = run.read_results()
    results["owner"]["pid"] = 2**22 + 12345  # a pid that does not exist
    run.write_results(results)
    assert not run.owner_alive()
    assert run.update_results(status="failed", error="x")["status"] == "failed"
    assert os.listdir(run.path) == ["results.json"]


# Damaged run directories, SIGTERM ------------------------------------------------------------------------
# One supervised run (bAbI / LSTM, smoke profile, 3 epochs of 4 batches) is stopped by SIGTERM after its first
# checkpoint and kept as it was left (`pristine`); each test below puts that state back at the same path
# (Lightning's ModelCheckpoint restores its best-so-far bookkeeping only when the directory is unchanged),
# damages one file, and runs the same command again. The end must be the run an uninterrupted command stores: same
# metrics, best point, steps and curves (CPU training is bitwise reproducible; supervised.py).

SUPERVISED = ["bench", "--task", "babi", "--model", "lstm", "--profile", "smoke", "train.max_epochs=3",
              "train.batch_size=8", "train.eval_batch_size=16",  # smaller batches than smoke's: seconds an epoch
              "train.threads=1"]  # in-process resumes and subprocess runs alike: reductions in the same order


@dataclass
class Stopped:
    """A run stopped by SIGTERM, a copy of it as it was left, and the same command's uninterrupted run."""

    args: list[str]  # the command, --runs-dir included
    run: Path
    pristine: Path
    straight: Path
    environ: dict[str, str]
    code: int  # the exit code of the SIGTERM'd command
    stderr: str

    def restore(self) -> None:
        shutil.rmtree(self.run, ignore_errors=True)
        shutil.copytree(self.pristine, self.run)


def read(run: Path) -> dict:
    return json.loads((run / "results.json").read_text())


def assert_same_as_uninterrupted(run: Path, straight: Path) -> None:
    final, reference = read(run), read(straight)
    assert final["status"] == "completed", final.get("error")
    assert final["metrics"] == reference["metrics"]
    assert final["best"] == reference["best"]
    assert (final["steps"], final["epochs"]) == (reference["steps"], reference["epochs"])
    assert curves(run) == curves(straight)


def wait_for(pattern: str, root: Path, proc: subprocess.Popen, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not list(root.glob(pattern)):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"no {pattern} after {timeout} s"
        time.sleep(0.02)


@pytest.fixture(scope="module")
def stopped(tmp_path_factory: pytest.TempPathFactory) -> Stopped:
    base = tmp_path_factory.mktemp("stopped")
    environ = command_environ(base)
    straight = run_cli([*SUPERVISED, "--runs-dir", str(base / "straight")], environ)
    assert straight.returncode == 0, straight.stderr
    args = [*SUPERVISED, "--runs-dir", str(base / "runs")]
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", *args], cwd=ROOT, env=environ,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for("*/*/*/checkpoints/last.ckpt", base / "runs", proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    run = only_run(base / "runs")
    shutil.copytree(run, base / "pristine")
    return Stopped(args, run, base / "pristine", only_run(base / "straight"), environ, proc.returncode, err)


@pytest.mark.slow
def test_sigterm_is_stored_as_interrupted_and_the_same_command_resumes(stopped: Stopped) -> None:
    assert stopped.code == 130, stopped.stderr
    assert stopped.stderr.strip().splitlines()[-1] == "interrupted; the same command resumes the run"
    left = read(stopped.pristine)
    assert left["status"] == "interrupted" and left["attempts"][-1]["status"] == "interrupted"
    assert left["epochs"] < 3  # stopped mid-training
    stopped.restore()
    resumed = run_cli(stopped.args, stopped.environ)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming from" in resumed.stdout and "(resuming;" in resumed.stdout
    assert [a["status"] for a in read(stopped.run)["attempts"]] == ["interrupted", "completed"]
    assert_same_as_uninterrupted(stopped.run, stopped.straight)


@pytest.mark.slow
def test_a_run_copied_to_another_store_resumes_with_its_best_score(stopped: Stopped, tmp_path: Path) -> None:
    """Copied to another store (another --runs-dir, another machine), the stopped run resumes with the best score its
    checkpoint holds (Lightning reloads it only in the directory the checkpoint was saved in: the next validation
    would replace best.ckpt however it scored) and ends as the uninterrupted run does."""
    moved = tmp_path / "elsewhere"
    shutil.copytree(stopped.pristine, moved / stopped.run.relative_to(stopped.run.parents[2]))
    resumed = run_cli([*SUPERVISED, "--runs-dir", str(moved)], stopped.environ)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming from" in resumed.stdout
    assert "dirpath has changed" not in resumed.stdout + resumed.stderr
    assert_same_as_uninterrupted(only_run(moved), stopped.straight)


def cut_in_half(relative: str) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        path = run / relative
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return damage


DAMAGES = [  # (damage, the fragment of the one line that says so, where the damaged file is kept)
    ("results.json cut short", cut_in_half("results.json"), "results.json is not readable JSON",
     "results.json.damaged-*"),
    ("results.json a list", lambda run: (run / "results.json").write_text("[1, 2]\n"),
     "results.json holds a list, not an object", "results.json.damaged-*"),
    ("last.ckpt cut short", cut_in_half("checkpoints/last.ckpt"), "last.ckpt is damaged",
     "checkpoints/last.ckpt.damaged-*"),
    ("best.ckpt cut short", cut_in_half("checkpoints/best.ckpt"), "best.ckpt is damaged",
     "checkpoints/best.ckpt.damaged-*"),
    ("metrics.csv cut short", cut_in_half("metrics.csv"), "metrics.csv is damaged", "metrics.csv.damaged-*"),
]


@pytest.fixture
def in_process(stopped: Stopped, monkeypatch: pytest.MonkeyPatch) -> Stopped:
    """The stopped run put back, and this process's environment set as the command's."""
    for key in ("HARNESS_DATA_DIR", "HARNESS_CACHE_DIR", "HARNESS_RUNS_DIR", "WANDB_MODE"):
        monkeypatch.setenv(key, stopped.environ[key])
    stopped.restore()
    return stopped


@pytest.mark.parametrize(("what", "damage", "says", "kept_as"), DAMAGES, ids=[d[0] for d in DAMAGES])
@pytest.mark.slow
def test_damaged_file_is_named_kept_aside_and_the_run_ends_as_if_never_stopped(
        what: str, damage: Callable[[Path], None], says: str, kept_as: str, in_process: Stopped,
        capsys: pytest.CaptureFixture[str]) -> None:
    run = in_process.run
    damaged_path = run / kept_as.removesuffix(".damaged-*")
    damage(run)
    damaged_bytes = damaged_path.read_bytes()
    code = main(in_process.args)
    out, err = capsys.readouterr()
    assert code == 0, err[-2000:]
    saying = [line for line in out.splitlines() if says in line]
    assert len(saying) == 1, out  # one line names the damage
    (aside,) = run.glob(kept_as)
    assert aside.name in saying[0]
    assert aside.read_bytes() == damaged_bytes  # kept as it was, never deleted
    assert_same_as_uninterrupted(run, in_process.straight)


@pytest.mark.slow
def test_a_run_stopped_before_any_checkpoint_says_once_that_it_starts_again(
        in_process: Stopped, capsys: pytest.CaptureFixture[str]) -> None:
    for checkpoint in (in_process.run / "checkpoints").glob("*.ckpt"):  # as a kill before the first one leaves it
        checkpoint.unlink()
    code = main(in_process.args)
    out, err = capsys.readouterr()
    assert code == 0, err[-2000:]
    assert "(starting again: no checkpoint was saved;" in out
    assert "no intact checkpoint" not in out  # nothing was damaged: the header has said it all
    assert_same_as_uninterrupted(in_process.run, in_process.straight)


@pytest.mark.slow
def test_force_starts_afresh_and_never_deletes_a_damaged_file(in_process: Stopped,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    run = in_process.run
    earlier = run / "checkpoints" / "last.ckpt.damaged-20000101T000000"  # set aside by an earlier attempt
    earlier.write_bytes(b"what an earlier attempt found")
    cut_in_half("results.json")(run)
    damaged_bytes = (run / "results.json").read_bytes()
    code = main([*in_process.args, "--force"])
    out, err = capsys.readouterr()
    assert code == 0, err[-2000:]
    assert "(new;" in out and "resuming from" not in out
    assert len(read(run)["attempts"]) == 1
    assert_same_as_uninterrupted(run, in_process.straight)
    kept = [path.read_bytes() for path in run.rglob("*.damaged-*")]
    assert sorted(kept) == sorted([damaged_bytes, b"what an earlier attempt found"])


@requires_loopback_only
@pytest.mark.slow
def test_sigterm_interrupts_an_rl_run_and_the_same_command_resumes_it(env: dict[str, str], tmp_path: Path) -> None:
    """CartPole / MLP agent at the smoke profile with a larger step budget, in a loopback-only namespace (Ray).
    RL training is not reproducible across a resume (asynchronous sampling), so the end is checked for its
    budget and its evaluation, not for equal numbers."""
    args = ["bench", "--task", "cartpole", "--model", "mlp_agent", "--profile", "smoke", "rl.total_env_steps=1200",
            "--runs-dir", str(tmp_path / "runs")]
    command = " ".join([sys.executable, "-m", "harness.cli", *args])
    proc = subprocess.Popen(["unshare", "-n", "sh", "-c", f"ip link set lo up && exec {command}"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for("*/*/*/checkpoints/algorithm", tmp_path / "runs", proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=180)
    run = only_run(tmp_path / "runs")
    left = read(run)
    assert left["status"] == "interrupted", left.get("error")
    assert 0 < left["env_steps"] < 1200
    assert proc.returncode == 130, err[-3000:]  # as Ctrl-C
    resumed = run_cli_loopback(args, env)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resumed from {run / 'checkpoints' / 'algorithm'} at {left['env_steps']:,} env steps" in resumed.stdout
    final = read(run)
    assert final["status"] == "completed" and final["env_steps"] >= 1200
    assert "eval/episode_return" in final["metrics"]
    assert [a["status"] for a in final["attempts"]] == ["interrupted", "completed"]
