"""What an RL run records: win rates from episode ends, and one flat row per training iteration.

Environments report ``info["win"]`` (bool) and ``info["puzzle_type"]`` (a short string such as
``"2-1-0"``) on an episode's last step. :class:`EpisodeOutcomes` turns them into the metrics ``win_rate``
and ``win_rate/<puzzle type>`` on every EnvRunner (each iteration's mean over its finished episodes: see
``WIN_WINDOW``); :func:`iteration_row` flattens RLlib's
nested result dict into the columns of ``metrics.csv`` (``train/*``, ``learner/*``, ``perf/*``).
"""

from __future__ import annotations

import math
from typing import Any

from ray.rllib.callbacks.callbacks import RLlibCallback

# The window asked of RLlib's metrics logger. With the RLlib this project pins (Ray 2.60) it does not span
# iterations: in the shipped runs the training win rate moves by as much as 1.0 from one iteration of about 18
# episodes to the next (CartPole) and 0.68 over about 8 (bridge BoxWorld), which a mean over 100 episodes cannot,
# so each iteration's value is the mean over the episodes that iteration finished (at most this many).
WIN_WINDOW = 100


class EpisodeOutcomes(RLlibCallback):
    """Logs each finished episode's win (overall and per puzzle type) as means over an iteration's episodes."""

    def on_episode_end(self, *, episode: Any, metrics_logger: Any = None, **kwargs: Any) -> None:
        if metrics_logger is None:
            return
        info = episode.get_infos(-1) or {}
        if "win" not in info:
            return
        win = float(bool(info["win"]))
        metrics_logger.log_value("win_rate", win, reduce="mean", window=WIN_WINDOW)
        puzzle = info.get("puzzle_type")
        if puzzle is not None:
            metrics_logger.log_value(f"win_rate/{puzzle}", win, reduce="mean", window=WIN_WINDOW)


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


_RUNNER_KEYS = {
    "episode_return_mean": "train/episode_return",
    "episode_len_mean": "train/episode_len",
    "num_episodes_lifetime": "train/episodes",
}
_LEARNER_KEYS = {
    "total_loss": "learner/total_loss",
    "mean_pi_loss": "learner/pi_loss",
    "mean_vf_loss": "learner/vf_loss",
    "policy_loss": "learner/pi_loss",  # PPO's names (already means)
    "vf_loss": "learner/vf_loss",
    "entropy": "learner/entropy",
    "gradients_default_optimizer_global_norm": "learner/grad_norm",
    "default_optimizer_learning_rate": "learner/lr",
}


def env_steps(result: dict[str, Any]) -> int:
    """Environment steps sampled since the run started (across resumes)."""
    value = result.get("num_env_steps_sampled_lifetime")
    if value is None:
        value = (result.get("env_runners") or {}).get("num_env_steps_sampled_lifetime", 0)
    return int(_number(value) or 0)


def iteration_row(result: dict[str, Any]) -> dict[str, float]:
    """The numbers of one ``algo.train()`` result worth keeping, under harness names."""
    row: dict[str, float] = {}
    runners = result.get("env_runners") or {}
    for key, name in _RUNNER_KEYS.items():
        if (value := _number(runners.get(key))) is not None:
            row[name] = value
    for key, value in runners.items():
        if key == "win_rate" or key.startswith("win_rate/"):
            if (number := _number(value)) is not None:
                row[f"train/{key}"] = number
    nested = runners.get("win_rate")
    if isinstance(nested, dict):  # "win_rate/2-1-0" logged as a nested key
        for puzzle, value in nested.items():
            if (number := _number(value)) is not None:
                row[f"train/win_rate/{puzzle}"] = number
    policy = (result.get("learners") or {}).get("default_policy") or {}
    for key, name in _LEARNER_KEYS.items():  # the first key present wins: IMPALA's means before its sums
        if name not in row and (value := _number(policy.get(key))) is not None:
            row[name] = value
    return row


def loss_is_finite(result: dict[str, Any]) -> bool:
    policy = (result.get("learners") or {}).get("default_policy") or {}
    value = policy.get("total_loss")
    if value is None:
        return True
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return True
