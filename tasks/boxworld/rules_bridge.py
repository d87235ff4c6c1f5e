"""Vectorised bridge-BoxWorld rules (``updateState`` in dmurfet/2simplicialtransformer, env/bridge_boxworld.py) for
``vector.BridgeBoxWorldVectorEnv``.

Same rules as ``bridge.BridgeBoxWorldEnv``, written as masked numpy updates over all boards. Each lock cell
carries its box's description in per-board tables (lock colours, contents, the box's other lock cell); a
content tile is always immediately left of its lock. The inventory is an array [B, CAP] kept in pick-up order
(-1 = empty); opening removes one copy of each lock colour (stable compaction) and appends the contents.
"""

from __future__ import annotations

import numpy as np

from tasks.boxworld.bridge import DELTAS
from tasks.boxworld.level import EMPTY, GEM, KEY0, LOCK0, WALL, Level, move_table
from tasks.boxworld.palette import BRIDGE_EMPTY, BRIDGE_PLAYER
from tasks.boxworld.rules_base import BatchedRules

NONE = -1


def _first(inventory: np.ndarray, colours: np.ndarray) -> np.ndarray:
    """Mask of the first copy of ``colours[k]`` in each row of ``inventory`` [k, CAP]."""
    match = inventory == colours[:, None]
    return match & (np.cumsum(match, axis=1) == 1)


