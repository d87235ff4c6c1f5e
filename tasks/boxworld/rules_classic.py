"""Vectorised original-BoxWorld rules (google-deepmind/pycolab, pycolab/examples/research/box_world/box_world.py)
for ``vector.BoxWorldVectorEnv``.

Same rules as ``classic.BoxWorldEnv`` (one held key shown in the top-left border cell; a lock opens with its
held colour, +1, or -1 and termination for a distractor; a key or the gem is picked up when no lock is on its
right, the gem giving +10 and termination); a move is one compiled loop over the boards (``kernels.classic_step``).
"""

from __future__ import annotations

import numpy as np

from tasks.boxworld.classic import DELTAS, NO_KEY
from tasks.boxworld.kernels import classic_step
from tasks.boxworld.level import move_table
from tasks.boxworld.level_batch import LevelBatch
from tasks.boxworld.palette import CLASSIC_BACKGROUND, CLASSIC_BORDER, CLASSIC_PLAYER
from tasks.boxworld.rules_base import BatchedRules


class ClassicRules(BatchedRules):
    """Per-board state: cell codes int8 [B, N], distractor locks bool [B, N], player cell [B], held key [B]."""

    info_keys = ("puzzle_type", "solution_length", "num_distractors", "num_backward")
    player_rgb = CLASSIC_PLAYER
    empty_rgb = CLASSIC_BACKGROUND

    def __init__(self, num_envs: int, n: int) -> None:
        self.height = self.width = size = n + 2
        cells = size * size
        super().__init__(num_envs, cells)
        self.distractor = np.zeros((num_envs, cells), dtype=np.bool_)  # [B, N]
        self.held = np.full(num_envs, NO_KEY, dtype=np.int64)  # [B] colour, -1 = none
        self.moves = np.array(move_table(size, size, (1, 1, n, n), DELTAS), dtype=np.int64)  # [N * 4]

    def encode(self, batch: LevelBatch) -> dict[str, np.ndarray]:
        """Start state of k levels, plus their distractor lock cells bool [k, N]."""
        state = super().encode(batch)
        distractor = np.zeros(state["cells"].shape, dtype=np.bool_)  # [k, N]
        rows, cols = np.nonzero(batch.distractor)
        distractor[rows, batch.anchor[rows, cols] + 1] = True
        return {**state, "distractor": distractor}

    def load(self, boards: np.ndarray, state: dict[str, np.ndarray]) -> None:
        """Boards ``boards`` start the levels ``state``, holding no key."""
        super().load(boards, state)
        self.held[boards] = NO_KEY

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Move every board (int64 actions [B]); returns rewards float64 [B], terminated bool [B], won bool [B]."""
        rewards, terminated, won = self.outcomes(len(self.pos))
        classic_step(actions, self.pos, self.moves, self.cells, self.distractor, self.held, self.flat, self.palette,
                     CLASSIC_BORDER, self.empty_rgb, self.player_rgb, rewards, terminated, won)
        return rewards, terminated, won
