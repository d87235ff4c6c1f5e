"""Playing fresh episodes with an RL run's policy: the final evaluation, and the selection rounds that pick
which policy of the run is evaluated (:mod:`harness.runners.rl_select`).

Episodes are played in waves of up to ``EVAL_BOARDS`` boards with one forward pass of the agent per step for
the whole wave: through the task's numpy vector env when it has one (BoxWorld), otherwise through separate
copies of its env stepped side by side (:class:`SeparateEnvs`, e.g. CartPole). Actions are sampled from the
policy's softmax, as in training; an episode still running after ``max_steps`` steps counts as lost.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

Outcome = tuple[float, bool | None, str | None, int]  # (return, win or None, puzzle type, steps played)
EVAL_BOARDS = 32  # boards played at once
TEST_LEVELS = 10**6  # the final evaluation's boards: seeds TEST_LEVELS + seed * 10**4 + i
SELECT_LEVELS = 2 * 10**6  # the selection rounds' boards: seeds SELECT_LEVELS + seed * 10**4 + i


def first_level(levels: int, seed: int) -> int:
    """The env seed of a run's first board in a range of levels (TEST_LEVELS or SELECT_LEVELS), apart from the
    training stream and from the other range."""
    return levels + seed * 10**4


def evaluate(module: Any, task: Any, episodes: int, max_steps: int, seed: int,
             levels: int = TEST_LEVELS) -> dict[str, float]:
    """Play ``episodes`` episodes with ``module``'s policy on boards ``first_level(levels, seed) + i``:
    ``eval/episode_return``, ``eval/episode_len`` (steps an episode lasted, up to ``max_steps``), ``eval/episodes``
    and, for envs that report wins, ``eval/win_rate`` (overall and ``eval/win_rate/<puzzle type>``). The action
    sampler is seeded with ``seed``, so two policies played with the same arguments meet the same boards and the
    same random numbers."""
    import torch

    if episodes <= 0:
        return {}
    generator = torch.Generator().manual_seed(seed)
    first = first_level(levels, seed)
    module.eval()

    def act(obs: Any) -> np.ndarray:
        with torch.no_grad():
            logits = module.agent(torch.as_tensor(np.asarray(obs)))[0]  # [B, A]
        return torch.multinomial(torch.softmax(logits, -1), 1, generator=generator)[:, 0].numpy()

    outcomes: list[Outcome] = []
    while len(outcomes) < episodes:
        boards = min(EVAL_BOARDS, episodes - len(outcomes))
        outcomes += _play_wave(task, act, boards, first + len(outcomes), max_steps)
    return _summarise(outcomes, episodes, getattr(task, "reports_wins", False))


class SeparateEnvs:
    """``n`` copies of a task's single env behind the two calls of a vector env that a wave uses: ``reset``
    (copy i from seed ``seed + i``) and ``step`` (stacked observations, rewards and end flags; ``infos["win"]``
    and ``infos["puzzle_type"]`` per copy where the copies report them). A copy whose episode has ended is not
    stepped again: it repeats its last observation with reward 0 and both end flags False."""

    def __init__(self, task: Any, n: int) -> None:
        self.envs = [task.env_creator(task.env_config()) for _ in range(n)]
        self.last_obs: list[Any] = []
        self.ended = np.zeros(n, dtype=bool)

    def reset(self, seed: int) -> tuple[np.ndarray, dict[str, Any]]:
        started = [env.reset(seed=seed + i) for i, env in enumerate(self.envs)]
        self.last_obs = [obs for obs, _ in started]
        self.ended[:] = False
        return np.stack(self.last_obs), _stack_infos([info for _, info in started])

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        n = len(self.envs)
        rewards, terminated, truncated = np.zeros(n), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        infos: list[dict[str, Any]] = [{} for _ in range(n)]
        for i, env in enumerate(self.envs):
            if self.ended[i]:
                continue
            self.last_obs[i], rewards[i], terminated[i], truncated[i], infos[i] = env.step(int(actions[i]))
            self.ended[i] = terminated[i] or truncated[i]
        return np.stack(self.last_obs), rewards, terminated, truncated, _stack_infos(infos)

    def close(self) -> None:
        for env in self.envs:
            env.close()


def _stack_infos(infos: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-copy info dicts as the vector env's dict of arrays, for the keys a wave reads (None where absent)."""
    stacked: dict[str, Any] = {}
    for key in ("win", "puzzle_type"):
        if any(key in info for info in infos):
            stacked[key] = np.array([info.get(key) for info in infos], dtype=object)
    return stacked


def _play_wave(task: Any, act: Any, boards: int, first_seed: int, max_steps: int) -> list[Outcome]:
    """One episode on each of ``boards`` boards (board i: seed first_seed + i), all stepped together."""
    if getattr(task, "has_vector_env", False):
        env = task.env_creator({**task.env_config(), "num_envs": boards})
    else:
        env = SeparateEnvs(task, boards)
    obs, infos = env.reset(seed=first_seed)
    puzzles: list[str | None] = [None] * boards
    if "puzzle_type" in infos:
        puzzles = [None if p is None else str(p) for p in infos["puzzle_type"]]
    totals, wins = np.zeros(boards), [None] * boards
    running = np.ones(boards, dtype=bool)
    lengths = np.zeros(boards, dtype=np.int64)  # steps each board's episode has played
    for _ in range(max_steps):
        obs, rewards, terminated, truncated, infos = env.step(act(obs))
        totals += np.where(running, rewards, 0.0)
        lengths += running
        ended = running & (terminated | truncated)
        for board in np.flatnonzero(ended):
            win = infos["win"][board] if "win" in infos else None
            wins[board] = None if win is None else bool(win)
        running &= ~ended
        if not running.any():
            break
    env.close()
    return [(float(totals[i]), wins[i], puzzles[i], int(lengths[i])) for i in range(boards)]


def _summarise(outcomes: list[Outcome], episodes: int, reports_wins: bool) -> dict[str, float]:
    out = {"eval/episode_return": float(np.mean([o[0] for o in outcomes])),
           "eval/episode_len": float(np.mean([o[3] for o in outcomes])), "eval/episodes": float(episodes)}
    if reports_wins or any(o[1] is not None for o in outcomes):
        # an env with wins: an episode unfinished after max_steps is lost
        out["eval/win_rate"] = float(np.mean([bool(o[1]) for o in outcomes]))
        for puzzle in sorted({o[2] for o in outcomes if o[2] is not None}):
            out[f"eval/win_rate/{puzzle}"] = float(np.mean([bool(o[1]) for o in outcomes if o[2] == puzzle]))
    return {k: v for k, v in out.items() if math.isfinite(v)}
