"""What the two batched rule sets share: per-board cell codes, player cells and the pixel views they
update in place (``tasks/boxworld/vector.py`` owns the observation array and binds it here), and loading new
levels: :meth:`BatchedRules.encode` turns a :class:`LevelBatch` into per-board arrays, :meth:`BatchedRules.load`
copies them onto boards."""

from __future__ import annotations

import numpy as np

from tasks.boxworld.level_batch import LevelBatch


class BatchedRules:
    """Cell codes int8 [B, N], player cell [B], and the observation's pixels as a flat view."""

    player_rgb: np.ndarray  # uint8 [3], set by each variant
    empty_rgb: np.ndarray  # uint8 [3], the colour of a walkable empty tile

    def __init__(self, num_envs: int, cells: int) -> None:
        self.cells = np.zeros((num_envs, cells), dtype=np.int8)  # [B, N] codes
        self.pos = np.zeros(num_envs, dtype=np.int64)  # [B]
        self._base = np.arange(num_envs, dtype=np.int64) * cells  # [B] offset of each board's first cell
        self._cells1 = self.cells.reshape(-1)  # [B * N] view
        self._empty_tile = _tiles(self.empty_rgb[None, :])[0]  # one 3-byte element: a pixel in one store
        self._player_tile = _tiles(self.player_rgb[None, :])[0]
        self.bind(np.zeros((num_envs, cells, 3), dtype=np.uint8), np.zeros((num_envs, 1, 3), dtype=np.uint8))

    def bind(self, flat: np.ndarray, palette: np.ndarray) -> None:
        """Share the env's observation view uint8 [B, N, 3] and palettes uint8 [B, N_CODES, 3]."""
        self.flat, self.palette = flat, palette
        self._palette_tiles = _tiles(palette).reshape(palette.shape[:2])  # [B, N_CODES] view
        self._palette_tiles1 = self._palette_tiles.reshape(-1)  # [B * N_CODES] view, board b's codes from b * N_CODES
        self._tiles = _tiles(flat)  # [B * N] view, one 3-byte element per tile (one store per pixel)
        assert np.shares_memory(self._tiles, flat) and np.shares_memory(self._palette_tiles, palette)

    def _move_players(self, moved: np.ndarray, target: np.ndarray) -> None:
        """Boards with ``moved`` [B] step onto ``target`` [B]; repaint the players (the old tile as empty)."""
        boards = moved.nonzero()[0]  # [k] (the others' pixels stay as they are)
        base, new = self._base[boards], target[boards]  # [k], [k]
        self._tiles[base + self.pos[boards]] = self._empty_tile
        self._tiles[base + new] = self._player_tile
        self.pos[boards] = new

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


def _tiles(pixels: np.ndarray) -> np.ndarray:
    """uint8 [..., 3] pixels (contiguous rows) as a flat array of 3-byte elements [...] (a view)."""
    return pixels.reshape(-1, 3).view(np.dtype((np.void, 3))).reshape(-1)
