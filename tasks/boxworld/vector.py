"""Batched BoxWorld: many boards stepped at once with numpy, as a gymnasium 1.2 ``VectorEnv``.

State arrays (B boards, N = height * width cells in observation layout): cell codes int8 [B, N], observation
uint8 [B, H, W, 3] updated in place (only the tiles that change), per-board code palettes uint8 [B, N_CODES, 3],
player cell [B], step counter [B]; the rule-specific state lives in ``rules_classic`` / ``rules_bridge``. Levels
come from the batched generators (``gen_classic_batch`` / ``gen_bridge_batch``: numpy over levels, one Generator
per board), generated ahead in batches (``next_levels``); stepping is vectorised over boards.

Seeding follows gymnasium's ``SyncVectorEnv``: ``reset(seed=s)`` seeds board i with ``s + i`` (a list gives one
seed per board); an autoreset continues that board's stream. So board i plays the levels that the batched
generator draws, one after the other, from a Generator seeded with ``s + i`` (``generate_*_batch([rng])``), and
which boards reset together does not matter. The single envs keep the per-level generators (faster for one level
at a time), so for the same seed they draw other levels; given the same levels (``reset(options={"level": ...})``)
they play the same trajectories.

Autoreset: ``autoreset_mode`` is ``AutoresetMode.NEXT_STEP`` by default (gymnasium 1.x default): the step after a
board's episode ended ignores its action and returns its new level's first observation with reward 0 and
terminated = truncated = False. ``AutoresetMode.SAME_STEP`` is also available: the returned observation of an
ended board is already the new level's; the last observation of the old episode and its info are in
``infos["final_obs"]`` / ``infos["final_info"]`` (with ``_final_obs`` / ``_final_info`` masks).

Infos follow gymnasium's vector convention (an array per key plus a ``_key`` mask) and are only filled for the
boards with an event: on a reset, the new level's description; when an episode ends, the level's description
plus ``win``. Other steps return ``{}``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.error import ResetNeeded
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from tasks.boxworld.config import BoxWorldConfig, BridgeBoxWorldConfig
from tasks.boxworld.gen_bridge_batch import generate_bridge_batch
from tasks.boxworld.gen_classic import check_fits
from tasks.boxworld.gen_classic_batch import generate_classic_batch
from tasks.boxworld.level import N_CODES
from tasks.boxworld.level_batch import LevelBatch
from tasks.boxworld.next_levels import Encoded, NextLevels
from tasks.boxworld.rules_bridge import BridgeRules
from tasks.boxworld.rules_classic import ClassicRules

INFO_DTYPES: dict[str, type] = {
    "puzzle_type": object,
    "solution_length": np.int64,
    "num_distractors": np.int64,
    "num_backward": np.int64,
    "has_bridge": np.bool_,
    "bridge_source": np.int64,
    "bridge_target": np.int64,
    "num_decoy_paths": np.int64,
}


class BatchedBoxWorld(VectorEnv):
    """Common batching: spaces, seeding, autoreset, infos. ``rules`` steps the boards."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int,
        generate: Callable[[Sequence[np.random.Generator]], LevelBatch],
        rules: ClassicRules | BridgeRules,
        horizon: int | None,
        seed: int | None,
        autoreset_mode: AutoresetMode | str,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        mode = AutoresetMode(autoreset_mode) if isinstance(autoreset_mode, str) else autoreset_mode
        if mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
            raise ValueError(f"autoreset_mode must be NEXT_STEP or SAME_STEP, got {mode}")
        self.metadata = {"autoreset_mode": mode}
        self.autoreset_mode = mode
        self.num_envs = num_envs
        self._generate = generate
        self._rules = rules
        self._next = NextLevels(num_envs, self._encode, self._rng, refill_at=num_envs // 8)
        height, width = rules.height, rules.width
        self.single_observation_space = spaces.Box(0, 255, (height, width, 3), np.uint8)
        self.single_action_space = spaces.Discrete(4)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._horizon = horizon
        self._obs = np.zeros((num_envs, height, width, 3), dtype=np.uint8)  # [B, H, W, 3]
        self._flat = self._obs.reshape(num_envs, height * width, 3)  # [B, N, 3] view
        self._palette = np.zeros((num_envs, N_CODES, 3), dtype=np.uint8)  # [B, N_CODES, 3]
        self._steps = np.zeros(num_envs, dtype=np.int64)  # [B]
        self._pending = np.zeros(num_envs, dtype=np.bool_)  # [B] episode ended, reset on the next step
        self._started = False  # reset() has drawn the first levels
        self._numeric = [key for key in INFO_DTYPES if key in rules.info_keys and key != "puzzle_type"]
        self._numbers = np.zeros((len(self._numeric), num_envs), dtype=np.int64)  # [K, B] info of each level
        self._puzzles = np.zeros(num_envs, dtype=object)  # [B] puzzle_type of each level
        self._rngs: list[np.random.Generator | None] = [None] * num_envs
        if seed is not None:
            self._seed_boards(seed)
        rules.bind(self._flat, self._palette)

    def _seed_boards(self, seed: int | Sequence[int | None]) -> None:
        seeds = [seed + i for i in range(self.num_envs)] if isinstance(seed, int) else list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(f"expected {self.num_envs} seeds, got {len(seeds)}")
        for i, s in enumerate(seeds):
            if s is not None or self._rngs[i] is None:
                self._rngs[i] = seeding.np_random(s)[0]
                self._next.forget(np.array([i]))

    def _rng(self, board: int) -> np.random.Generator:
        rng = self._rngs[board]
        if rng is None:  # never seeded: OS entropy, as gymnasium
            rng = self._rngs[board] = seeding.np_random()[0]
        return rng

    def _encode(self, rngs: Sequence[np.random.Generator]) -> Encoded:
        batch = self._generate(rngs)
        numbers = np.stack([batch.info[key] for key in self._numeric], axis=1).astype(np.int64)  # [k, K]
        return {**self._rules.encode(batch), "info_numbers": numbers, "info_puzzle": batch.info["puzzle_type"]}

    def _reset_boards(self, boards: np.ndarray) -> None:
        state = self._next.take(boards)
        self._numbers[:, boards] = state.pop("info_numbers").T
        self._puzzles[boards] = state.pop("info_puzzle")
        self._rules.load(boards, state)
        self._steps[boards] = 0

    def _add_infos(self, infos: dict[str, Any], boards: np.ndarray) -> dict[str, Any]:
        """The level descriptions of the boards in the mask ``boards`` bool [B] (once per dict; the keys share
        the mask array)."""
        mask = boards.copy()
        shown = mask.nonzero()[0]  # [k] (few: scattering them beats np.where over all boards)
        numbers = self._numbers * mask  # [K, B], 0 outside the mask
        for key, row in zip(self._numeric, numbers, strict=True):
            infos[key] = row if INFO_DTYPES[key] is np.int64 else row.astype(INFO_DTYPES[key])
            infos["_" + key] = mask
        puzzles = np.zeros(self.num_envs, dtype=object)  # [B]
        puzzles[shown] = self._puzzles[shown]
        infos["puzzle_type"], infos["_puzzle_type"] = puzzles, mask
        return infos

    def _add_win(self, infos: dict[str, Any], done: np.ndarray, won: np.ndarray) -> dict[str, Any]:
        """``win`` for the boards in the mask ``done`` bool [B]."""
        infos["win"], infos["_win"] = won & done, done.copy()
        return infos

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """New levels on every board (seeded as documented in the module docstring)."""
        if seed is not None:
            self._seed_boards(seed)
        boards = np.arange(self.num_envs)
        self._reset_boards(boards)
        self._pending[:] = False
        self._started = True
        return self._obs.copy(), self._add_infos({}, np.ones(self.num_envs, dtype=np.bool_))

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One move on every board, then the autoreset of the configured mode."""
        if not self._started:
            raise ResetNeeded("call reset() before step(): the boards hold no level yet")
        given = np.asarray(actions)
        if given.dtype.kind not in "iu":  # a float (or bool) would be cut to an integer without a word
            raise ValueError(f"actions must be integers 0..3, got {given.dtype} {given}")
        actions = given.astype(np.int64, copy=False).reshape(self.num_envs)
        if np.count_nonzero(actions & ~3):  # negative or > 3
            raise ValueError(f"actions must be 0..3, got {actions}")
        rewards, terminated, won = self._rules.step(actions)  # float64 [B], bool [B], bool [B]
        self._steps += 1
        if self._horizon is None:
            truncated = np.zeros(self.num_envs, dtype=np.bool_)
        else:
            truncated = (self._steps >= self._horizon) & ~terminated
        infos: dict[str, Any] = {}
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            pending = self._pending
            boards = pending.nonzero()[0]  # [k] ended last step: new level, action ignored
            if boards.size:
                rewards[boards] = 0.0
                terminated[boards] = truncated[boards] = won[boards] = False
                self._reset_boards(boards)
            done = terminated | truncated  # disjoint from the boards just reset
            if np.count_nonzero(done):
                self._add_win(infos, done, won)
            if infos or boards.size:
                self._add_infos(infos, pending | done)
            self._pending = done
        else:
            done = terminated | truncated
            boards = done.nonzero()[0]
            if boards.size:
                final_obs = np.full(self.num_envs, None, dtype=object)
                for b in boards:
                    final_obs[b] = self._obs[b].copy()
                infos["final_obs"], infos["_final_obs"] = final_obs, done.copy()
                infos["final_info"] = self._add_win(self._add_infos({}, done), done, won)
                infos["_final_info"] = done.copy()
                self._reset_boards(boards)
                self._add_infos(infos, done)
        return self._obs.copy(), rewards, terminated, truncated, infos


class BoxWorldVectorEnv(BatchedBoxWorld):
    """``num_envs`` original-BoxWorld boards; kwargs (or one mapping) as in :class:`BoxWorldConfig`."""

    def __init__(
        self,
        num_envs: int = 64,
        config: Mapping[str, Any] | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        **kwargs: Any,
    ) -> None:
        self.config = cfg = BoxWorldConfig.build(config, **kwargs)
        check_fits(cfg)
        rules = ClassicRules(num_envs, cfg.n)
        super().__init__(num_envs, lambda rngs: generate_classic_batch(rngs, cfg), rules, cfg.horizon, cfg.seed,
                         autoreset_mode)


class BridgeBoxWorldVectorEnv(BatchedBoxWorld):
    """``num_envs`` bridge-BoxWorld boards; kwargs (or one mapping) as in :class:`BridgeBoxWorldConfig`."""

    def __init__(
        self,
        num_envs: int = 64,
        config: Mapping[str, Any] | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        **kwargs: Any,
    ) -> None:
        self.config = cfg = BridgeBoxWorldConfig.build(config, **kwargs)
        rules = BridgeRules(num_envs, cfg.num_rows, cfg.num_cols)
        super().__init__(num_envs, lambda rngs: generate_bridge_batch(rngs, cfg), rules, cfg.horizon, cfg.seed,
                         autoreset_mode)
