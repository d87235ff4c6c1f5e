"""The original BoxWorld (Zambaldi et al. 2019) with pycolab ``box_world`` rules (google-deepmind/pycolab,
pycolab/examples/research/box_world/box_world.py).

An n x n room inside a 1-cell black border; observation uint8 [n+2, n+2, 3]. The player holds at most one key,
shown in the top-left border cell (black when empty). Actions (pycolab order): 0 up, 1 down, 2 left, 3 right.

* Walking onto an empty cell moves the player; walls and the border block.
* A lock tile can be entered only while holding its colour: the key is consumed and the lock disappears;
  +1 for a solution lock, -1 and termination for a distractor lock.
* A key tile (or the gem) can be entered only when no lock sits to its right: a loose key, or the content of
  an opened box. Entering picks it up and discards the held key (reward 0); the gem gives +10 and terminates.
* Episodes are truncated after ``horizon`` steps (pycolab: 120; it actually stops after 121, an off-by-one).

``info``: solution_length, num_distractors (forward branches), num_backward, puzzle_type "L-d" (solution length,
distractor branches: the two parameters Zambaldi et al. vary); ``win`` at the end of an episode.

Stepping is plain Python on a flat list of cell codes; the observation array is updated in place (the few
tiles that change) and copied out, so one step costs a few microseconds.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

from tasks.boxworld.config import BoxWorldConfig
from tasks.boxworld.env_base import BoxWorldBase
from tasks.boxworld.gen_classic import check_fits, generate_classic
from tasks.boxworld.level import EMPTY, GEM, KEY0, LOCK0, Level, move_table
from tasks.boxworld.palette import CLASSIC_BACKGROUND, CLASSIC_BORDER, CLASSIC_PLAYER

DELTAS: tuple[tuple[int, int], ...] = ((0, -1), (0, 1), (-1, 0), (1, 0))  # up, down, left, right (pycolab)
NO_KEY = -1


class BoxWorldEnv(BoxWorldBase):
    """Original BoxWorld; keyword arguments (or one mapping) as in :class:`BoxWorldConfig`."""

    rules = "classic"

    def __init__(self, config: Mapping[str, Any] | None = None, render_mode: str | None = None, **kwargs: Any):
        self.config = BoxWorldConfig.build(config, **kwargs)
        check_fits(self.config)
        size = self.config.n + 2
        super().__init__(size, size, self.config.seed, render_mode)
        self._horizon = self.config.horizon or sys.maxsize
        self._moves = move_table(size, size, (1, 1, self.config.n, self.config.n), DELTAS)
        self._cells: list[int] = []
        self._distractors: frozenset[int] = frozenset()
        self._rgb: list[np.ndarray] = []
        self._pos = 0
        self._held = NO_KEY
        self._steps = 0

    def _generate(self, rng: np.random.Generator) -> Level:
        return generate_classic(rng, self.config)

    def _load(self, level: Level) -> None:
        self._cells = level.cells.tolist()
        self._distractors = frozenset(level.index(b.lock_cells[0]) for b in level.boxes if b.distractor)
        self._rgb = list(level.palette)  # code -> RGB row
        self._pos = level.index(level.player)
        self._held = NO_KEY
        self._steps = 0
        self._flat[self._pos] = CLASSIC_PLAYER

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Apply one move (pycolab rules above)."""
        self._check_step(action)
        p = self._pos
        t = self._moves[4 * p + action]
        cells = self._cells
        code = cells[t]
        reward = 0.0
        terminated = won = False
        moved = code == EMPTY
        if code >= LOCK0:
            if code - LOCK0 == self._held:
                cells[t] = EMPTY
                self._held = NO_KEY
                self._flat[0] = CLASSIC_BORDER
                moved = True
                if t in self._distractors:
                    reward, terminated = -1.0, True
                else:
                    reward = 1.0
        elif code >= KEY0 and cells[t + 1] < LOCK0:  # a key or the gem with no lock on its right
            cells[t] = EMPTY
            moved = True
            if code - KEY0 == GEM:
                reward, terminated, won = 10.0, True, True
            else:
                self._held = code - KEY0
                self._flat[0] = self._rgb[code]
        if moved:
            self._flat[p] = CLASSIC_BACKGROUND
            self._flat[t] = CLASSIC_PLAYER
            self._pos = t
        self._steps += 1
        truncated = not terminated and self._steps >= self._horizon
        info = dict(self._info)
        if terminated or truncated:
            info["win"] = won
            self._ended = True
        return self._obs.copy(), reward, terminated, truncated, info
