"""What the two batched rule sets share: per-board cell codes, player cells and the pixel views they
update in place (``tasks/boxworld/vector.py`` owns the observation array and binds it here)."""

from __future__ import annotations

import numpy as np


class BatchedRules:
    """Cell codes int8 [B, N], player cell [B], and the observation's pixels as a flat view."""

    def __init__(self, num_envs: int, cells: int) -> None:
        self.cells = np.zeros((num_envs, cells), dtype=np.int8)  # [B, N] codes
        self.pos = np.zeros(num_envs, dtype=np.int64)  # [B]
        self._base = np.arange(num_envs, dtype=np.int64) * cells  # [B] offset of each board's first cell
        self._cells1 = self.cells.reshape(-1)  # [B * N] view
        self.flat = np.zeros((num_envs, cells, 3), dtype=np.uint8)
        self._pixels = self.flat.reshape(-1, 3)
        self.palette = np.zeros((num_envs, 1, 3), dtype=np.uint8)

    def bind(self, flat: np.ndarray, palette: np.ndarray) -> None:
        """Share the env's observation view uint8 [B, N, 3] and palettes uint8 [B, N_CODES, 3]."""
        self.flat, self.palette = flat, palette
        self._pixels = flat.reshape(-1, 3)  # [B * N, 3] view
        assert np.shares_memory(self._pixels, flat)
