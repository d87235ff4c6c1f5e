"""The batched BoxWorld envs replay N single envs exactly (both autoreset modes) and follow the VectorEnv API.

The batched envs draw their levels with the batched generators and the single envs with the per-level ones, so
the single envs are given the levels that the batched generator draws from each board's seed."""

from __future__ import annotations

from collections import Counter

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers.vector import DictInfoToList

from tasks.boxworld import BoxWorldEnv, BridgeBoxWorldEnv
from tasks.boxworld.gen_bridge_batch import generate_bridge_batch
from tasks.boxworld.gen_classic_batch import generate_classic_batch
from tasks.boxworld.vector import BoxWorldVectorEnv, BridgeBoxWorldVectorEnv

BATCHED_GENERATORS = {BridgeBoxWorldVectorEnv: generate_bridge_batch, BoxWorldVectorEnv: generate_classic_batch}

CASES = [
    (BridgeBoxWorldEnv, BridgeBoxWorldVectorEnv, {}),
    (BridgeBoxWorldEnv, BridgeBoxWorldVectorEnv, {"horizon": 60, "max_sol_length": 2, "max_decoy_paths": 1}),
    (BoxWorldEnv, BoxWorldVectorEnv, {"n": 8, "solution_length": (1, 2), "num_distractors": (0, 1), "horizon": 60}),
    (BoxWorldEnv, BoxWorldVectorEnv, {"n": 6, "solution_length": 1, "num_distractors": 0, "horizon": 40}),
]


class BoardLevels:
    """The levels board i of a batched env plays after ``reset(seed=seed)``: the batched generator, one level at
    a time, from a Generator seeded with ``seed``."""

    def __init__(self, batched: type, config, seed: int) -> None:
        self._generate, self._config = BATCHED_GENERATORS[batched], config
        self._rng = seeding.np_random(seed)[0]

    def reset(self, env) -> tuple[np.ndarray, dict]:
        return env.reset(options={"level": self._generate([self._rng], self._config).level(0)})


def board_info(infos: dict, i: int) -> dict:
    """Board i's info from a vector info dict (gymnasium's masked layout)."""
    skip = ("final_obs", "final_info")
    return {k: v[i] for k, v in infos.items() if not k.startswith("_") and k not in skip and infos["_" + k][i]}


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
@pytest.mark.parametrize(("single", "batched", "kwargs"), CASES)
def test_batched_equals_single_envs(single, batched, kwargs, mode) -> None:
    boards, steps, seed = 6, 1500, 11
    vec = batched(boards, autoreset_mode=mode, **kwargs)
    envs = [single(**kwargs) for _ in range(boards)]
    obs, infos = vec.reset(seed=seed)
    levels = [BoardLevels(batched, vec.config, seed + i) for i in range(boards)]
    firsts = [board.reset(env) for board, env in zip(levels, envs, strict=True)]
    assert np.array_equal(obs, np.stack([o for o, _ in firsts]))
    assert infos["_solution_length"].all()
    assert list(infos["solution_length"]) == [info["solution_length"] for _, info in firsts]
    ended = [False] * boards
    rewards: Counter[float] = Counter()
    actions = np.random.default_rng(seed).integers(0, 4, (steps, boards))
    for t, row in enumerate(actions):
        obs, reward, terminated, truncated, infos = vec.step(row)
        for i, env in enumerate(envs):
            if mode == AutoresetMode.NEXT_STEP and ended[i]:
                o, info = levels[i].reset(env)
                r, term, trunc = 0.0, False, False
                assert board_info(infos, i) == info, (t, i)
            else:
                o, r, term, trunc, info = env.step(int(row[i]))
                if term or trunc:
                    if mode == AutoresetMode.SAME_STEP:
                        assert infos["_final_obs"][i] and np.array_equal(infos["final_obs"][i], o), (t, i)
                        assert board_info(infos["final_info"], i) == info, (t, i)
                        o, info = levels[i].reset(env)
                        assert board_info(infos, i) == info, (t, i)
                    else:
                        assert board_info(infos, i) == info, (t, i)
                else:
                    assert board_info(infos, i) == {}
            assert np.array_equal(obs[i], o), (t, i)
            assert (reward[i], terminated[i], truncated[i]) == (r, term, trunc), (t, i)
            ended[i] = term or trunc
            rewards[r] += 1
    assert rewards[1.0] > 0 and rewards[10.0] + rewards[-1.0] > 0


