"""Vectorised original-BoxWorld rules (google-deepmind/pycolab, pycolab/examples/research/box_world/box_world.py)
for ``vector.BoxWorldVectorEnv``.

Same rules as ``classic.BoxWorldEnv`` (one held key shown in the top-left border cell; a lock opens with its
held colour, +1, or -1 and termination for a distractor; a key or the gem is picked up when no lock is on its
right, the gem giving +10 and termination), written as masked numpy updates over all boards at once.
"""

from __future__ import annotations

import numpy as np

from tasks.boxworld.classic import DELTAS, NO_KEY
from tasks.boxworld.level import EMPTY, GEM, KEY0, LOCK0, move_table
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
        """Move every board; returns rewards float64 [B], terminated bool [B], won bool [B]."""
        cells, flat, held = self.cells, self.flat, self.held
        pos = self.pos
        target = self.moves[pos * 4 + actions]  # [B]
        code = self._cells1[self._base + target]  # [B]
        rewards = np.zeros(len(pos), dtype=np.float64)
        terminated = np.zeros(len(pos), dtype=np.bool_)
        won = np.zeros(len(pos), dtype=np.bool_)
        moved = code == EMPTY
        busy = (code >= KEY0).nonzero()[0]  # boards walking into a key, the gem or a lock (few)
        if busy.size:
            codes = code[busy].astype(np.int64)
            opened = (codes >= LOCK0) & (codes - LOCK0 == held[busy])
            bs = busy[opened]
            if bs.size:
                ts = target[bs]
                cells[bs, ts] = EMPTY
                held[bs] = NO_KEY
                flat[bs, 0] = CLASSIC_BORDER
                moved[bs] = True
                bad = self.distractor[bs, ts]
                rewards[bs] = np.where(bad, -1.0, 1.0)
                terminated[bs] = bad
            keys = codes < LOCK0
            bs, codes = busy[keys], codes[keys]
            ts = target[bs]
            free = cells[bs, ts + 1] < LOCK0  # no lock on the right
            bs, ts, codes = bs[free], ts[free], codes[free]
            if bs.size:
                cells[bs, ts] = EMPTY
                moved[bs] = True
                gem = codes - KEY0 == GEM
                rewards[bs[gem]] = 10.0
                terminated[bs[gem]] = won[bs[gem]] = True
                kb, kc = bs[~gem], codes[~gem]
                held[kb] = kc - KEY0
                flat[kb, 0] = self.palette[kb, kc]
        self._move_players(moved, target)
        return rewards, terminated, won
