"""The training loop of an RL run (harness/runners/rl.py, ``train_rl``) on a scripted algorithm instead of RLlib's,
so no Ray starts. The rules, as the module's docstring states them:

* training stops at ``rl.total_env_steps`` environment steps (RLlib's lifetime count,
  ``num_env_steps_sampled_lifetime``, not a sum of per-iteration counts) or once the mean training win rate of the
  last ``STOP_WINDOW`` = 5 iterations reaches (>=) ``rl.stop_at_win_rate``;
* one curve row per iteration (step = env steps, epoch = iteration); the algorithm is saved every
  ``rl.checkpoint_every`` iterations and when training stops;
* a selection round every ``rl.select_every`` iterations and once more at the end; the final evaluation plays the
  best round's weights (Espeholt et al. 2018, "IMPALA", §5, evaluate the trained agent on fresh episodes), and the
  run's metrics are the last iteration's ``train/*`` figures with that evaluation.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from harness.config import compose
from harness.runners import ray_session, rl, rl_select
from harness.runs import Run


class _Module:
    """The driver's RLModule: it holds whatever weights it was last given."""

    def __init__(self) -> None:
        self.state: dict[str, Any] = {}

    def parameters(self) -> list[torch.Tensor]:
        return [torch.zeros(3, 2)]

    def set_state(self, weights: dict[str, Any]) -> None:
        self.state = weights


class _Algo:
    """Iteration i (1-based) samples 100 env steps (lifetime count 100 * i) with training win rate ``wins[i - 1]``;
    the learner's weights after it are {"w": i}."""

    def __init__(self, wins: list[float]) -> None:
        self.wins, self.iteration, self.module, self.saved_at = wins, 0, _Module(), []
        self.learner_group = self

    def train(self) -> dict[str, Any]:
        self.iteration += 1
        return {"num_env_steps_sampled_lifetime": 100 * self.iteration, "num_env_steps_sampled": 100,
                "env_runners": {"win_rate": self.wins[self.iteration - 1],
                                "episode_return_mean": 10.0 * self.iteration},
                "learners": {"default_policy": {"total_loss": 1.0}}}

    def get_weights(self) -> dict[str, dict[str, np.ndarray]]:
        return {"default_policy": {"w": np.array(float(self.iteration))}}

    def get_module(self) -> _Module:
        return self.module

    def save_to_path(self, path: str) -> None:
        Path(path).mkdir(parents=True)
        self.saved_at.append(self.iteration)

    def restore_from_path(self, path: str) -> None:
        raise AssertionError("a fresh run restores nothing")

    def stop(self) -> None:
        pass


class _Quiet:
    def __init__(self) -> None:
        self.logged: list[tuple[dict[str, float], int]] = []

    def log(self, row: dict[str, float], step: int) -> None:
        self.logged.append((row, step))


def _train(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wins: list[float], selection: dict[int, float],
           *overrides: str) -> tuple[dict[str, Any], _Algo, Run, list[float]]:
    """``selection``: the win rate a selection round scores with the weights of each iteration."""
    algo = _Algo(wins)

    @contextlib.contextmanager
    def no_ray(num_cpus: Any = None) -> Iterator[None]:
        yield

    def selection_round(module: _Module, *args: Any, **kwargs: Any) -> dict[str, float]:
        return {"eval/win_rate": selection[int(module.state["w"])], "eval/episode_return": 1.0}

    evaluated: list[float] = []

    def final_evaluation(module: _Module, task: Any, episodes: int, max_steps: int, seed: int) -> dict[str, float]:
        evaluated.append(float(module.state["w"]))
        return {"eval/win_rate": 0.5, "eval/episode_return": 7.0, "eval/episodes": float(episodes)}

    monkeypatch.setattr(ray_session, "ray_session", no_ray)
    config = type("Config", (), {"build_algo": lambda self: algo})()
    monkeypatch.setattr(rl, "build_algorithm_config", lambda *args: config)
    monkeypatch.setattr(rl_select, "evaluate", selection_round)
    monkeypatch.setattr(rl, "evaluate", final_evaluation)
    cfg = compose("cartpole", "mlp_agent", "smoke", ["rl.total_env_steps=1000", "rl.stop_at_win_rate=0.75",
                                                     "rl.select_every=2", "rl.checkpoint_every=3", "rl.eval_episodes=5",
                                                     *overrides]).cfg
    run = Run(tmp_path / "run")
    run.path.mkdir()
    run.write_results({})
    summary = rl.train_rl(cfg, object(), "unused", run, _Quiet(), {})
    return summary, algo, run, evaluated


def test_training_stops_once_five_iterations_average_the_target_and_the_best_round_is_evaluated(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Win rates 1, .5, .75, .75, .75: their mean is exactly 0.75 at iteration 5, the first with five values (four
    values average .75 already at iteration 4). Rounds at iterations 2, 4 and 5 (the end) score .5, .75, .25: the
    policy of iteration 4 is evaluated."""
    wins = [1.0, 0.5, 0.75, 0.75, 0.75, 0.75, 1.0, 1.0, 1.0, 1.0]
    summary, algo, run, evaluated = _train(tmp_path, monkeypatch, wins, {2: 0.5, 4: 0.75, 5: 0.25})
    assert (summary["stop_reason"], summary["iterations"], summary["env_steps"], summary["steps"]) == (
        "win rate reached", 5, 500, 500)
    assert summary["selection"] == {"iteration": 4, "env_steps": 400, "win_rate": 0.75, "episode_return": 1.0,
                                    "episodes": 2}
    assert evaluated == [4.0]
    assert summary["metrics"] == {"train/win_rate": 0.75, "train/episode_return": 50.0, "eval/win_rate": 0.5,
                                  "eval/episode_return": 7.0, "eval/episodes": 5.0}
    assert algo.saved_at == [3, 5]  # every 3 iterations, and when training stopped
    stored = json.loads(run.results_path.read_text())
    assert (stored["env_steps"], stored["iterations"], stored["selection"]["iteration"]) == (500, 5, 4)
    curve = rl.CurveWriter(run.metrics_path).rows
    assert [(r["step"], r["epoch"]) for r in curve] == [(100, 1), (200, 2), (300, 3), (400, 4), (500, 5), (500, 5)]
    assert [r.get("select/win_rate") for r in curve] == [None, 0.5, None, 0.75, None, 0.25]
    assert curve[-1]["eval/win_rate"] == 0.5 and "eval/win_rate" not in curve[-2]


def test_training_stops_at_the_env_step_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No win-rate target: 300 env steps are three iterations; the last policy (a tie with round 2) is evaluated."""
    summary, algo, _, evaluated = _train(tmp_path, monkeypatch, [0.0] * 10, {2: 0.5, 3: 0.5},
                                         "rl.total_env_steps=300", "rl.stop_at_win_rate=null")
    assert (summary["stop_reason"], summary["iterations"], summary["env_steps"]) == ("env steps", 3, 300)
    assert evaluated == [3.0] and algo.saved_at == [3]  # the checkpoint of iteration 3 is the stop's: saved once


def test_the_stop_rule_reads_the_last_five_iterations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Five lost iterations, then won ones: the mean of the last five reaches 1.0 at iteration 10."""
    summary, _, _, _ = _train(tmp_path, monkeypatch, [0.0] * 5 + [1.0] * 10, dict.fromkeys(range(1, 16), 0.0),
                              "rl.total_env_steps=1500", "rl.stop_at_win_rate=1.0")
    assert (summary["stop_reason"], summary["iterations"], summary["env_steps"]) == ("win rate reached", 10, 1000)
