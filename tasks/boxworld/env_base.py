"""Gymnasium plumbing shared by the two single BoxWorld envs: spaces, seeding, reset, rendering.

Seeding: ``reset(seed=s)`` seeds ``self.np_random`` (gymnasium's ``seeding.np_random``, a PCG64 Generator);
``reset()`` without a seed continues that generator's stream; the config's ``seed`` seeds it at construction.
Only levels are random: ``step`` is deterministic, so the same seed gives the same levels and trajectories.
(The reference bridge env calls ``random.seed()`` from OS entropy on every reset: the gym wrapper ``BoxWorld`` in
dmurfet/2simplicialtransformer, notebooks/training.ipynb.)
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.error import ResetNeeded
from gymnasium.utils import seeding

from tasks.boxworld.level import Level

RENDER_SCALE = 10  # rgb_array frames upsample each tile to 10 x 10 pixels, as the reference's render()


class BoxWorldBase(gym.Env):
    """Observation uint8 [height, width, 3]; Discrete(4) actions; subclasses generate levels and step."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}
    rules = ""  # the rules of the levels it plays (Level.rules): "classic" or "bridge"

    def __init__(self, height: int, width: int, seed: int | None, render_mode: str | None) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.render_mode = render_mode
        self.observation_space = spaces.Box(0, 255, (height, width, 3), np.uint8)
        self.action_space = spaces.Discrete(4)
        if seed is not None:
            self._np_random, self._np_random_seed = seeding.np_random(seed)
        self._obs = np.zeros((height, width, 3), dtype=np.uint8)  # [H, W, 3], updated in place
        self._flat = self._obs.reshape(-1, 3)  # [H * W, 3] view
        self._info: dict[str, Any] = {}
        self.level: Level | None = None
        self._ended = True  # no episode under way: step() needs a reset() first

    def _check_step(self, action: Any) -> None:
        """Refuse a step that has no episode to play (before the first ``reset``, or after the episode ended:
        gymnasium leaves such a step undefined, and the rules would go on paying rewards on a finished board) and an
        action that is not an int 0..3 (a float would be cut to an integer)."""
        if self._ended:
            raise ResetNeeded("call reset() before step(): " + ("the env holds no level yet" if self.level is None
                                                               else "the episode has ended"))
        if isinstance(action, bool) or not isinstance(action, Integral) or not 0 <= action <= 3:
            raise ValueError(f"action must be an int 0..3, got {action!r}")

    def _generate(self, rng: np.random.Generator) -> Level:
        raise NotImplementedError

    def _load(self, level: Level) -> None:
        raise NotImplementedError

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """Draw a new level from ``self.np_random`` (seeded first when ``seed`` is given), or play
        ``options["level"]`` (a :class:`Level` of this variant, e.g. a hand-built scene) without drawing."""
        super().reset(seed=seed)
        level = (options or {}).get("level")
        if level is None:
            level = self._generate(self.np_random)
        elif not isinstance(level, Level) or level.rules != self.rules:
            raise ValueError(f"options['level'] must be a Level with {self.rules} rules (e.g. from "
                             f"{'classic_level' if self.rules == 'classic' else 'bridge_level'}), got "
                             f"{getattr(level, 'rules', type(level).__name__)!r}")
        elif level.height != self._obs.shape[0] or level.width != self._obs.shape[1]:
            raise ValueError(f"level is {level.height} x {level.width}, the env is {self._obs.shape[:2]}")
        self.level = level
        self._info = dict(level.info)
        self._obs[:] = level.render()
        self._load(level)
        self._ended = False
        return self._obs.copy(), dict(self._info)

    def render(self) -> np.ndarray | None:
        """The current observation upsampled x10 (``render_mode="rgb_array"``)."""
        if self.render_mode != "rgb_array":
            return None
        return np.repeat(np.repeat(self._obs, RENDER_SCALE, axis=0), RENDER_SCALE, axis=1)
