"""The RL runner (harness/runners/rl.py): its config checks, metrics, RLModule wrapper and learners
without Ray, then CartPole end to end (start, checkpoint, resume) inside a loopback-only namespace: one smoke run
trained to the end, whose copies the resume tests change as a killed run would leave them."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from harness.config import compose
from harness.runners.rl_metrics import env_steps, iteration_row, loss_is_finite
from tests.conftest import command_environ, curves, requires_loopback_only, run_cli, run_cli_loopback


def test_bad_rl_settings_are_one_line_user_errors(env):
    done = run_cli(["bench", "--task", "cartpole", "--model", "mlp_agent", "--profile", "smoke",
                    "rl.algorithm=sac"], env)
    assert done.returncode == 2, done.stderr
    assert "rl.algorithm" in done.stderr and "impala" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    done = run_cli(["bench", "--task", "cartpole", "--model", "mlp_agent", "rl.unroll=0"], env)
    assert done.returncode == 2 and "rl.unroll" in done.stderr


def test_rl_runs_get_the_rl_defaults_and_supervised_runs_do_not():
    cfg = compose("cartpole", "mlp_agent", "cpu").cfg
    assert cfg.rl.algorithm == "impala" and cfg.rl.optim.name == "adam"  # the task overrides the default
    assert "rl" not in compose("relations_game", "predinet", "smoke").cfg


def test_iteration_rows_flatten_rllib_results():
    result = {
        "num_env_steps_sampled_lifetime": np.int64(4000),
        "env_runners": {"episode_return_mean": np.float32(3.5), "episode_len_mean": 12.0, "win_rate": 0.25,
                        "win_rate/1-0-0": 0.5, "num_episodes_lifetime": 40},
        "learners": {"default_policy": {"total_loss": 1.5, "entropy": 1.2, "mean_vf_loss": 0.3, "vf_loss": 96.0,
                                        "num_trainable_parameters": float("nan")}},
    }
    row = iteration_row(result)
    assert env_steps(result) == 4000
    assert row["train/episode_return"] == 3.5 and row["train/win_rate"] == 0.25
    assert row["train/win_rate/1-0-0"] == 0.5 and row["learner/vf_loss"] == 0.3
    assert all(math.isfinite(v) for v in row.values())
    assert loss_is_finite(result)
    assert not loss_is_finite({"learners": {"default_policy": {"total_loss": float("nan")}}})


def test_the_rl_module_runs_the_agent_once_for_policy_and_value():
    from ray.rllib.core.columns import Columns

    from harness.runners.rl_module import AgentRLModule

    agent = {"entry": "models.control.mlp_agent:MLPAgent", "model": {"hidden": [8]}}
    module = AgentRLModule(observation_space=gym.spaces.Box(-1, 1, (4,), np.float32),
                           action_space=gym.spaces.Discrete(2), model_config=agent)
    batch = {Columns.OBS: torch.randn(5, 4)}
    out = module.forward_train(batch)
    assert out[Columns.ACTION_DIST_INPUTS].shape == (5, 2)
    values = module.compute_values(batch, embeddings=out[Columns.EMBEDDINGS])
    assert values.shape == (5,)
    assert torch.allclose(values, module.compute_values(batch))


@requires_loopback_only
@pytest.mark.slow
def test_simplicial_agent_trains_on_bridge_boxworld_and_reports_puzzle_types(env):
    done = run_cli_loopback(["bench", "--task", "bridge_boxworld", "--model", "simplicial", "--profile", "smoke",
                             "rl.eval_episodes=6", "rl.eval_max_steps=30"], env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run_dir = next(Path(env["HARNESS_RUNS_DIR"]).glob("bridge_boxworld/simplicial/*"))
    results = json.loads((run_dir / "results.json").read_text())
    assert results["status"] == "completed" and results["env_steps"] >= 400
    metrics = results["metrics"]
    assert 0.0 <= metrics["eval/win_rate"] <= 1.0  # unfinished episodes count as lost
    assert any(key.startswith("eval/win_rate/") for key in metrics)  # per puzzle type "L-b-c"
    assert results["parameters"] > 100_000


CARTPOLE_SMOKE = ["bench", "--task", "cartpole", "--model", "mlp_agent", "--profile", "smoke"]


@pytest.fixture(scope="module")
def cartpole_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding the CartPole smoke run trained to the end, trained once for the tests below: each one
    changes and resumes its own copy (a store copied elsewhere resumes as it would in place)."""
    root = tmp_path_factory.mktemp("cartpole")
    done = run_cli_loopback([*CARTPOLE_SMOKE, "--runs-dir", str(root / "runs")], command_environ(root))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return root / "runs"


