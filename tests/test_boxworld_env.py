"""BoxWorld envs: spaces, seeding, the reward rules on hand-built scenes, puzzle types, registration."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import ResetNeeded
from gymnasium.utils.env_checker import check_env

from tasks.boxworld import BOXWORLD_ID, BRIDGE_BOXWORLD_ID, BoxWorldEnv, BridgeBoxWorldEnv
from tasks.boxworld.gen_bridge import bridge_level
from tasks.boxworld.gen_classic import classic_level
from tasks.boxworld.level import Box
from tasks.boxworld.palette import (
    BRIDGE_EMPTY,
    BRIDGE_HUES,
    BRIDGE_INVENTORY_EMPTY,
    BRIDGE_PLAYER,
    CLASSIC_BORDER,
    CLASSIC_PLAYER,
    GEM_RGB,
)

WHITE = tuple(GEM_RGB)

# Original BoxWorld actions (pycolab): 0 up, 1 down, 2 left, 3 right.
UP, DOWN, LEFT, RIGHT = 0, 1, 2, 3
# Bridge BoxWorld actions (reference): 0 left, 1 up, 2 right, 3 down.
B_LEFT, B_UP, B_RIGHT, B_DOWN = 0, 1, 2, 3


def rgb(obs: np.ndarray, x: int, y: int) -> tuple[int, ...]:
    return tuple(int(v) for v in obs[y, x])


def walk(env: gym.Env, actions: list[int]) -> list[tuple]:
    return [env.step(a) for a in actions]


# ---------------------------------------------------------------------------------------------------- spaces


@pytest.mark.parametrize(
    ("make", "shape"),
    [
        (lambda: BridgeBoxWorldEnv(), (7, 10, 3)),
        (lambda: BoxWorldEnv(), (14, 14, 3)),
        (lambda: BoxWorldEnv(n=6, solution_length=1, num_distractors=0), (8, 8, 3)),
    ],
)
def test_spaces_and_dtypes(make, shape) -> None:
    env = make()
    assert env.observation_space == gym.spaces.Box(0, 255, shape, np.uint8)
    assert env.action_space == gym.spaces.Discrete(4)
    obs, info = env.reset(seed=0)
    assert obs.dtype == np.uint8 and obs.shape == shape and env.observation_space.contains(obs)
    assert isinstance(info, dict) and info["solution_length"] >= 1 and "puzzle_type" in info
    obs2, reward, terminated, truncated, info = env.step(env.action_space.sample())
    assert obs2.dtype == np.uint8 and obs2.shape == shape
    assert isinstance(reward, float) and isinstance(terminated, bool) and isinstance(truncated, bool)
    obs2[:] = 0  # the returned observation is a copy
    assert env.step(0)[0].any()
    with pytest.raises(ValueError):
        env.step(4)
    with pytest.raises(ValueError):
        env.step(-1)


def test_config_forms_and_errors() -> None:
    cfg = {"n": 8, "solution_length": [1, 2], "num_distractors": 1, "horizon": -1}
    assert BoxWorldEnv(cfg).config == BoxWorldEnv(**cfg).config
    assert BoxWorldEnv(cfg).config.solution_length == (1, 2) and BoxWorldEnv(cfg).config.horizon is None
    assert BridgeBoxWorldEnv(episode_horizon=30).config.horizon == 30
    with pytest.raises(TypeError, match="unknown keys"):
        BoxWorldEnv(solution_lenght=2)
    with pytest.raises(ValueError):
        BridgeBoxWorldEnv(max_sol_length=4)  # 2L + 2 boxes do not fit the 8 free slots
    with pytest.raises(ValueError):
        BoxWorldEnv(n=5)
    with pytest.raises(ValueError, match="do not fit"):
        BoxWorldEnv(n=6)  # the default 4-box path and 4 distractors need a larger room


@pytest.mark.parametrize(("env", "settings", "error", "words"), [
    (BoxWorldEnv, {"n": 30, "solution_length": 20, "num_distractors": 0}, ValueError, "solution_length must be <= 19"),
    (BoxWorldEnv, {"num_distractors": -2}, ValueError, "num_distractors must be >= 0"),
    (BoxWorldEnv, {"num_backward": [-1, 1]}, ValueError, "num_backward must be >= 0"),
    (BoxWorldEnv, {"n": 6.5}, TypeError, "n must be an int, got 6.5"),
    (BoxWorldEnv, {"distractor_length": 1.5}, TypeError, "distractor_length must be an int"),
    (BridgeBoxWorldEnv, {"multi_lock": "no"}, TypeError, "multi_lock must be true or false, got 'no'"),
    (BridgeBoxWorldEnv, {"max_sol_length": (1, 3)}, TypeError, "max_sol_length must be an int"),
    (BridgeBoxWorldEnv, {"bridge_prob": "x"}, TypeError, "bridge_prob must be a number"),
    (BridgeBoxWorldEnv, {"horizon": 50, "episode_horizon": 60}, ValueError, "name one setting"),
])
def test_settings_that_cannot_work_are_refused_at_construction(env: type, settings: dict, error: type,
                                                               words: str) -> None:
    """Each of these drew a wrong level (a black key at solution length 20), failed later with an unrelated
    TypeError or IndexError, or was silently read otherwise (multi_lock 'no' as true, the second horizon ignored)."""
    with pytest.raises(error, match=words):
        env(settings)
    assert BoxWorldEnv(n=30, solution_length=19, num_distractors=0).reset(seed=0)  # the longest path that fits


@pytest.mark.parametrize("action", [1.5, True, "1"])
def test_an_action_that_is_not_an_int_is_refused(action: object) -> None:
    for env in (BoxWorldEnv(), BridgeBoxWorldEnv()):
        env.reset(seed=0)
        with pytest.raises((ValueError, TypeError), match="action must be an int 0..3"):
            env.step(action)
        assert env.step(np.int64(2))[0].shape == env.observation_space.shape  # numpy ints, as RLlib passes


def test_a_step_without_an_episode_under_way_is_refused() -> None:
    """Before the first reset the env held no level (an IndexError from its move table); after the episode ended the
    rules went on, BoxWorld paying +10 for a gem taken after the truncation. gymnasium leaves such a step undefined:
    it is gymnasium's ResetNeeded, as in the batched envs."""
    env = classic_scene(horizon=1)
    assert walk(env, [LEFT])[-1][3]  # truncated after one step
    with pytest.raises(ResetNeeded, match="the episode has ended"):
        env.step(LEFT)
    for fresh in (BoxWorldEnv(), BridgeBoxWorldEnv()):
        with pytest.raises(ResetNeeded, match="the env holds no level yet"):
            fresh.step(0)
        fresh.reset(seed=0)
        assert fresh.step(0)[0].shape == fresh.observation_space.shape  # a reset starts an episode


