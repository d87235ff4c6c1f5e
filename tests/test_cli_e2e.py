"""The real command line, end to end, at the smoke profile."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch

from harness.cli import main
from harness.registry import REGISTRY, ModelSpec, TaskSpec
from tests.conftest import ROOT, curves, only_run, requires_real_babi, run_cli

SMOKE = ["bench", "--task", "babi", "--model", "tpr_rnn", "--profile", "smoke"]


@pytest.mark.slow
def test_smoke_bench_stores_a_complete_run_and_reports_it_without_retraining(env):
    done = run_cli(SMOKE, env)
    assert done.returncode == 0, done.stderr
    run = only_run(Path(env["HARNESS_RUNS_DIR"]))
    results = json.loads((run / "results.json").read_text())
    assert results["status"] == "completed" and results["schema_version"] == 2
    assert results["run_id"] == run.name and run.name.startswith("babi-tpr_rnn-smoke-s0-")
    assert {"test/acc", "test/loss", "test/error", "val/acc"} <= set(results["metrics"])
    assert results["throughput"]["train/examples_per_s"] > 0
    assert results["data_source"] and results["versions"]["torch"].startswith("2.13.0")
    assert results["steps"] == 8 and results["epochs"] == 2
    assert (run / "config.yaml").exists() and (run / "checkpoints" / "last.ckpt").exists()
    assert (run / "checkpoints" / "best.ckpt").exists()
    assert "test/acc" in (run / "metrics.csv").read_text().splitlines()[0]
    assert "completed: babi/tpr_rnn" in done.stdout

    stamp = (run / "results.json").stat().st_mtime_ns
    again = run_cli(SMOKE, {**env, "PYTHONPROFILEIMPORTTIME": "1"})  # each import's line on stderr
    assert again.returncode == 0 and "already completed" in again.stdout
    assert (run / "results.json").stat().st_mtime_ns == stamp
    imported = {line.rsplit("|", 1)[1].strip() for line in again.stderr.splitlines() if line.startswith("import time:")}
    assert "harness.runners.launch" in imported and "lightning" not in imported  # the answer needs no trainer

    listed = run_cli(["runs"], env)
    assert run.name in listed.stdout and "completed" in listed.stdout and "test/acc=" in listed.stdout

    forced = run_cli([*SMOKE, "--force"], env)
    assert forced.returncode == 0 and "(new;" in forced.stdout
    assert len(json.loads((run / "results.json").read_text())["attempts"]) == 1


@pytest.mark.slow
def test_same_seed_gives_identical_metrics_and_curves(env, tmp_path):
    first = run_cli([*SMOKE, "--model", "lstm", "--runs-dir", str(tmp_path / "a")], env)
    second = run_cli([*SMOKE, "--model", "lstm", "--runs-dir", str(tmp_path / "b")], env)
    other_seed = run_cli([*SMOKE, "--model", "lstm", "--seed", "1", "--runs-dir", str(tmp_path / "c")], env)
    assert first.returncode == second.returncode == other_seed.returncode == 0
    a, b, c = (only_run(tmp_path / name) for name in "abc")
    assert json.loads((a / "results.json").read_text())["metrics"] == json.loads((b / "results.json").read_text())[
        "metrics"]
    assert curves(a) == curves(b)
    assert curves(a) != curves(c)


@pytest.mark.slow
def test_killed_run_resumes_and_finishes_like_an_uninterrupted_one(env, tmp_path):
    args = [*SMOKE, "train.max_epochs=6", "train.limit_train_batches=25", "train.log_every_n_steps=5"]
    reference = run_cli([*args, "--runs-dir", str(tmp_path / "straight")], env)
    assert reference.returncode == 0, reference.stderr

    killed_dir = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", *args, "--runs-dir", str(killed_dir)], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list(killed_dir.glob("*/*/*/checkpoints/last.ckpt")) and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    run = only_run(killed_dir)
    interrupted = json.loads((run / "results.json").read_text())
    assert interrupted["status"] == "running" and interrupted["epochs"] == 0  # killed mid-training

    resumed = run_cli([*args, "--runs-dir", str(killed_dir)], env)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming from" in resumed.stdout
    final = json.loads((run / "results.json").read_text())
    straight = json.loads((only_run(tmp_path / "straight") / "results.json").read_text())
    assert final["status"] == "completed" and len(final["attempts"]) == 2
    assert final["metrics"] == straight["metrics"]
    assert final["best"] == straight["best"] and final["steps"] == straight["steps"] > 0
    assert curves(run) == curves(only_run(tmp_path / "straight"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["bench", "--task", "babj", "--model", "tpr_rnn"], "unknown task 'babj' (did you mean 'babi'?)"),
        (["bench", "--task", "babi", "--model", "lsmt"], "unknown model 'lsmt' (did you mean 'lstm'?)"),
        ([*SMOKE, "optim.lrr=1"], "unknown config key 'optim.lrr' (did you mean 'optim.lr'?)"),
        ([*SMOKE, "train.max_epochs=two"], "bad value for 'train.max_epochs'"),
        ([*SMOKE, "task.babi_id=25"], "bad value for 'task.babi_id' (command line): 25 is not one of 1..20, all"),
        (["bench", "--task", "babi", "--model", "lstm", "--profile", "fast"], "unknown profile 'fast'"),
    ],
)
def test_user_mistakes_exit_2_with_one_line(env, args, message):
    done = run_cli(args, env)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"error: {done.stderr.strip()[7:]}"]
    assert message in done.stderr and "Traceback" not in done.stderr
    assert not Path(env["HARNESS_RUNS_DIR"]).exists()  # nothing stored for a command that never ran


def test_incompatible_pair_exits_2_naming_the_models_that_fit(env, capsys):
    REGISTRY.add_task(TaskSpec(name="toy_stream", title="", interface="stream", kind="stepwise", entry="x:Y"))
    try:
        code = main(["bench", "--task", "toy_stream", "--model", "tpr_rnn"])
    finally:
        REGISTRY._extra_tasks.pop("toy_stream")
    err = capsys.readouterr().err
    assert code == 2
    assert "tpr_rnn cannot run on toy_stream: tpr_rnn trains supervised; toy_stream is stepwise" in err
    assert "models that fit toy_stream: stream_lstm, updater_extractor" in err


@pytest.mark.slow
def test_malformed_data_file_fails_with_its_line_before_a_run_exists(env, tmp_path):
    folder = tmp_path / "data" / "babi" / "en-10k"
    folder.mkdir(parents=True)
    (folder / "qa1_single-supporting-fact_train.txt").write_text("1 Mary moved.\n2 Mary went home.\n")
    (folder / "qa1_single-supporting-fact_test.txt").write_text("1 Mary moved.\n2 Where is Mary?\tx\t1\n")
    done = run_cli(SMOKE, {**env, "HARNESS_DATA_DIR": str(tmp_path / "data")})
    assert done.returncode == 2
    assert "qa1_single-supporting-fact_train.txt: no question lines" in done.stderr
    assert not Path(env["HARNESS_RUNS_DIR"]).exists()  # caught before the run directory was made


class NaNModel(torch.nn.Module):
    """A model whose training loss is NaN from the first step (in eval mode, where the launcher's check of a model's
    output runs it before training, its logits are finite: that check refuses a model with NaN logits there)."""

    def __init__(self, cfg, info):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(info["num_classes"]))

    def forward(self, story, story_len, query):
        return self.w.expand(story.shape[0], -1) * (float("nan") if self.training else 1.0)


@contextmanager
def nan_model_registered(name: str) -> Iterator[None]:
    """:class:`NaNModel` as model ``name`` (the LSTM's config, on bAbI's story interface) inside the block."""
    module = types.ModuleType(f"harness_test_{name}")
    module.NaNModel = NaNModel
    sys.modules[module.__name__] = module
    lstm = REGISTRY.model("lstm")
    REGISTRY.add_model(ModelSpec(name=name, title="", shape="recurrent",
                                 interfaces={"story": f"{module.__name__}:NaNModel"}, config=lstm.config))
    try:
        yield
    finally:
        REGISTRY._extra_models.pop(name)


def test_nan_loss_is_stored_as_diverged(env, capsys):
    with nan_model_registered("nan_model"):
        code = main(["bench", "--task", "babi", "--model", "nan_model", "--profile", "smoke"])
    assert code == 1
    results = json.loads((only_run(Path(env["HARNESS_RUNS_DIR"])) / "results.json").read_text())
    assert results["status"] == "diverged" and "non-finite training loss" in results["error"]
    out, err = capsys.readouterr()
    assert "diverged: babi/nan_model" in out
    why = [line for line in err.splitlines() if line.startswith("diverged: ")]  # the console says why, once
    assert len(why) == 1 and "non-finite training loss (nan) at step 1" in why[0], err
    assert "repeats the same steps" in why[0] and "smaller learning rate" in why[0]
    assert "Traceback" not in out + err


@pytest.mark.slow
def test_make_bench_passes_its_variables(env):
    done = subprocess.run(["make", "--no-print-directory", "bench", "TASK=babi", "MODEL=lstm", "PROFILE=smoke",
                           "SEED=2", "ARGS=train.max_epochs=1"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    results = json.loads((only_run(Path(env["HARNESS_RUNS_DIR"])) / "results.json").read_text())
    assert (results["model"], results["profile"], results["seed"], results["epochs"]) == ("lstm", "smoke", 2, 1)
    forced = subprocess.run(["make", "--no-print-directory", "bench", "TASK=babi", "MODEL=lstm", "PROFILE=smoke",
                             "SEED=2", "ARGS=train.max_epochs=1", "FORCE=1"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    assert forced.returncode == 0 and "(new;" in forced.stdout


@requires_real_babi
@pytest.mark.slow
def test_official_files_and_generated_data_never_share_a_run(env, tmp_path):
    args = ["validate", "--task", "babi", "--model", "tpr_rnn", "--profile", "smoke"]
    on_files = run_cli(args, env)
    (tmp_path / "nothing").mkdir()
    generated = run_cli(args, {**env, "HARNESS_DATA_DIR": str(tmp_path / "nothing")})
    assert on_files.returncode == generated.returncode == 0
    assert "source: files" in on_files.stdout and "source: generator" in generated.stdout
    assert "\n# data: files: " in on_files.stdout and "\n# data: generator" in generated.stdout  # what it reads
    assert on_files.stdout.splitlines()[0] != generated.stdout.splitlines()[0]  # the run ids


@pytest.mark.slow
def test_offline_wandb_run_lands_in_the_run_directory(env):
    done = run_cli([*SMOKE, "--model", "lstm", "train.max_epochs=1"], {**env, "WANDB_MODE": "offline"})
    assert done.returncode == 0, done.stderr
    run = only_run(Path(env["HARNESS_RUNS_DIR"]))
    (offline,) = list((run / "wandb").glob("offline-run-*"))
    assert list(offline.glob("run-*.wandb"))
    assert "W&B offline" in done.stdout


@pytest.mark.slow
def test_offline_wandb_keeps_one_open_run_per_stacked_member(env):
    stack = ["bench", "--task", "relations_game", "--model", "mlp1", "--profile", "smoke", "--seeds", "0,1"]
    done = run_cli(stack, {**env, "WANDB_MODE": "offline"})
    assert done.returncode == 0, done.stdout + done.stderr
    runs = sorted(p for p in Path(env["HARNESS_RUNS_DIR"]).glob("*/*/*") if p.is_dir())
    assert len(runs) == 2
    for run in runs:
        (offline,) = list((run / "wandb").glob("offline-run-*"))
        assert list(offline.glob("run-*.wandb"))


@pytest.mark.slow
def test_a_model_that_cannot_run_under_vmap_is_refused_before_any_run_is_stored(env):
    done = run_cli([*SMOKE, "--model", "lstm", "--seeds", "0,1"], env)  # the LSTM reads int(lengths.max())
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("error: lstm cannot train as a stack on babi (")
    assert len(done.stderr.splitlines()) == 1
    assert "train its seeds one by one" in done.stderr
    assert not list(Path(env["HARNESS_RUNS_DIR"]).glob("*/*/*"))


def test_data_command_writes_generated_files_and_rejects_unsupported_ids(env, tmp_path):
    args = ["data", "babi", "--ids", "1", "6", "--n-train", "20", "--n-test", "10", "--out", str(tmp_path)]
    done = run_cli(args, env)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "qa6_yes-no-questions_train.txt").exists()
    bad = run_cli(["data", "babi", "--ids", "21", "--out", str(tmp_path)], env)
    assert bad.returncode == 2 and "data babi --ids 21: bAbI has tasks 1..20" in bad.stderr


def test_data_command_generates_all_twenty_tasks_by_default(env, tmp_path):
    done = run_cli(["data", "babi", "--generate", "--n", "12", "--n-test", "5", "--out", str(tmp_path)], env)
    assert done.returncode == 0, done.stderr
    trains = sorted(tmp_path.glob("qa*_train.txt"))
    assert len(trains) == 20 and len(list(tmp_path.glob("qa*_test.txt"))) == 20
    for path in trains:
        assert sum("\t" in line for line in path.read_text().splitlines()) == 12, path.name


@pytest.mark.slow
def test_a_run_stopped_by_its_time_cap_says_so(env, capsys):
    """Lightning's own notice is silenced with its logs; the runner says the cap ended training (and only then)."""
    assert main(["bench", "--task", "babi", "--model", "lstm", "--profile", "smoke", "train.max_time_s=0.5",
                 "train.max_epochs=100"]) == 0
    out = capsys.readouterr().out
    assert "train.max_time_s=0.5 reached: training stopped after step" in out
    assert main(["bench", "--task", "babi", "--model", "lstm", "--profile", "smoke", "--seed", "1"]) == 0
    assert "reached: training stopped" not in capsys.readouterr().out


@pytest.mark.slow
def test_a_run_whose_reader_goes_away_stops_resumable_as_by_ctrl_c(env):
    """``harness bench ... | head -1``: the pipe closes after the first line; the run stops at its next line of
    output, quietly (exit 1, as any command whose reader went away), stored as interrupted, not failed, and the same
    command resumes it to completion."""
    args = [sys.executable, "-m", "harness.cli", "bench", "--task", "babi", "--model", "lstm", "--profile", "smoke",
            "--", "train.max_epochs=2"]
    with subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as process:
        assert process.stdout is not None and process.stdout.readline().startswith("run babi-lstm-smoke-s0-")
        process.stdout.close()  # as `head -1` does
        _, err = process.communicate(timeout=300)
    assert process.returncode == 1 and "Traceback" not in err, err
    run = only_run(Path(env["HARNESS_RUNS_DIR"]))
    results = json.loads((run / "results.json").read_text())
    assert results["status"] == "interrupted" and "reader of its output went away" in results["error"], results
    again = run_cli(args[3:], env)
    assert again.returncode == 0 and "completed" in again.stdout, again.stderr
    assert json.loads((run / "results.json").read_text())["status"] == "completed"
