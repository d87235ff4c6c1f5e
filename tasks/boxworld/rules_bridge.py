"""Vectorised bridge-BoxWorld rules (``updateState`` in dmurfet/2simplicialtransformer, env/bridge_boxworld.py) for
``vector.BridgeBoxWorldVectorEnv``.

Same rules as ``bridge.BridgeBoxWorldEnv``, written as masked numpy updates over all boards. Every tile the player
can take something from is described in a per-board table: a lock tile by its box (lock colours needed,
contents given, tiles cleared, bridge or decoy), a loose key by its colour (nothing needed, itself cleared). A key
tile in generated levels is loose from the start or inside a box until the box opens (which clears it), so
looseness is fixed per tile. The inventory is a list per board in pick-up order, plus counts per colour
[B, colours] for the vectorised check of who can open what; taking removes one copy of each lock colour and
appends the contents.

Speed (``make perf``, ``tasks/boxworld/bench_env.py``): the per-step work is a handful of numpy calls over all
boards plus a Python loop over the few that take something, so lookups go through flat views (one index array
instead of two) and the colour counts carry a sentinel column 0 ("no lock": always 1), so that a missing second
lock needs no mask.
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
    """Per-board state: cell codes, the take table [B, N, 9], player cell [B], inventory lists and counts [B, 1 + 21].

    For each tile the player can take from, the take table holds the colours needed (NEED, two columns), the
    colours given (GIVE, two columns), the four tiles cleared (CLEAR, repeats allowed) and whether it is a bridge or
    decoy lock (DECOY); -1 where there is none (GIVE[0] = -1: nothing to take, the tile blocks). ``held[b, 1 + c]``
    counts the copies of colour c on board b; ``held[b, 0]`` is always 1, so that ``held[b, 1 + need]`` is positive
    for a missing lock (need = -1)."""

    info_keys = ("puzzle_type", "solution_length", "has_bridge", "bridge_source", "bridge_target", "num_decoy_paths")
    player_rgb = BRIDGE_PLAYER
    empty_rgb = BRIDGE_EMPTY

    def __init__(self, num_envs: int, rows: int, cols: int) -> None:
        self.height, self.width = rows, cols + 1
        cells = rows * self.width
        super().__init__(num_envs, cells)
        self.take = np.full((num_envs, cells, _COLUMNS), NONE, dtype=np.int16)  # [B, N, 9]
        self.inventories: list[list[int]] = [[] for _ in range(num_envs)]  # colours held, in pick-up order
        self.held = np.zeros((num_envs, 1 + N_COLOURS), dtype=np.int16)  # [B, 1 + colours] sentinel, copies held
        self.held[:, 0] = 1
        self._held1 = self.held.reshape(-1)  # [B * (1 + colours)] view
        self._take_rows = self.take.reshape(-1, _COLUMNS)  # [B * N, 9] view, row b * N + tile
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
        self.held[boards, 1:] = 0
        for b in boards.tolist():
            self.inventories[b] = []

    def _enter(self, bs: np.ndarray, rows: np.ndarray, rewards: np.ndarray, terminated: np.ndarray,
               won: np.ndarray, moved: np.ndarray) -> None:
        """Boards ``bs`` walk into key or lock tiles (``rows``: their rows b * N + tile of the flat take table):
        take what the inventory allows. Which boards can take is found for all at once; the few that take (a few
        per step, even with 1,024 boards) update their inventories in a Python loop, cheaper there than a dozen
        more numpy calls."""
        entry = self._take_rows[rows]  # int16 [k, 9]
        counts = (bs * self.held.shape[1] + 1)[:, None] + entry[:, NEED]  # [k, 2] into held1; a missing lock -> 0
        have = self._held1[counts]  # [k, 2] copies held of each lock colour (1 for a missing lock)
        ok = (entry[:, GIVE.start] >= 0) & (have[:, 0] > 0) & (have[:, 1] > 0)
        if not np.count_nonzero(ok):
            return
        bs, entry = bs[ok], entry[ok]
        held, shown, ends, codes = self.held, [], [], self._palette_tiles.shape[1]
        for b, row in zip(bs.tolist(), entry.tolist(), strict=True):
            inventory = self.inventories[b]
            for colour in row[NEED]:
                if colour >= 0:
                    inventory.remove(colour)
                    held[b, 1 + colour] -= 1
            for colour in row[GIVE]:
                if colour >= 0:
                    inventory.append(colour)
                    held[b, 1 + colour] += 1
            first = b * codes  # the board's palette in the flat palette tiles
            shown += [first + KEY0 + c for c in inventory[: self.height]]
            shown += [first + WALL] * (self.height - len(inventory))
            win = row[GIVE.start] == GEM
            ends.append((10.0 if win else -1.0 if row[DECOY] > 0 else 1.0, win or row[DECOY] > 0, win))
        base = self._base[bs][:, None]  # [k, 1]
        cleared = base + entry[:, CLEAR]  # [k, 4]
        self._cells1[cleared] = EMPTY
        self._tiles[cleared] = self._empty_tile
        self._tiles[(base + self.inventory_cells).reshape(-1)] = self._palette_tiles1[shown]  # [k * rows]
        moved[bs] = True
        # +10 and the end for the gem, -1 and the end for a bridge or decoy, else +1 (the inventory changed)
        rewards[bs], terminated[bs], won[bs] = zip(*ends, strict=True)

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Move every board; returns rewards float64 [B], terminated bool [B], won bool [B]."""
        target = self.moves[self.pos * 4 + actions]  # [B]
        flat_target = self._base + target  # [B] into the flat cells (and rows of the flat take table)
        code = self._cells1[flat_target]  # [B]
        rewards = np.zeros(len(target), dtype=np.float64)
        terminated = np.zeros(len(target), dtype=np.bool_)
        won = np.zeros(len(target), dtype=np.bool_)
        moved = code == EMPTY
        busy = (code >= KEY0).nonzero()[0]  # boards walking into a key or a lock (few)
        if busy.size:
            self._enter(busy, flat_target[busy], rewards, terminated, won, moved)
        self._move_players(moved, target)
        return rewards, terminated, won
