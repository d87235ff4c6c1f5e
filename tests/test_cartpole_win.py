"""CartPole's wins (tasks/cartpole/win.py): an episode that lasts to the time limit is a win, one that ends with
the pole down is not, and the step's other outputs are the wrapped env's own."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch

from harness.runners.rl_eval import evaluate
from tasks.cartpole.task import ENV_ID, CartPoleTask, make_cartpole
from tasks.cartpole.win import WinAtTimeLimit


def play(env: gym.Env, action: int, seed: int = 0) -> tuple[int, dict]:
    """Steps until the episode ends, always pushing the same way: (steps, last info)."""
    env.reset(seed=seed)
    steps = 0
    while True:
        _, _, terminated, truncated, info = env.step(action)
        steps += 1
        if terminated or truncated:
            return steps, info


def test_the_pole_falling_is_a_loss() -> None:
    steps, info = play(make_cartpole({}), action=1)
    assert steps < 50 and info["win"] is False


def test_lasting_to_the_time_limit_is_a_win() -> None:
    steps, info = play(WinAtTimeLimit(gym.make(ENV_ID, max_episode_steps=3)), action=1)
    assert steps == 3 and info["win"] is True


def test_no_win_key_before_the_end_and_the_same_outputs_as_the_bare_env() -> None:
    wrapped, bare = make_cartpole({}), gym.make(ENV_ID)
    first, _ = wrapped.reset(seed=3)
    assert np.array_equal(first, bare.reset(seed=3)[0])
    obs, reward, terminated, truncated, info = wrapped.step(0)
    expected = bare.step(0)
    assert np.array_equal(obs, expected[0]) and reward == expected[1]
    assert (terminated, truncated) == expected[2:4] and "win" not in info


class _AlwaysRight:
    """A module whose policy always pushes right (the evaluation samples from its softmax)."""

    def eval(self) -> None:
        pass

    def agent(self, obs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """As the RLModule's agent: (logits [B, 2], value [B])."""
        logits = torch.tensor([[-50.0, 50.0]]).expand(obs.shape[0], 2)
        return logits, torch.zeros(obs.shape[0])


def test_the_evaluation_reports_a_win_rate() -> None:
    task = CartPoleTask(None)
    out = evaluate(_AlwaysRight(), task, episodes=3, max_steps=500, seed=0)
    assert out["eval/win_rate"] == 0.0 and out["eval/episode_return"] < 50
