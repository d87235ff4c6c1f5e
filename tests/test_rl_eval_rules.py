"""The evaluation episodes of an RL run (harness/runners/rl_eval.py) against a loop-by-loop transcription of the
documented rule, on scripted boards whose outcome is a function of their seed:

* board i of a run with seed s is the env seeded ``levels + s * 10**4 + i`` (``TEST_LEVELS`` = 10**6 for the final
  evaluation, ``SELECT_LEVELS`` = 2 * 10**6 for the selection rounds), played in waves of up to ``EVAL_BOARDS``;
* an episode's return is the sum of its rewards up to its end (terminated or truncated) or ``max_steps`` steps,
  whichever comes first, and its length the steps it played up to then; nothing a vector env's board yields after
  its episode ended (gymnasium's autoreset, Towers et al. 2024, "Gymnasium", ``gymnasium.vector.VectorEnv``) counts;
* an episode's win is ``info["win"]`` at its end; one still running after ``max_steps`` steps is lost, and the win
  rate is over all episodes (overall and per puzzle type, the type read at reset);
* actions are sampled from the softmax of the policy's logits over the actions, with the module in eval mode.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from harness.runners.rl_eval import EVAL_BOARDS, SELECT_LEVELS, TEST_LEVELS, SeparateEnvs, evaluate, first_level


def _length(seed: int) -> int:
    return 1 + seed % 7  # steps to the episode's end


def _win(seed: int) -> bool:
    return seed % 3 != 0


def _truncates(seed: int) -> bool:
    return seed % 5 == 0  # the episode is cut (truncated) at its end instead of terminating: lost


def _puzzle(seed: int) -> str:
    return f"p{seed % 2}"


class _Boards:
    """A numpy vector env of ``num_envs`` scripted boards (board i: seed ``seed + i``). Each step pays the action
    taken plus 1; a board's episode ends after ``_length(seed)`` steps, then the board starts over at once (its next
    episode pays 100 a step and reports the opposite win): what autoreset vector envs do."""

    resets: list[tuple[int, int]] = []  # (first seed, boards) of each wave

    def __init__(self, config: dict[str, Any]) -> None:
        self.n = int(config["num_envs"])
        self.seeds = np.zeros(self.n, dtype=int)
        self.t = np.zeros(self.n, dtype=int)
        self.episode = np.zeros(self.n, dtype=int)

    def reset(self, seed: int) -> tuple[np.ndarray, dict[str, Any]]:
        _Boards.resets.append((seed, self.n))
        self.seeds = seed + np.arange(self.n)
        self.t[:], self.episode[:] = 0, 0
        return np.zeros((self.n, 2), np.float32), {"puzzle_type": np.array([_puzzle(s) for s in self.seeds])}

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        self.t += 1
        rewards = np.where(self.episode == 0, 1.0 + actions, 100.0)
        ends = self.t == np.array([_length(s) for s in self.seeds])
        cut = np.array([_truncates(s) for s in self.seeds])
        wins = np.array([_win(s) != bool(e) and not c for s, e, c in zip(self.seeds, self.episode, cut, strict=True)])
        terminated, truncated = ends & ~cut, ends & cut
        self.t[ends], self.episode[ends] = 0, self.episode[ends] + 1
        return np.zeros((self.n, 2), np.float32), rewards, terminated, truncated, {"win": wins.astype(object)}

    def close(self) -> None:
        pass


class _BoardsTask:
    """A task of the evaluator's interface whose env is :data:`env_creator`, batched (``has_vector_env``) or not."""

    has_vector_env = True
    reports_wins = True
    env_creator = _Boards

    def env_config(self) -> dict[str, Any]:
        return {}