class BridgeRules(BatchedRules):
    """Per-board state: cell codes, lock tables [B, N], player cell [B], inventory [B, CAP] and its length [B]."""

    info_keys = ("puzzle_type", "solution_length", "has_bridge", "bridge_source", "bridge_target", "num_decoy_paths")

    def __init__(self, num_envs: int, rows: int, cols: int) -> None:
        self.height, self.width = rows, cols + 1
        cells = rows * self.width
        shape = (num_envs, cells)
        super().__init__(num_envs, cells)
        self.need1 = np.full(shape, NONE, dtype=np.int8)  # [B, N] first lock colour of the lock cell's box
        self.need2 = np.full(shape, NONE, dtype=np.int8)  # [B, N] second lock colour (two-lock gem box)
        self.give1 = np.full(shape, NONE, dtype=np.int8)  # [B, N] first content colour
        self.give2 = np.full(shape, NONE, dtype=np.int8)  # [B, N] second content colour
        self.other = np.tile(np.arange(cells, dtype=np.int64), (num_envs, 1))  # [B, N] the box's other lock cell
        self.decoy = np.zeros(shape, dtype=np.bool_)  # [B, N] bridge / decoy lock cells
        capacity = 2 * len(range(1, cols - 1, 3)) * len(range(1, rows, 2)) + 2  # >= all content tiles
        self.inventory = np.full((num_envs, capacity), NONE, dtype=np.int64)  # [B, CAP]
        self.count = np.zeros(num_envs, dtype=np.int64)  # [B]
        self.inventory_cells = np.arange(rows, dtype=np.int64) * self.width + cols  # [rows]
        self.moves = np.array(
            move_table(rows, self.width, (0, 0, cols - 1, rows - 1), DELTAS), dtype=np.int64
        ).reshape(cells, 4)
        self._identity = np.arange(cells, dtype=np.int64)

    def load(self, b: int, level: Level) -> None:
        """Board b starts ``level`` (the env has already drawn its tiles)."""
        self.cells[b] = level.cells
        for table in (self.need1, self.need2, self.give1, self.give2):
            table[b] = NONE
        self.other[b] = self._identity
        self.decoy[b] = False
        for box in level.boxes:
            if len(box.locks) > 2 or len(box.contents) > 2:
                raise ValueError("a box has at most two locks and two content tiles")
            cells = [level.index(c) for c in box.lock_cells]
            for j, i in enumerate(cells):
                self.need1[b, i] = box.locks[0]
                self.need2[b, i] = box.locks[1] if len(box.locks) == 2 else NONE
                self.give1[b, i] = box.contents[0]
                self.give2[b, i] = box.contents[1] if len(box.contents) == 2 else NONE
                self.other[b, i] = cells[1 - j] if len(cells) == 2 else i
                self.decoy[b, i] = box.distractor
        self.inventory[b] = NONE
        self.count[b] = 0
        self.pos[b] = level.index(level.player)
        self.flat[b, self.pos[b]] = BRIDGE_PLAYER

    def _open(self, bs: np.ndarray, ts: np.ndarray, rewards: np.ndarray, terminated: np.ndarray,
              won: np.ndarray, moved: np.ndarray) -> np.ndarray:
        """Open the boxes whose lock cell ``ts`` the boards ``bs`` step on, when the inventory allows it."""
        if not bs.size:
            return bs
        need1, need2 = self.need1[bs, ts].astype(np.int64), self.need2[bs, ts].astype(np.int64)
        inventory = self.inventory[bs]  # [k, CAP]
        ok = (inventory == need1[:, None]).any(1) & ((need2 < 0) | (inventory == need2[:, None]).any(1))
        bs, ts, need1, need2, inventory = bs[ok], ts[ok], need1[ok], need2[ok], inventory[ok]
        if not bs.size:
            return bs
        keep = (inventory >= 0) & ~_first(inventory, need1) & ~_first(inventory, need2)
        order = np.argsort(~keep, axis=1, kind="stable")
        packed = np.take_along_axis(np.where(keep, inventory, NONE), order, axis=1)  # [k, CAP]
        count = keep.sum(1)
        give1, give2 = self.give1[bs, ts].astype(np.int64), self.give2[bs, ts].astype(np.int64)
        rows = np.arange(len(bs))
        packed[rows, count] = give1
        two = give2 >= 0
        packed[rows[two], count[two] + 1] = give2[two]
        self.inventory[bs] = packed
        self.count[bs] = count + 1 + two
        other = self.other[bs, ts]
        for cell in (ts - 1, ts, other, other - 1):  # contents are left of their locks
            self.cells[bs, cell] = EMPTY
            self.flat[bs, cell] = BRIDGE_EMPTY
        moved[bs] = True
        win = give1 == GEM
        bad = self.decoy[bs, ts] & ~win
        rewards[bs] = np.where(win, 10.0, np.where(bad, -1.0, 1.0))
        terminated[bs] = win | bad
        won[bs] = win
        return bs

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Move every board; returns rewards float64 [B], terminated bool [B], won bool [B]."""
        cells = self.cells
        pos = self.pos
        target = self.moves[pos, actions]  # [B]
        code = self._cells1[self._base + target]  # [B]
        rewards = np.zeros(len(pos), dtype=np.float64)
        terminated = np.zeros(len(pos), dtype=np.bool_)
        won = np.zeros(len(pos), dtype=np.bool_)
        moved = code == EMPTY
        busy = np.flatnonzero(code >= KEY0)  # boards walking into a key or a lock (few)
        if busy.size:
            locks = code[busy] >= LOCK0
            changed = [self._open(busy[locks], target[busy[locks]], rewards, terminated, won, moved)]
            bs = busy[~locks]
            ts = target[bs]
            loose = cells[bs, ts + 1] == EMPTY
            bs, ts = bs[loose], ts[loose]
            if bs.size:
                self.inventory[bs, self.count[bs]] = code[bs].astype(np.int64) - KEY0
                self.count[bs] += 1
                cells[bs, ts] = EMPTY
                moved[bs] = True
                rewards[bs] = 1.0
                changed.append(bs)
            bs = np.concatenate(changed)
            if bs.size:
                shown = self.inventory[bs, : len(self.inventory_cells)]  # [k, rows]
                codes = np.where(shown >= 0, KEY0 + shown, WALL)
                self.flat[bs[:, None], self.inventory_cells[None, :]] = self.palette[bs[:, None], codes]
        new = np.where(moved, target, pos)
        self._pixels[self._base + pos] = BRIDGE_EMPTY
        self._pixels[self._base + new] = BRIDGE_PLAYER
        self.pos = new
        return rewards, terminated, won