def test_vector_api() -> None:
    vec = BridgeBoxWorldVectorEnv(4)
    assert vec.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP and vec.num_envs == 4
    assert vec.single_observation_space == gym.spaces.Box(0, 255, (7, 10, 3), np.uint8)
    assert vec.observation_space.shape == (4, 7, 10, 3) and vec.single_action_space == gym.spaces.Discrete(4)
    assert vec.action_space == gym.spaces.MultiDiscrete([4, 4, 4, 4])
    obs, infos = vec.reset(seed=[5, 6, 7, 8])
    assert obs.dtype == np.uint8 and vec.observation_space.contains(obs)
    assert set(infos) >= {"solution_length", "has_bridge", "bridge_source", "bridge_target", "_solution_length"}
    obs2, rewards, terminated, truncated, infos = vec.step(vec.action_space.sample())
    assert rewards.dtype == np.float64 and terminated.dtype == truncated.dtype == np.bool_
    again = BridgeBoxWorldVectorEnv(4, autoreset_mode="SameStep", seed=5)
    assert np.array_equal(again.reset()[0], obs) and again.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    with pytest.raises(ValueError):
        BoxWorldVectorEnv(2, autoreset_mode=AutoresetMode.DISABLED)
    with pytest.raises(ValueError):
        vec.step(np.array([0, 1, 4, 0]))
    with pytest.raises(ValueError):
        vec.step(np.array([0, -1, 2, 0]))
    with pytest.raises(ValueError, match="actions must be integers 0..3, got float64"):
        vec.step(np.array([0.9, 2.7, 1.0, 0.0]))  # was played as [0, 2, 1, 0]
    with pytest.raises(gym.error.ResetNeeded):
        BoxWorldVectorEnv(2).step(np.array([0, 1]))  # boards without a level were played
    vec.step([0, 1, 2, 3])  # a list of ints, as from a user's loop


def test_episode_end_infos_through_dict_info_to_list() -> None:
    """RLlib wraps vector envs in ``DictInfoToList``; each board's last info must carry win and puzzle_type."""
    vec = DictInfoToList(BridgeBoxWorldVectorEnv(3, horizon=5))
    _, infos = vec.reset(seed=0)
    assert all("puzzle_type" in info and "win" not in info for info in infos)
    for _ in range(4):
        _, _, terminated, truncated, infos = vec.step(np.zeros(3, dtype=np.int64))
        assert infos == [{}, {}, {}]
    _, _, terminated, truncated, infos = vec.step(np.zeros(3, dtype=np.int64))
    assert truncated.all() and all(info["win"] == False and "-" in info["puzzle_type"] for info in infos)  # noqa: E712


@pytest.mark.parametrize("batched", [BridgeBoxWorldVectorEnv, BoxWorldVectorEnv])
def test_levels_do_not_depend_on_which_boards_reset_together(batched) -> None:
    """With 40 boards, next levels are generated ahead in batches of 5 or more boards; each board still plays
    its own seed's levels in order, also across a reset without a seed."""
    boards, seed = 40, 5
    kwargs = CASES[1][2] if batched is BridgeBoxWorldVectorEnv else CASES[2][2]  # horizon 60
    vec = batched(boards, **kwargs)
    single = (BridgeBoxWorldEnv if batched is BridgeBoxWorldVectorEnv else BoxWorldEnv)(**kwargs)
    levels = [BoardLevels(batched, vec.config, seed + i) for i in range(boards)]
    obs, infos = vec.reset(seed=seed)
    restarted = np.ones(boards, dtype=np.bool_)
    actions = np.random.default_rng(seed).integers(0, 4, (150, boards))
    for t, row in enumerate(actions):
        for i in np.flatnonzero(restarted):
            first, info = levels[i].reset(single)
            assert np.array_equal(obs[i], first) and info["puzzle_type"] == infos["puzzle_type"][i], (t, i)
        if t == 70:
            obs, infos = vec.reset()
            restarted = np.ones(boards, dtype=np.bool_)
        else:
            obs, _, _, _, infos = vec.step(row)
            restarted = infos.get("_puzzle_type", np.zeros(boards, dtype=np.bool_)) & ~infos.get("_win", False)
