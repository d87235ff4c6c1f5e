"""Which policy an RL run evaluates (harness/runners/rl_select.py): the best selection round, kept on disk
across resumes, and the waves that play a single env's copies side by side (harness/runners/rl_eval.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from omegaconf import OmegaConf

from harness.runners.rl_eval import TEST_LEVELS, evaluate, first_level
from harness.runners.rl_select import PolicySelector
from harness.runs import Run
from tasks.cartpole.task import CartPoleTask, make_cartpole


class _Pushes:
    """A policy that pushes right with probability ``p_right`` (logits [B, 2]); its weights are {"p": p}."""

    def __init__(self, p_right: float) -> None:
        self.p_right = p_right

    def eval(self) -> None:
        pass

    def agent(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        p = torch.tensor([1 - self.p_right, self.p_right]).clamp(1e-9, 1)
        return p.log().expand(obs.shape[0], 2), torch.zeros(obs.shape[0])


def _selector(tmp_path: Path, results: dict[str, Any], every: int | None = 10) -> PolicySelector:
    cfg = OmegaConf.create({"seed": 0, "rl": {"select_every": every, "select_episodes": 8, "eval_max_steps": 500}})
    return PolicySelector(cfg, CartPoleTask(None), Run(tmp_path), results)


def test_the_best_round_is_kept_and_survives_a_resume(tmp_path: Path) -> None:
    selector = _selector(tmp_path, {})
    assert selector.due(10) and not selector.due(5) and selector.best_weights() is None
    balanced = _Pushes(0.5)  # random pushes: a few dozen steps
    one_way = _Pushes(1.0)  # always right: the pole falls within about ten steps
    row = selector.play(balanced, {"p": np.array(0.5)}, iteration=10, steps=1000)
    assert set(row) == {"select/episode_return", "select/win_rate"} and row["select/win_rate"] == 0.0
    selector.play(one_way, {"p": np.array(1.0)}, iteration=20, steps=2000)  # worse: not kept
    assert selector.best["iteration"] == 10 and float(selector.best_weights()["p"]) == 0.5
    assert selector.best["episode_return"] == row["select/episode_return"]

    resumed = _selector(tmp_path, {"selection": selector.best})  # a new attempt reads results.json's record
    assert resumed.best == selector.best and float(resumed.best_weights()["p"]) == 0.5
    resumed.play(balanced, {"p": np.array(0.25)}, iteration=30, steps=3000)  # same score: the later one wins
    assert resumed.best["iteration"] == 30 and float(resumed.best_weights()["p"]) == 0.25
    resumed.forget()  # a run that trains from the start again
    assert resumed.best is None and resumed.best_weights() is None


def test_a_record_without_its_weights_file_is_not_a_best(tmp_path: Path) -> None:
    selector = _selector(tmp_path, {"selection": {"iteration": 10, "win_rate": 1.0, "episode_return": 500.0}})
    assert selector.best is None


def test_selection_off_means_no_rounds(tmp_path: Path) -> None:
    assert not _selector(tmp_path, {}, every=None).due(10)


def test_a_wave_of_separate_envs_plays_each_board_as_alone() -> None:
    """Always pushing right is deterministic: the wave's mean return is each seed's episode played by itself."""
    out = evaluate(_Pushes(1.0), CartPoleTask(None), episodes=40, max_steps=500, seed=3)  # two waves: 32 + 8
    alone = []
    for i in range(40):
        env = make_cartpole({})
        env.reset(seed=first_level(TEST_LEVELS, 3) + i)
        steps, ended = 0, False
        while not ended:
            _, _, terminated, truncated, _ = env.step(1)
            steps, ended = steps + 1, terminated or truncated
        alone.append(steps)
    assert out["eval/episode_return"] == np.mean(alone) and out["eval/episodes"] == 40
    assert out["eval/win_rate"] == 0.0

