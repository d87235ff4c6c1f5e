"""What an RL run records per iteration (harness/runners/rl_metrics.py), on dicts shaped like the results of RLlib
2.x's ``Algorithm.train()`` (ray-project/ray, ``rllib/algorithms/algorithm.py``: ``env_runners``, ``learners``,
``num_env_steps_sampled_lifetime``) and on fake episodes, without Ray running:

* an episode's win is the ``info["win"]`` of its *last* step (``episode.get_infos(-1)``), logged as a mean (the
  iteration's win rate is the fraction of its finished episodes that were won), overall and per puzzle type;
* env steps are the *lifetime* count (across resumes), read at the top level or, failing that, under ``env_runners``;
* IMPALA's per-timestep means (``mean_pi_loss``, ``mean_vf_loss``) win over PPO's names when both are present, and
  non-finite numbers are dropped;
* a missing or unreadable ``total_loss`` is not a divergence; a non-finite one is.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness.runners.rl_metrics import WIN_WINDOW, EpisodeOutcomes, env_steps, iteration_row, loss_is_finite


class _Episode:
    """An episode whose step infos are ``infos`` (first to last)."""

    def __init__(self, infos: list[dict[str, Any]]) -> None:
        self.infos = infos

    def get_infos(self, index: int) -> dict[str, Any]:
        return self.infos[index]


class _Logger:
    """RLlib's MetricsLogger reduced to what ``log_value`` was given, reduced as asked (mean or sum)."""

    def __init__(self) -> None:
        self.values: dict[str, list[float]] = {}
        self.reduce: dict[str, str] = {}
        self.window: dict[str, int] = {}

    def log_value(self, key: str, value: float, reduce: str = "mean", window: int | None = None) -> None:
        self.values.setdefault(key, []).append(value)
        self.reduce[key], self.window[key] = reduce, int(window or 0)

    def reduced(self, key: str) -> float:
        values = self.values[key]
        return sum(values) / len(values) if self.reduce[key] == "mean" else sum(values)


def test_an_episode_s_win_is_its_last_step_s_and_the_rate_is_the_fraction_won() -> None:
    """Four episodes: wins read at the last step (earlier steps say otherwise): 3 of 4 won overall, 1 of 2 of type
    "2-1-0" and 2 of 2 of type "1-0-0"; an episode without ``win`` is not counted."""
    logger = _Logger()
    callbacks = EpisodeOutcomes()
    ends = [(True, "2-1-0"), (False, "2-1-0"), (True, "1-0-0"), (True, "1-0-0")]
    for win, puzzle in ends:
        first = {"win": not win, "puzzle_type": "9-9-9"}  # what the first step said: never the outcome
        callbacks.on_episode_end(episode=_Episode([first, {}, {"win": win, "puzzle_type": puzzle}]),
                                 metrics_logger=logger)
    callbacks.on_episode_end(episode=_Episode([{"win": True}, {}]), metrics_logger=logger)  # no outcome at its end
    callbacks.on_episode_end(episode=_Episode([{"win": True}]), metrics_logger=None)  # nothing to log to
    assert logger.reduced("win_rate") == 3 / 4
    assert logger.reduced("win_rate/2-1-0") == 1 / 2 and logger.reduced("win_rate/1-0-0") == 1.0
    assert set(logger.values) == {"win_rate", "win_rate/2-1-0", "win_rate/1-0-0"}
    assert all(w == WIN_WINDOW for w in logger.window.values())


def test_env_steps_are_the_lifetime_count_at_the_top_level_else_under_the_env_runners() -> None:
    assert env_steps({"num_env_steps_sampled_lifetime": 4000, "num_env_steps_sampled": 200,
                      "env_runners": {"num_env_steps_sampled_lifetime": 3800}}) == 4000
    assert env_steps({"env_runners": {"num_env_steps_sampled_lifetime": 3800.0, "num_env_steps_sampled": 200}}) == 3800
    assert env_steps({"env_runners": {"num_env_steps_sampled": 200}}) == 0
    assert env_steps({}) == 0


def test_a_row_keeps_the_impala_means_and_names_every_column() -> None:
    """IMPALA reports both its per-timestep means and RLlib's generic names; the means are the row's values."""
    result = {
        "env_runners": {"episode_return_mean": 7.5, "episode_len_mean": 30.0, "num_episodes_lifetime": 12,
                        "win_rate": {"2-1-0": 0.25, "1-0-0": float("nan")}},
        "learners": {"default_policy": {"total_loss": 2.0, "mean_pi_loss": -0.5, "policy_loss": -40.0,
                                        "mean_vf_loss": 0.3, "vf_loss": 24.0, "entropy": 0.7,
                                        "gradients_default_optimizer_global_norm": 3.0,
                                        "default_optimizer_learning_rate": 2e-4}},
    }
    assert iteration_row(result) == {
        "train/episode_return": 7.5, "train/episode_len": 30.0, "train/episodes": 12.0,
        "train/win_rate/2-1-0": 0.25,  # the NaN puzzle type is dropped
        "learner/total_loss": 2.0, "learner/pi_loss": -0.5, "learner/vf_loss": 0.3, "learner/entropy": 0.7,
        "learner/grad_norm": 3.0, "learner/lr": 2e-4,
    }


def test_ppo_s_loss_names_fill_the_same_columns() -> None:
    result = {"learners": {"default_policy": {"policy_loss": -0.1, "vf_loss": 0.9, "total_loss": float("inf")}}}
    assert iteration_row(result) == {"learner/pi_loss": -0.1, "learner/vf_loss": 0.9}


@pytest.mark.parametrize(("policy", "finite"), [
    ({}, True),  # no loss reported this iteration (e.g. no update yet)
    ({"total_loss": 1.5}, True),
    ({"total_loss": "n/a"}, True),  # unreadable: not a divergence
    ({"total_loss": float("nan")}, False),
    ({"total_loss": float("-inf")}, False),
])
def test_only_a_non_finite_total_loss_is_a_divergence(policy: dict[str, Any], finite: bool) -> None:
    assert loss_is_finite({"learners": {"default_policy": policy}}) is finite