# ---------------------------------------------------------------------------------------------------- seeding


def rollout(env: gym.Env, seed: int, steps: int) -> tuple[list[np.ndarray], list[float], list[str]]:
    obs, info = env.reset(seed=seed)
    frames, rewards, events = [obs], [], []
    actions = np.random.default_rng(seed).integers(0, 4, steps).tolist()
    for a in actions:
        obs, r, term, trunc, info = env.step(a)
        frames.append(obs)
        rewards.append(r)
        if term or trunc:
            events.append(f"{term}-{trunc}-{info['win']}")
            frames.append(env.reset()[0])
    return frames, rewards, events


@pytest.mark.parametrize("cls", [BridgeBoxWorldEnv, BoxWorldEnv])
def test_same_seed_same_levels_and_trajectories(cls) -> None:
    kwargs = {"horizon": 40} if cls is BridgeBoxWorldEnv else {"n": 8, "num_distractors": (0, 1), "horizon": 30}
    a, b = rollout(cls(**kwargs), 3, 600), rollout(cls(**kwargs), 3, 600)
    assert len(a[0]) == len(b[0]) and all(np.array_equal(x, y) for x, y in zip(a[0], b[0], strict=True))
    assert a[1] == b[1] and a[2] == b[2] and len(a[2]) >= 10
    c = rollout(cls(**kwargs), 4, 600)
    assert not all(np.array_equal(x, y) for x, y in zip(a[0][:50], c[0][:50], strict=True))
    # the constructor seed seeds the first unseeded reset; later resets continue the stream
    env = cls(seed=3, **kwargs)
    first, second = env.reset()[0], env.reset()[0]
    assert np.array_equal(first, a[0][0]) and not np.array_equal(first, second)