class _Policy:
    """Logits [B, 2] favouring action 1 by ``margin`` in eval mode and action 0 in training mode."""

    def __init__(self, margin: float) -> None:
        self.margin, self.training = margin, True

    def eval(self) -> None:
        self.training = False

    def agent(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        sign = -1.0 if self.training else 1.0
        logits = torch.tensor([0.0, sign * self.margin]).expand(obs.shape[0], 2)
        return logits, torch.zeros(obs.shape[0])


def _by_hand(episodes: int, max_steps: int, seed: int, levels: int) -> dict[str, float]:
    """The documented rule, one board at a time, for a policy that always takes action 1 (pays 2 a step)."""
    returns, lengths, wins, puzzles = [], [], [], []
    for i in range(episodes):
        board = levels + seed * 10**4 + i
        steps = min(_length(board), max_steps)
        returns.append(2.0 * steps)
        lengths.append(steps)  # an episode cut by max_steps counts the steps it played
        wins.append(_length(board) <= max_steps and _win(board) and not _truncates(board))
        puzzles.append(_puzzle(board))
    out = {"eval/episode_return": sum(returns) / episodes, "eval/episode_len": sum(lengths) / episodes,
           "eval/episodes": float(episodes), "eval/win_rate": sum(wins) / episodes}
    for puzzle in sorted(set(puzzles)):
        mine = [w for w, p in zip(wins, puzzles, strict=True) if p == puzzle]
        out[f"eval/win_rate/{puzzle}"] = sum(mine) / len(mine)
    return out


def test_board_numbers_are_the_documented_ranges() -> None:
    assert (TEST_LEVELS, SELECT_LEVELS, EVAL_BOARDS) == (10**6, 2 * 10**6, 32)
    assert first_level(TEST_LEVELS, 3) == 1_030_000 and first_level(SELECT_LEVELS, 0) == 2_000_000
    assert first_level(TEST_LEVELS, 99) + 10**4 <= first_level(SELECT_LEVELS, 0)  # the ranges never meet


@pytest.mark.parametrize(("episodes", "max_steps", "seed", "levels"), [
    (40, 5, 3, TEST_LEVELS),  # two waves (32 + 8); boards of 6 and 7 steps run out of steps: lost
    (9, 7, 1, SELECT_LEVELS),  # every episode ends within the limit, some exactly at it
    (9, 6, 1, SELECT_LEVELS),  # the 7-step boards are one step short of their end
])
def test_an_evaluation_is_the_per_board_rule(episodes: int, max_steps: int, seed: int, levels: int) -> None:
    _Boards.resets.clear()
    out = evaluate(_Policy(margin=50.0), _BoardsTask(), episodes, max_steps, seed, levels=levels)
    assert out == pytest.approx(_by_hand(episodes, max_steps, seed, levels), abs=1e-12)
    first = levels + seed * 10**4
    assert _Boards.resets == [(first + start, min(EVAL_BOARDS, episodes - start))
                              for start in range(0, episodes, EVAL_BOARDS)]


def test_actions_are_sampled_from_the_softmax_over_actions_in_eval_mode() -> None:
    """Logits (0, log 3) in eval mode: action 1 with probability 3/4 (each step pays 1 + action), not the
    training-mode policy's 1/4 nor a softmax over the batch's boards (1/2)."""
    max_steps = 4
    out = evaluate(_Policy(margin=float(np.log(3.0))), _BoardsTask(), 800, max_steps, 5)
    steps = np.mean([min(_length(first_level(TEST_LEVELS, 5) + i), max_steps) for i in range(800)])
    assert out["eval/episode_return"] / steps == pytest.approx(1.75, abs=0.04)  # 1 + P(action 1)
    again = evaluate(_Policy(margin=float(np.log(3.0))), _BoardsTask(), 800, max_steps, 5)
    assert again == out  # the sampler is seeded with the run's seed


def test_no_episodes_give_no_figures() -> None:
    assert evaluate(_Policy(1.0), _BoardsTask(), 0, 10, 0) == {}


class _Single:
    """One scripted env as a task's ``env_creator`` makes it: ends after ``_length(seed)`` steps and refuses to be
    stepped after that."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.seed, self.t, self.over = 0, 0, False

    def reset(self, seed: int) -> tuple[np.ndarray, dict[str, Any]]:
        self.seed, self.t, self.over = seed, 0, False
        return np.array([seed, 0.0]), {"puzzle_type": _puzzle(seed)}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        assert not self.over, "stepped after its episode ended"
        self.t += 1
        self.over = self.t == _length(self.seed)
        info = {"win": _win(self.seed)} if self.over else {}
        return np.array([self.seed, self.t]), 1.0 + action, self.over, False, info


class _SingleTask(_BoardsTask):
    has_vector_env = False
    env_creator = _Single


def test_separate_envs_stop_stepping_a_copy_whose_episode_ended() -> None:
    envs = SeparateEnvs(_SingleTask(), 3)  # seeds 7, 8, 9: 1, 2 and 3 steps
    obs, infos = envs.reset(seed=7)
    assert obs[:, 0].tolist() == [7, 8, 9] and infos["puzzle_type"].tolist() == ["p1", "p0", "p1"]
    ends = []
    for _ in range(3):
        obs, rewards, terminated, truncated, infos = envs.step(np.array([1, 0, 1]))
        ends.append((rewards.tolist(), terminated.tolist(), truncated.tolist(), obs[:, 1].tolist()))
    assert ends == [([2.0, 1.0, 2.0], [True, False, False], [False] * 3, [1, 1, 1]),
                    ([0.0, 1.0, 2.0], [False, True, False], [False] * 3, [1, 2, 2]),  # copy 0 repeats its last obs
                    ([0.0, 0.0, 2.0], [False, False, True], [False] * 3, [1, 2, 3])]
    assert infos["win"].tolist() == [None, None, False]  # only the copy that ended this step reports (_win(9))