def _completed_cartpole_run(store: Path, env: dict[str, str]) -> tuple[Path, dict]:
    """A copy of the completed CartPole smoke run in the test's own store: its folder and results."""
    runs = Path(env["HARNESS_RUNS_DIR"])
    shutil.copytree(store, runs, dirs_exist_ok=True)
    run_dir = next(runs.glob("cartpole/mlp_agent/*"))
    return run_dir, json.loads((run_dir / "results.json").read_text())


def _resumed(env: dict[str, str]):  # noqa: ANN202 - subprocess.CompletedProcess
    """The same command again, which must complete."""
    again = run_cli_loopback(CARTPOLE_SMOKE, env)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    return again


@requires_loopback_only
@pytest.mark.slow
def test_cartpole_smoke_trains_checkpoints_and_resumes(cartpole_store, env):
    run_dir, results = _completed_cartpole_run(cartpole_store, env)
    assert results["status"] == "completed" and results["env_steps"] >= 400
    assert results["metrics"]["eval/episode_return"] > 0
    assert 0 <= results["metrics"]["eval/win_rate"] <= 1  # episodes that last to the 500-step limit
    assert (run_dir / "checkpoints" / "algorithm" / "rllib_checkpoint.json").exists()
    header = (run_dir / "metrics.csv").read_text().splitlines()[0]
    assert "train/episode_return" in header and "perf/env_steps_per_s" in header and "select/episode_return" in header
    assert results["selection"]["iteration"] == results["iterations"]  # the last policy: the run's only round
    assert (run_dir / "checkpoints" / "best_policy.pt").exists()

    interrupted = {**results, "status": "failed"}  # as a killed run leaves it: progress only in the curve
    del interrupted["env_steps"], interrupted["iterations"]
    (run_dir / "results.json").write_text(json.dumps(interrupted))
    again = _resumed(env)
    assert f"at {results['env_steps']:,} env steps" in again.stdout
    resumed = json.loads((run_dir / "results.json").read_text())
    assert resumed["status"] == "completed" and len(resumed["attempts"]) == 2
    assert resumed["env_steps"] >= results["env_steps"]


@requires_loopback_only
@pytest.mark.slow
def test_a_resume_starts_where_the_checkpoint_is_when_results_lag_it(cartpole_store, env):
    run_dir, results = _completed_cartpole_run(cartpole_store, env)
    first = curves(run_dir)[0]
    assert results["iterations"] >= 2 and int(first["epoch"]) == 1
    # A SIGKILL after _save swapped in the last checkpoint and before _record wrote its progress: results.json
    # still holds the previous checkpoint's progress (here the first iteration's).
    lagging = {**results, "status": "failed", "env_steps": int(first["step"]), "iterations": 1}
    (run_dir / "results.json").write_text(json.dumps(lagging))
    again = _resumed(env)
    assert f"at {results['env_steps']:,} env steps" in again.stdout
    rows = [row for row in curves(run_dir) if row.get("train/episode_return")]
    assert [int(row["epoch"]) for row in rows] == list(range(1, results["iterations"] + 1))
    assert rows[-1]["step"] == str(results["env_steps"])  # the checkpoint's iterations kept, not retrained


@requires_loopback_only
@pytest.mark.slow
def test_a_resume_after_the_evaluation_row_leaves_one_evaluation_row(cartpole_store, env):
    run_dir, results = _completed_cartpole_run(cartpole_store, env)
    # A SIGKILL after train_rl appended the evaluation row and before the launcher stored the final status.
    (run_dir / "results.json").write_text(json.dumps({**results, "status": "running"}))
    _resumed(env)
    assert sum(1 for row in curves(run_dir) if row.get("eval/win_rate")) == 1