# ---------------------------------------------------------------------------------------------------- bridge rules


def bridge_scene() -> BridgeBoxWorldEnv:
    """Gem box at (4,1)-(5,2) with locks 1 (top) and 3 (bottom); loose keys 1 at (1,1) and 3 at (1,3);
    a bridge holding 4 behind lock 1 at (7,1)-(8,1)."""
    boxes = [
        Box((0, 0), ((4, 1), (4, 2)), (1, 3), ((5, 1), (5, 2))),
        Box((1,), ((1, 1),)),
        Box((3,), ((1, 3),)),
        Box((4,), ((7, 1),), (1,), ((8, 1),), distractor=True),
    ]
    info = {"solution_length": 1, "has_bridge": True, "bridge_source": 1, "bridge_target": 4,
            "puzzle_type": "1-1-4", "num_decoy_paths": 0}
    env = BridgeBoxWorldEnv()
    obs, got = env.reset(options={"level": bridge_level(7, 9, boxes, 1, info=info)})
    assert got["puzzle_type"] == "1-1-4" and rgb(obs, 0, 0) == tuple(BRIDGE_PLAYER)
    assert rgb(obs, 9, 0) == tuple(BRIDGE_INVENTORY_EMPTY) and rgb(obs, 4, 1) == WHITE == rgb(obs, 4, 2)
    assert rgb(obs, 1, 1) == tuple(BRIDGE_HUES[0]) == rgb(obs, 5, 1)  # colour 1 = first hue (unshuffled)
    return env


def test_bridge_loose_key_locked_content_and_gem() -> None:
    env = bridge_scene()
    (_, r0, *_), (obs, r1, term, trunc, _) = walk(env, [B_DOWN, B_RIGHT])
    assert (r0, r1, term, trunc) == (0.0, 1.0, False, False)  # loose key: +1
    assert env.inventory == [1] and rgb(obs, 9, 0) == rgb(obs, 5, 1) and rgb(obs, 1, 1) == tuple(BRIDGE_PLAYER)
    *_, (obs, reward, *_), = walk(env, [B_RIGHT, B_RIGHT, B_RIGHT])  # (4,1) is the gem inside its box: blocked
    assert reward == 0.0 and rgb(obs, 3, 1) == tuple(BRIDGE_PLAYER)
    *_, (obs, reward, *_), = walk(env, [B_UP, B_RIGHT, B_RIGHT, B_DOWN])  # lock (5,1) needs colours 1 and 3
    assert reward == 0.0 and rgb(obs, 5, 0) == tuple(BRIDGE_PLAYER) and env.inventory == [1]
    steps = walk(env, [B_LEFT] * 5 + [B_DOWN] * 3 + [B_RIGHT])  # loose key 3 at (1,3)
    assert [s[1] for s in steps] == [0.0] * 8 + [1.0] and env.inventory == [1, 3]
    steps = walk(env, [B_RIGHT] * 4 + [B_UP])  # bottom gem lock (5,2)
    obs, reward, term, trunc, info = steps[-1]
    assert [s[1] for s in steps[:-1]] == [0.0] * 4
    assert (reward, term, trunc, info["win"]) == (10.0, True, False, True)
    assert env.inventory == [0, 0] and rgb(obs, 9, 0) == WHITE == rgb(obs, 9, 1)
    assert rgb(obs, 9, 2) == tuple(BRIDGE_INVENTORY_EMPTY)
    assert rgb(obs, 5, 2) == tuple(BRIDGE_PLAYER)
    assert rgb(obs, 4, 1) == rgb(obs, 4, 2) == rgb(obs, 5, 1) == tuple(BRIDGE_EMPTY)


def test_bridge_opening_the_bridge_terminates() -> None:
    env = bridge_scene()
    walk(env, [B_DOWN, B_RIGHT])  # key 1
    steps = walk(env, [B_UP] + [B_RIGHT] * 7 + [B_DOWN])  # bridge lock (8,1) of colour 1
    obs, reward, term, trunc, info = steps[-1]
    assert (reward, term, trunc, info["win"]) == (-1.0, True, False, False)
    assert env.inventory == [4] and rgb(obs, 7, 1) == tuple(BRIDGE_EMPTY) and rgb(obs, 8, 1) == tuple(BRIDGE_PLAYER)
    assert rgb(obs, 9, 0) == tuple(BRIDGE_HUES[3])


