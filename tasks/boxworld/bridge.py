"""Bridge BoxWorld, the environment of the 2-simplicial Transformer paper (§3.2, §5; dmurfet/2simplicialtransformer,
env/bridge_boxworld.py and the gym wrapper in notebooks/training.ipynb).

A ``num_rows`` x ``num_cols`` board plus an inventory column on the right: observation uint8
[num_rows, num_cols + 1, 3] (7 x 10 x 3 in the paper). Actions (reference order): 0 left, 1 up, 2 right, 3 down;
moves off the board leave the player in place. The player starts at (0, 0).

* Walking onto an empty tile moves the player.
* A lock tile can be entered when the inventory holds every lock colour of its box (both colours for the
  two-lock gem box): those keys leave the inventory, the box's content joins it at once (the gem box gives
  two gem tiles), all tiles of the box are cleared and the player stands on the lock.
* A key tile with nothing on its right is a loose key: entering it appends it to the inventory. A key still
  inside a box blocks.
* Rewards (reference notebook): +10 and termination when the gem enters the inventory; -1 and termination when
  the player stands on a bridge or decoy lock (i.e. just opened it); otherwise +1 when the inventory changed.
  No horizon by default (the paper trains without one); ``horizon`` truncates.

``info``: solution_length (L), has_bridge, bridge_source (b), bridge_target (c), puzzle_type "L-b-c" (paper §5;
"L-0-0" without a bridge), num_decoy_paths; ``win`` at the end of an episode.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

from tasks.boxworld.config import BridgeBoxWorldConfig
from tasks.boxworld.env_base import BoxWorldBase
from tasks.boxworld.gen_bridge import generate_bridge
from tasks.boxworld.level import EMPTY, GEM, KEY0, LOCK0, WALL, Level, move_table
from tasks.boxworld.palette import BRIDGE_EMPTY, BRIDGE_PLAYER

DELTAS: tuple[tuple[int, int], ...] = ((-1, 0), (0, -1), (1, 0), (0, 1))  # left, up, right, down (reference)

# per lock cell: (lock colours needed, contents given, cells cleared, is a bridge/decoy lock)
LockEntry = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], bool]


class BridgeBoxWorldEnv(BoxWorldBase):
    """Bridge BoxWorld; keyword arguments (or one mapping) as in :class:`BridgeBoxWorldConfig`."""

    rules = "bridge"

    def __init__(self, config: Mapping[str, Any] | None = None, render_mode: str | None = None, **kwargs: Any):
        self.config = cfg = BridgeBoxWorldConfig.build(config, **kwargs)
        super().__init__(cfg.num_rows, cfg.num_cols + 1, cfg.seed, render_mode)
        self._horizon = cfg.horizon or sys.maxsize
        width = cfg.num_cols + 1
        self._moves = move_table(cfg.num_rows, width, (0, 0, cfg.num_cols - 1, cfg.num_rows - 1), DELTAS)
        self._inventory_cells = [y * width + cfg.num_cols for y in range(cfg.num_rows)]
        self._cells: list[int] = []
        self._locks: dict[int, LockEntry] = {}
        self._rgb: list[np.ndarray] = []
        self._inventory: list[int] = []
        self._pos = 0
        self._steps = 0

    @property
    def inventory(self) -> list[int]:
        """Colour indices held, in pick-up order (0 = gem)."""
        return list(self._inventory)

    def _generate(self, rng: np.random.Generator) -> Level:
        return generate_bridge(rng, self.config)

    def _load(self, level: Level) -> None:
        self._cells = level.cells.tolist()
        self._locks = {}
        for box in level.boxes:
            if box.locks:
                cleared = tuple(level.index(c) for c in box.content_cells + box.lock_cells)
                entry = (box.locks, box.contents, cleared, box.distractor)
                for cell in box.lock_cells:
                    self._locks[level.index(cell)] = entry
        self._rgb = list(level.palette)
        self._inventory = []
        self._pos = level.index(level.player)
        self._steps = 0
        self._flat[self._pos] = BRIDGE_PLAYER

    def _draw_inventory(self) -> None:
        inventory, rgb, flat = self._inventory, self._rgb, self._flat
        for i, cell in enumerate(self._inventory_cells):
            flat[cell] = rgb[KEY0 + inventory[i]] if i < len(inventory) else rgb[WALL]

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Apply one move (reference ``updateState`` and notebook reward, see the module docstring)."""
        self._check_step(action)
        p = self._pos
        t = self._moves[4 * p + action]
        cells = self._cells
        code = cells[t]
        reward = 0.0
        terminated = won = False
        moved = code == EMPTY
        if code >= LOCK0:
            needs, gives, cleared, decoy = self._locks[t]
            inventory = self._inventory
            if all(c in inventory for c in needs):
                for c in needs:
                    inventory.remove(c)
                inventory.extend(gives)
                for cell in cleared:
                    cells[cell] = EMPTY
                    self._flat[cell] = BRIDGE_EMPTY
                self._draw_inventory()
                moved = True
                if GEM in gives:
                    reward, terminated, won = 10.0, True, True
                elif decoy:
                    reward, terminated = -1.0, True
                else:
                    reward = 1.0
        elif code >= KEY0 and cells[t + 1] == EMPTY:  # a loose key
            cells[t] = EMPTY
            self._inventory.append(code - KEY0)
            self._draw_inventory()
            moved = True
            reward = 1.0
        if moved:
            self._flat[p] = BRIDGE_EMPTY
            self._flat[t] = BRIDGE_PLAYER
            self._pos = t
        self._steps += 1
        truncated = not terminated and self._steps >= self._horizon
        info = dict(self._info)
        if terminated or truncated:
            info["win"] = won
            self._ended = True
        return self._obs.copy(), reward, terminated, truncated, info
