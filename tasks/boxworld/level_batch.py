"""Many levels as arrays: what the batched generators produce and the batched envs load.

Each of the k levels has up to M boxes, stored column-wise (box m of level i is column m of row i):
``content`` (colour of the content tile, -1 for an unused column), ``lock`` (colour of the lock tile at
``anchor + 1``, -1 for a loose key), ``anchor`` (flat index of the content tile) and ``distractor``. Box 0 may be
two rows high (bridge BoxWorld's two-lock gem box, paper §3.2): then ``lower_lock[i] >= 0`` is the colour of its
second lock, one row below the first, next to a second gem tile. ``LevelBatch.level(i)`` gives level i as a
:class:`~tasks.boxworld.level.Level` (for the single envs, the solver and tests).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np

from tasks.boxworld.level import EMPTY, KEY0, LOCK0, WALL, Box, Level

NONE = -1


@lru_cache(maxsize=16)
def puzzle_types(shape: tuple[int, ...]) -> np.ndarray:
    """object array of ``shape`` whose entry (a, b, ...) is the string "a-b-...": puzzle types by lookup."""
    table = np.empty(shape, dtype=object)
    for index in np.ndindex(shape):
        table[index] = "-".join(map(str, index))
    table.setflags(write=False)
    return table


@dataclass(frozen=True, eq=False)
class LevelBatch:
    """k levels of one variant (see the module docstring); field shapes in the comments."""

    rules: str  # "classic" or "bridge", as Level.rules
    height: int
    width: int
    board: tuple[int, int, int, int]  # walkable rectangle (x0, y0, x1, y1), inclusive
    content: np.ndarray  # int64 [k, M]
    lock: np.ndarray  # int64 [k, M]
    anchor: np.ndarray  # int64 [k, M]
    distractor: np.ndarray  # bool [k, M]
    lower_lock: np.ndarray  # int64 [k]
    player: np.ndarray  # int64 [k] flat index of the player's start
    solution_length: np.ndarray  # int64 [k]
    colours: np.ndarray  # uint8 [k, N_COLOURS, 3]
    palette: np.ndarray  # uint8 [k, N_CODES, 3]
    info: dict[str, np.ndarray]  # each [k]; puzzle_type is an object array of str

    def __len__(self) -> int:
        return len(self.player)

    def cells(self) -> np.ndarray:
        """int8 [k, height * width] cell codes (as ``level.layout`` for each level)."""
        x0, y0, x1, y1 = self.board
        grid = np.full((self.height, self.width), WALL, dtype=np.int8)
        grid[y0 : y1 + 1, x0 : x1 + 1] = EMPTY
        cells = np.tile(grid.reshape(-1), (len(self), 1))  # [k, N]
        rows, cols = np.nonzero(self.content >= 0)
        at = self.anchor[rows, cols]
        cells[rows, at] = KEY0 + self.content[rows, cols]
        locked = self.lock[rows, cols] >= 0
        cells[rows[locked], at[locked] + 1] = LOCK0 + self.lock[rows, cols][locked]
        tall = np.flatnonzero(self.lower_lock >= 0)
        below = self.anchor[tall, 0] + self.width
        cells[tall, below] = KEY0 + self.content[tall, 0]
        cells[tall, below + 1] = LOCK0 + self.lower_lock[tall]
        return cells

    def level(self, i: int) -> Level:
        """Level i as a :class:`Level` (Python objects; for one level at a time, not for the hot path)."""
        w = self.width

        def xy(index: int) -> tuple[int, int]:
            return index % w, index // w

        boxes = []
        for m in np.flatnonzero(self.content[i] >= 0):
            c, lock, at = int(self.content[i, m]), int(self.lock[i, m]), int(self.anchor[i, m])
            if lock < 0:
                boxes.append(Box((c,), (xy(at),)))
            elif m == 0 and self.lower_lock[i] >= 0:
                boxes.append(Box((c, c), (xy(at), xy(at + w)), (lock, int(self.lower_lock[i])),
                                 (xy(at + 1), xy(at + w + 1))))
            else:
                boxes.append(Box((c,), (xy(at),), (lock,), (xy(at + 1),), bool(self.distractor[i, m])))
        cells = _frozen(self.select(np.array([i])).cells()[0])
        info: dict[str, Any] = {key: values[i].item() if key != "puzzle_type" else str(values[i])
                                for key, values in self.info.items()}
        return Level(
            rules=self.rules,
            height=self.height,
            width=w,
            board=self.board,
            player=xy(int(self.player[i])),
            boxes=tuple(boxes),
            solution_length=int(self.solution_length[i]),
            colours=_frozen(self.colours[i]),
            palette=_frozen(self.palette[i]),
            cells=cells,
            info=info,
        )

    def select(self, rows: np.ndarray) -> LevelBatch:
        """The levels ``rows`` (int array) as a new batch."""
        arrays = {name: getattr(self, name)[rows] for name in _ROW_ARRAYS}
        return replace(self, info={key: values[rows] for key, values in self.info.items()}, **arrays)


_ROW_ARRAYS = ("content", "lock", "anchor", "distractor", "lower_lock", "player", "solution_length", "colours",
               "palette")


def _frozen(array: np.ndarray) -> np.ndarray:
    array = array.copy()
    array.setflags(write=False)
    return array