def test_bridge_moves_off_board_stay_and_no_default_horizon() -> None:
    env = bridge_scene()
    first = env.step(B_LEFT)[0]
    for _ in range(1000):
        obs, reward, term, trunc, _ = env.step(B_UP if _ % 2 else B_LEFT)
        assert (reward, term, trunc) == (0.0, False, False)
    assert np.array_equal(obs, first) and rgb(obs, 0, 0) == tuple(BRIDGE_PLAYER)
    env = BridgeBoxWorldEnv(horizon=3)
    env.reset(seed=0)
    results = walk(env, [B_LEFT, B_UP, B_LEFT])
    assert [r[3] for r in results] == [False, False, True] and results[-1][4]["win"] is False


# ---------------------------------------------------------------------------------------------------- classic rules


def classic_scene(horizon: int | None = 120) -> BoxWorldEnv:
    """n = 6 room: loose keys 1 at (2,2) and 3 at (2,5); gem at (4,4) behind lock 1 at (5,4); a distractor
    holding 2 behind lock 1 at (4,2)-(5,2); player at (1,2)."""
    boxes = [
        Box((1,), ((2, 2),)),
        Box((0,), ((4, 4),), (1,), ((5, 4),)),
        Box((2,), ((4, 2),), (1,), ((5, 2),), distractor=True),
        Box((3,), ((2, 5),)),
    ]
    env = BoxWorldEnv(n=6, solution_length=1, num_distractors=0, horizon=horizon)
    obs, _ = env.reset(options={"level": classic_level(6, boxes, (1, 2), 1)})
    assert rgb(obs, 1, 2) == tuple(CLASSIC_PLAYER) and rgb(obs, 0, 0) == tuple(CLASSIC_BORDER)
    assert rgb(obs, 4, 4) == WHITE
    return env


def test_classic_key_lock_gem() -> None:
    env = classic_scene()
    obs, reward, *_ = env.step(RIGHT)  # pick up key 1: no reward, shown top-left
    assert reward == 0.0 and rgb(obs, 0, 0) == rgb(obs, 5, 4) and rgb(obs, 2, 2) == tuple(CLASSIC_PLAYER)
    *_, (obs, reward, *_), = walk(env, [DOWN, RIGHT, RIGHT, DOWN])  # (4,4): the gem is still locked
    assert reward == 0.0 and rgb(obs, 4, 3) == tuple(CLASSIC_PLAYER)
    obs, reward, term, _, _ = walk(env, [RIGHT, DOWN])[-1]  # open lock (5,4): +1, key consumed
    assert (reward, term) == (1.0, False) and rgb(obs, 0, 0) == tuple(CLASSIC_BORDER)
    assert rgb(obs, 5, 4) == tuple(CLASSIC_PLAYER)
    obs, reward, term, trunc, info = env.step(LEFT)  # the gem
    assert (reward, term, trunc, info["win"]) == (10.0, True, False, True)


def test_classic_distractor_and_key_swap() -> None:
    env = classic_scene()
    steps = walk(env, [RIGHT, UP, RIGHT, RIGHT, RIGHT, DOWN])  # key 1, then the distractor lock (5,2)
    obs, reward, term, trunc, info = steps[-1]
    assert [s[1] for s in steps[:-1]] == [0.0] * 5
    assert (reward, term, trunc, info["win"]) == (-1.0, True, False, False)
    env = classic_scene()
    walk(env, [RIGHT, DOWN, DOWN])  # key 1, then key 3 replaces it
    obs, reward, *_ = env.step(DOWN)
    assert reward == 0.0 and rgb(obs, 0, 0) == tuple(env.level.colours[3]) != tuple(env.level.colours[1])
    obs, reward, *_ = walk(env, [RIGHT, RIGHT, RIGHT, UP])[-1]  # lock 1 at (5,4) now stays shut
    assert reward == 0.0 and rgb(obs, 5, 5) == tuple(CLASSIC_PLAYER)


