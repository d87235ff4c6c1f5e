"""The scene description shared by the generators, the envs and the solver.

A level is a list of boxes on a grid. A box is a row of tiles: its content tile(s) on the left and its lock
tile(s) immediately to the right (x+1), as in pycolab (google-deepmind/pycolab,
pycolab/examples/research/box_world/box_world.py) and the bridge reference (dmurfet/2simplicialtransformer,
env/bridge_boxworld.py, ``generatePuzzle``). A loose key is a box without locks. The gem is colour 0. The
bridge env's gem box has two content tiles stacked vertically (both gem) and two locks, one per solution path.

Envs work on a flat grid of cell codes in observation layout (row-major, ``y * width + x``):

* ``EMPTY`` (walkable), ``WALL`` (the border of the original BoxWorld, the inventory column of bridge BoxWorld),
* ``KEY0 + c``: a content tile of colour c (c = 0 is the gem), ``LOCK0 + c``: a lock tile of colour c.

``Level.palette`` maps every code to its RGB colour for that episode.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from tasks.boxworld.config import MAX_COLOUR

Cell = tuple[int, int]  # (x, y), origin top-left

GEM: int = 0  # colour index of the gem
N_COLOURS: int = MAX_COLOUR + 1  # colour indices 0..20
EMPTY: int = 0
WALL: int = 1
KEY0: int = 2
LOCK0: int = KEY0 + N_COLOURS
N_CODES: int = LOCK0 + N_COLOURS


@dataclass(frozen=True)
class Box:
    """Content tiles (colours, cells) and lock tiles (colours, cells); no locks means a loose key."""

    contents: tuple[int, ...]
    content_cells: tuple[Cell, ...]
    locks: tuple[int, ...] = ()
    lock_cells: tuple[Cell, ...] = ()
    distractor: bool = False  # opening it makes the gem unobtainable (distractor branch, backward box, bridge)


@dataclass(frozen=True, eq=False)
class Level:
    """One generated episode: geometry, boxes, colours and the precomputed cell codes.

    rules: "classic" (original BoxWorld, one held key) or "bridge" (bridge BoxWorld, inventory list).
    board: the walkable rectangle (x0, y0, x1, y1), inclusive; everything else in the grid is ``WALL``.
    cells: int8 [height * width] cell codes; palette: uint8 [N_CODES, 3]; colours: uint8 [N_COLOURS, 3].
    info: the puzzle description reported in the env's ``info`` (solution length, distractors, bridge).
    """

    rules: str
    height: int
    width: int
    board: tuple[int, int, int, int]
    player: Cell
    boxes: tuple[Box, ...]
    solution_length: int
    colours: np.ndarray
    palette: np.ndarray
    cells: np.ndarray
    info: dict[str, Any]

    def index(self, cell: Cell) -> int:
        """Flat index of an (x, y) cell."""
        return cell[1] * self.width + cell[0]

    def render(self) -> np.ndarray:
        """The board without the player, held key or inventory: uint8 [height, width, 3]."""
        return self.palette[self.cells].reshape(self.height, self.width, 3)


def layout(height: int, width: int, board: tuple[int, int, int, int], boxes: tuple[Box, ...]) -> np.ndarray:
    """Cell codes of a level: int8 [height * width]."""
    x0, y0, x1, y1 = board
    grid = np.full((height, width), WALL, dtype=np.int8)  # [H, W]
    grid[y0 : y1 + 1, x0 : x1 + 1] = EMPTY
    for box in boxes:
        for colour, (x, y) in zip(box.contents, box.content_cells, strict=True):
            grid[y, x] = KEY0 + colour
        for colour, (x, y) in zip(box.locks, box.lock_cells, strict=True):
            grid[y, x] = LOCK0 + colour
    grid.setflags(write=False)
    return grid.reshape(-1)


def code_palette(colours: np.ndarray, empty_rgb: np.ndarray, wall_rgb: np.ndarray) -> np.ndarray:
    """uint8 [N_CODES, 3]: EMPTY, WALL, then keys and locks of colours 0..20 (a key and its lock look alike)."""
    palette = code_palettes(colours[None], empty_rgb, wall_rgb)[0]
    palette.setflags(write=False)
    return palette


def code_palettes(colours: np.ndarray, empty_rgb: np.ndarray, wall_rgb: np.ndarray) -> np.ndarray:
    """uint8 [k, N_CODES, 3] from colours [k, N_COLOURS, 3]: ``code_palette`` of k levels at once."""
    palette = np.empty((len(colours), N_CODES, 3), dtype=np.uint8)
    palette[:, EMPTY] = empty_rgb
    palette[:, WALL] = wall_rgb
    palette[:, KEY0:LOCK0] = colours
    palette[:, LOCK0:] = colours
    return palette


@lru_cache(maxsize=64)
def move_table(height: int, width: int, board: tuple[int, int, int, int], deltas: tuple[Cell, ...]) -> tuple[int, ...]:
    """Target cell of each (cell, action): flat tuple [height * width * len(deltas)].

    A move leaving the walkable board keeps the player in place (the bridge reference clamps to the grid;
    pycolab's border is impassable), so a target is never a ``WALL`` cell.
    """
    x0, y0, x1, y1 = board
    table = []
    for y in range(height):
        for x in range(width):
            for dx, dy in deltas:
                tx, ty = x + dx, y + dy
                inside = x0 <= tx <= x1 and y0 <= ty <= y1
                table.append(ty * width + tx if inside else y * width + x)
    return tuple(table)
