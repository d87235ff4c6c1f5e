"""Vectorised bridge-BoxWorld rules (``updateState`` in dmurfet/2simplicialtransformer, env/bridge_boxworld.py) for
``vector.BridgeBoxWorldVectorEnv``.

Same rules as ``bridge.BridgeBoxWorldEnv``, over all boards at once. Every tile the player can take something
from is described in a per-board table: a lock tile by its box (lock colours needed, contents given, tiles
cleared, bridge or decoy), a loose key by its colour (nothing needed, itself cleared). A key tile in generated
levels is loose from the start or inside a box until the box opens (which clears it), so looseness is fixed per
tile. Taking removes one copy of each lock colour from the inventory and appends the contents.

Speed (``make perf``, ``tasks/boxworld/bench_env.py``): the move itself is one compiled loop over the boards
(``kernels.bridge_step``); the inventory is an array per board (colours in pick-up order, int8 [B, N], and how many
are carried [B]) beside the counts per colour [B, 1 + colours] that decide who can open what. The colour counts
carry a sentinel column 0 ("no lock": always 1), so that a missing second lock needs no branch.
"""

from __future__ import annotations

import numpy as np

from tasks.boxworld import kernels
from tasks.boxworld.bridge import DELTAS
from tasks.boxworld.kernels import bridge_step
from tasks.boxworld.level import N_COLOURS, move_table
from tasks.boxworld.level_batch import NONE, LevelBatch
from tasks.boxworld.palette import BRIDGE_EMPTY, BRIDGE_PLAYER
from tasks.boxworld.rules_base import BatchedRules

# columns of ``BridgeRules.take``, laid out once in ``kernels`` (which indexes them as ints)
NEED, GIVE, CLEAR = (slice(kernels.NEED, kernels.NEED + 2), slice(kernels.GIVE, kernels.GIVE + 2),
                     slice(kernels.CLEAR, kernels.CLEAR + 4))
DECOY = kernels.DECOY
_COLUMNS = kernels.TAKE_COLUMNS


class BridgeRules(BatchedRules):
    """Per-board state: cell codes, the take table [B, N, 9], player cell [B], the inventory [B, N] with its length
    [B], and counts per colour [B, 1 + 21].

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
        self.inventory = np.zeros((num_envs, cells), dtype=np.int8)  # [B, N] colours held, in pick-up order
        self.carried = np.zeros(num_envs, dtype=np.int64)  # [B] how many of them
        self.held = np.zeros((num_envs, 1 + N_COLOURS), dtype=np.int16)  # [B, 1 + colours] sentinel, copies held
        self.held[:, 0] = 1
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
        self.carried[boards] = 0

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Move every board (int64 actions [B]); returns rewards float64 [B], terminated bool [B], won bool [B]."""
        rewards, terminated, won = self.outcomes(len(self.pos))
        bridge_step(actions, self.pos, self.moves, self.cells, self.take, self.held, self.inventory, self.carried,
                    self.flat, self.palette, self.inventory_cells, self.empty_rgb, self.player_rgb, rewards,
                    terminated, won)
        return rewards, terminated, won
