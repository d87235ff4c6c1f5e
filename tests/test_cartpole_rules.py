"""CartPole (tasks/cartpole/README.md, tasks/cartpole/win.py): rules the other tests leave open.

* A win is an episode *truncated* by the time limit *and not terminated*: a pole that falls on the very step the
  limit runs out is a loss.
* The task reports wins, so an evaluation whose episodes all run past ``max_steps`` still reports a win rate (an
  unfinished episode is lost), rather than no win rate at all.
* The data fingerprint names gymnasium's version (the env's dynamics are gymnasium's).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch

from harness.runners.rl_eval import evaluate
from tasks.cartpole.task import ENV_ID, CartPoleTask
from tasks.cartpole.win import WinAtTimeLimit


def steps_until_the_pole_falls(action: int, seed: int) -> int:
    env = gym.make(ENV_ID)
    env.reset(seed=seed)
    steps = 0
    while True:
        steps += 1
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            assert terminated and not truncated
            return steps


def test_falling_on_the_last_step_of_the_time_limit_is_a_loss() -> None:
    falls = steps_until_the_pole_falls(action=1, seed=5)
    env = WinAtTimeLimit(gym.make(ENV_ID, max_episode_steps=falls))
    env.reset(seed=5)
    for _ in range(falls - 1):
        _, _, terminated, truncated, info = env.step(1)
        assert not (terminated or truncated) and "win" not in info
    _, _, terminated, truncated, info = env.step(1)
    assert terminated and truncated  # both at once
    assert info["win"] is False


class _AlwaysLeft:
    """A module whose policy always pushes left."""

    def eval(self) -> None:
        pass

    def agent(self, obs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        logits = torch.tensor([[50.0, -50.0]]).expand(obs.shape[0], 2)
        return logits, torch.zeros(obs.shape[0])


def test_unfinished_evaluation_episodes_count_as_lost() -> None:
    out = evaluate(_AlwaysLeft(), CartPoleTask(None), episodes=2, max_steps=3, seed=0)
    assert out["eval/win_rate"] == 0.0


def test_the_fingerprint_names_the_gymnasium_version() -> None:
    data = CartPoleTask(None).describe_data()
    assert gym.__version__ in data["fingerprint"] and ENV_ID in data["fingerprint"]