def test_classic_horizon_truncates() -> None:
    env = classic_scene(horizon=5)
    results = walk(env, [LEFT] * 5)  # bumping into the border
    assert [r[3] for r in results] == [False] * 4 + [True] and not any(r[2] for r in results)
    assert results[-1][4]["win"] is False and "win" not in results[0][4]


# ---------------------------------------------------------------------------------------------------- puzzle types


def test_bridge_puzzle_types_match_the_paper() -> None:
    env = BridgeBoxWorldEnv()
    seen, bridges = set(), 0
    for seed in range(300):
        env.reset(seed=seed)
        info, level = env._info, env.level
        length, b, c = info["solution_length"], info["bridge_source"], info["bridge_target"]
        assert info["puzzle_type"] == f"{length}-{b}-{c}" and info["has_bridge"] == (b > 0)
        assert 1 <= length <= 3 and level.player == (0, 0)
        gem = next(box for box in level.boxes if 0 in box.contents)
        gx, gy = gem.content_cells[0]
        assert gx <= 9 - 3 and gy <= 7 - 3 and gem.locks == (1, length + 1)  # paper §5 gem placement
        for box in level.boxes:
            x, y = box.content_cells[0]
            assert x in (1, 4, 7) and y in (1, 3, 5) or box is gem
        if b:
            bridges += 1
            assert 1 <= b <= length < c <= 2 * length  # paper §5: (a, b, c)
            (bridge,) = [box for box in level.boxes if box.distractor]
            assert bridge.locks == (b,) and bridge.contents == (c,)
        seen.add(info["puzzle_type"])
    assert 100 < bridges < 200 and {"1-1-2", "2-2-3", "3-3-6", "3-0-0"} <= seen


def test_palettes() -> None:
    assert BRIDGE_HUES.shape == (20, 3) and tuple(BRIDGE_HUES[0]) == (204, 61, 61)  # h=0, s=0.7, v=0.8
    env = BridgeBoxWorldEnv()
    env.reset(seed=1)
    colours = env.level.colours
    assert tuple(colours[0]) == WHITE and sorted(map(tuple, colours[1:])) == sorted(map(tuple, BRIDGE_HUES))


# ---------------------------------------------------------------------------------------------------- registration


@pytest.mark.parametrize("env_id", [BOXWORLD_ID, BRIDGE_BOXWORLD_ID])
def test_gymnasium_env_checker(env_id: str) -> None:
    check_env(gym.make(env_id, render_mode="rgb_array").unwrapped, skip_render_check=False)


def test_gym_make_by_id_in_a_fresh_process() -> None:
    code = (
        "import gymnasium as gym\n"
        f"env = gym.make('tasks.boxworld:{BRIDGE_BOXWORLD_ID}')\n"
        "obs, info = env.reset(seed=0)\n"
        "assert obs.shape == (7, 10, 3) and 'puzzle_type' in info\n"
        f"env = gym.make('tasks.boxworld:{BOXWORLD_ID}', n=6, solution_length=1, num_distractors=0)\n"
        "assert env.reset(seed=0)[0].shape == (8, 8, 3)\n"
        f"vec = gym.make_vec('{BRIDGE_BOXWORLD_ID}', num_envs=3, vectorization_mode='vector_entry_point')\n"
        "obs, _ = vec.reset(seed=0)\n"
        "assert obs.shape == (3, 7, 10, 3) and vec.metadata['autoreset_mode'].value == 'NextStep'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, cwd=Path(__file__).resolve().parents[1])


def test_a_level_of_the_other_variant_is_refused() -> None:
    classic, bridge = BoxWorldEnv(n=6, solution_length=1, num_distractors=0), BridgeBoxWorldEnv()
    bridge_board = bridge.reset(seed=0) and bridge.level
    with pytest.raises(ValueError, match="must be a Level with classic rules"):
        classic.reset(options={"level": bridge_board})
    with pytest.raises(ValueError, match="must be a Level with bridge rules"):
        bridge.reset(options={"level": classic.reset(seed=0) and classic.level})
    with pytest.raises(ValueError, match="must be a Level with bridge rules .* got 'str'"):
        bridge.reset(options={"level": "level 1"})
