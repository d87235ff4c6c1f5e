"""Vectorised bridge-BoxWorld rules (``updateState`` in dmurfet/2simplicialtransformer, env/bridge_boxworld.py) for
``vector.BridgeBoxWorldVectorEnv``.

Same rules as ``bridge.BridgeBoxWorldEnv``, written as masked numpy updates over all boards. Every tile the player
can take something from is described in a per-board table: a lock tile by its box (lock colours needed,
contents given, tiles cleared, bridge or decoy), a loose key by its colour (nothing needed, itself cleared). A key
tile in generated levels is loose from the start or inside a box until the box opens (which clears it), so
looseness is fixed per tile. The inventory is a list per board in pick-up order, plus counts per colour
[B, colours] for the vectorised check of who can open what; taking removes one copy of each lock colour and
appends the contents.
"""

from __future__ import annotations

import numpy as np

from tasks.boxworld.bridge import DELTAS
from tasks.boxworld.level import EMPTY, GEM, KEY0, N_COLOURS, WALL, move_table
from tasks.boxworld.level_batch import NONE, LevelBatch
from tasks.boxworld.palette import BRIDGE_EMPTY, BRIDGE_PLAYER
from tasks.boxworld.rules_base import BatchedRules

NEED, GIVE, CLEAR, DECOY = slice(0, 2), slice(2, 4), slice(4, 8), 8  # columns of ``BridgeRules.take``
_COLUMNS = 9


class BridgeRules(BatchedRules):
    """Per-board state: cell codes, the take table [B, N, 9], player cell [B], inventory lists and counts [B, 21].

    For each tile the player can take from, the take table holds the colours needed (NEED, two columns), the
    colours given (GIVE, two columns), the four tiles cleared (CLEAR, repeats allowed) and whether it is a bridge or
    decoy lock (DECOY); -1 where there is none (GIVE[0] = -1: nothing to take, the tile blocks)."""

    info_keys = ("puzzle_type", "solution_length", "has_bridge", "bridge_source", "bridge_target", "num_decoy_paths")
    player_rgb = BRIDGE_PLAYER
    empty_rgb = BRIDGE_EMPTY

    def __init__(self, num_envs: int, rows: int, cols: int) -> None:
        self.height, self.width = rows, cols + 1
        cells = rows * self.width
        super().__init__(num_envs, cells)
        self.take = np.full((num_envs, cells, _COLUMNS), NONE, dtype=np.int16)  # [B, N, 9]
        self.inventories: list[list[int]] = [[] for _ in range(num_envs)]  # colours held, in pick-up order
        self.held = np.zeros((num_envs, N_COLOURS), dtype=np.int16)  # [B, colours] copies of each colour held
        self.inventory_cells = np.arange(rows, dtype=np.int64) * self.width + cols  # [rows]
        self.moves = np.array(move_table(rows, self.width, (0, 0, cols - 1, rows - 1), DELTAS))  # [N * 4]

    def encode(self, batch: LevelBatch) -> dict[str, np.ndarray]:
        """Start state of k levels, plus their take tables [k, N, 9] (see the class docstring)."""
        state = super().encode(batch)
        k, cells = state["cells"].shape
        table = np.full((k, cells, _COLUMNS), NONE, dtype=np.int16)  # [k, N, 9]
        rows, cols = np.nonzero(batch.content >= 0)
        content, lock, anchor = batch.content[rows, cols], batch.lock[rows, cols], batch.anchor[rows, cols]
        loose = lock < 0
        at = np.where(loose, anchor, anchor + 1)  # the tile entered: the loose key, or the lock
        table[rows, at, NEED.start] = lock
        table[rows, at, GIVE.start] = content
        table[rows, at, CLEAR] = np.stack((anchor, at, at, anchor), axis=1)  # a loose key: at == anchor
        table[rows, at, DECOY] = batch.distractor[rows, cols]
        tall = np.flatnonzero(batch.lower_lock >= 0)  # two-row gem boxes (box 0): both locks open the box
        upper = batch.anchor[tall, 0] + 1
        lower = upper + self.width
        for tile in (upper, lower):
            table[tall, tile, NEED] = np.stack((batch.lock[tall, 0], batch.lower_lock[tall]), axis=1)
            table[tall, tile, GIVE] = batch.content[tall, 0, None]
            table[tall, tile, CLEAR] = np.stack((upper - 1, upper, lower, lower - 1), axis=1)
        return {**state, "take": table}

    def load(self, boards: np.ndarray, state: dict[str, np.ndarray]) -> None:
        """Boards ``boards`` start the levels ``state``, with empty inventories."""
        super().load(boards, state)
        self.held[boards] = 0
        for b in boards.tolist():
            self.inventories[b] = []

    def _enter(self, bs: np.ndarray, ts: np.ndarray, rewards: np.ndarray, terminated: np.ndarray,
               won: np.ndarray, moved: np.ndarray) -> None:
        """Boards ``bs`` walk into key or lock tiles ``ts``: take what the inventory allows. Which boards can take
        is found for all at once; the few that take (a few per step, even with 1,024 boards) update their
        inventory lists in a Python loop, cheaper there than a dozen more numpy calls."""
        entry = self.take[bs, ts]  # int16 [k, 9]
        need = entry[:, NEED].astype(np.int64)  # [k, 2]
        ok = (entry[:, GIVE.start] >= 0) & ((need < 0) | (self.held[bs[:, None], need] > 0)).all(1)
        if not ok.any():  # (column -1 of held, read for a missing second lock, is masked)
            return
        bs, entry = bs[ok], entry[ok]
        shown, held_boards, held_colours, held_deltas, ends = [], [], [], [], []
        for b, row in zip(bs.tolist(), entry.tolist(), strict=True):
            inventory = self.inventories[b]
            for colour in row[NEED]:
                if colour >= 0:
                    inventory.remove(colour)
                    held_boards.append(b), held_colours.append(colour), held_deltas.append(-1)
            for colour in row[GIVE]:
                if colour >= 0:
                    inventory.append(colour)
                    held_boards.append(b), held_colours.append(colour), held_deltas.append(1)
            shown.append([KEY0 + c for c in inventory[: self.height]] + [WALL] * (self.height - len(inventory)))
            win = row[GIVE.start] == GEM
            ends.append((10.0 if win else -1.0 if row[DECOY] > 0 else 1.0, win or row[DECOY] > 0, win))
        np.add.at(self.held, (held_boards, held_colours), held_deltas)
        base = self._base[bs][:, None]  # [k, 1]
        cleared = base + entry[:, CLEAR]  # [k, 4]
        self._cells1[cleared] = EMPTY
        self._tiles[cleared] = self._empty_tile
        self._tiles[base + self.inventory_cells] = self._palette_tiles[bs[:, None], shown]  # [k, rows]
        moved[bs] = True
        # +10 and the end for the gem, -1 and the end for a bridge or decoy, else +1 (the inventory changed)
        rewards[bs], terminated[bs], won[bs] = zip(*ends, strict=True)

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Move every board; returns rewards float64 [B], terminated bool [B], won bool [B]."""
        target = self.moves[self.pos * 4 + actions]  # [B]
        code = self._cells1[self._base + target]  # [B]
        rewards = np.zeros(len(target), dtype=np.float64)
        terminated = np.zeros(len(target), dtype=np.bool_)
        won = np.zeros(len(target), dtype=np.bool_)
        moved = code == EMPTY
        busy = np.flatnonzero(code >= KEY0)  # boards walking into a key or a lock (few)
        if busy.size:
            self._enter(busy, target[busy], rewards, terminated, won, moved)
        self._move_players(moved, target)
        return rewards, terminated, won
