"""What the two batched rule sets share: per-board cell codes, player cells and the pixel views they
update in place (``tasks/boxworld/vector.py`` owns the observation array and binds it here), and loading new
levels: :meth:`BatchedRules.encode` turns a :class:`LevelBatch` into per-board arrays, :meth:`BatchedRules.load`
copies them onto boards. The moves themselves are compiled loops over the boards (``kernels.py``)."""

from __future__ import annotations

import numpy as np

from tasks.boxworld.level_batch import LevelBatch


class BatchedRules:
    """Cell codes int8 [B, N], player cell [B], and the observation's pixels uint8 [B, N, 3]."""

    player_rgb: np.ndarray  # uint8 [3], set by each variant
    empty_rgb: np.ndarray  # uint8 [3], the colour of a walkable empty tile

    def __init__(self, num_envs: int, cells: int) -> None:
        self.cells = np.zeros((num_envs, cells), dtype=np.int8)  # [B, N] codes
        self.pos = np.zeros(num_envs, dtype=np.int64)  # [B]
        self.bind(np.zeros((num_envs, cells, 3), dtype=np.uint8), np.zeros((num_envs, 1, 3), dtype=np.uint8))

    def bind(self, flat: np.ndarray, palette: np.ndarray) -> None:
        """Share the env's observation view uint8 [B, N, 3] and palettes uint8 [B, N_CODES, 3]."""
        self.flat, self.palette = flat, palette

    def encode(self, batch: LevelBatch) -> dict[str, np.ndarray]:
        """The start state of k new levels: attribute name -> values [k, ...] (cell codes, player cell, pixels
        with the player drawn, palette); subclasses add their tables."""
        cells = batch.cells()  # [k, N]
        rows = np.arange(len(batch))
        pixels = batch.palette[rows[:, None], cells]  # [k, N, 3]
        pixels[rows, batch.player] = self.player_rgb
        return {"cells": cells, "pos": batch.player, "flat": pixels, "palette": batch.palette}

    def load(self, boards: np.ndarray, state: dict[str, np.ndarray]) -> None:
        """Boards ``boards`` (int [k]) start the levels ``state`` (from :meth:`encode`, rows in board order)."""
        for name, values in state.items():
            getattr(self, name)[boards] = values

    @staticmethod
    def outcomes(num_envs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Zeroed rewards float64 [B], terminated bool [B] and won bool [B], for a step kernel to fill."""
        return (np.zeros(num_envs, dtype=np.float64), np.zeros(num_envs, dtype=np.bool_),
                np.zeros(num_envs, dtype=np.bool_))
