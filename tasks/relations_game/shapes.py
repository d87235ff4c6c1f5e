"""The three Relations Game object sets: pentominoes, hexominoes and stripes.

An object is drawn in a 9x9-pixel area as a 3x3 grid of 3x3-pixel *blocks*. It is the pair
(shape, colouring): the shape is a boolean 3x3 block mask, the colouring gives each block its RGB
colour (see :mod:`tasks.relations_game.palette`). Two objects are identical iff both match, which is
the paper's "same shape, orientation and colour" (a shape here includes its place inside the 3x3 block
grid; see below).

* ``pentominoes`` (training set): every connected 5-block shape inside the 3x3 block grid. These are 8
  free pentominoes (F, P, T, U, V, W, X, Z; I, L, N, Y do not fit) with **37** distinct rotations and
  reflections, as the paper says, but P and U (2x3 bounding boxes) fit in two places each, so there
  are **49** masks. Uniformly coloured, 25 colours.
* ``hexominoes`` (held out): every connected 6-block shape inside 3x3: 8 free hexominoes with **46**
  rotations/reflections (paper: 46), and **48** masks because the 2x3 rectangle (2 orientations) fits
  in two places each. The released hexomino files contain exactly these 48 masks. Uniformly
  coloured, 25 colours.
* ``stripes`` (held out): a single shape (the full 3x3 block square) whose colouring has three
  vertical bands, colour A | B | A. The released stripes files contain all 625 ordered pairs (A, B) of
  the 25 colours, including A == B (a plain square, about 1/25 of the objects).

Shape sampling follows the released hexomino files, whose mask frequencies (about 2:1 between masks)
are fitted exactly by: pick one of the free polyominoes uniformly, apply one of the 8 rotations /
reflections uniformly, then one of the translations that keep it inside the 3x3 grid uniformly. So a
mask's probability is 1/8 (free shape) x 1/(distinct orientations of that shape) x 1/(its
translations). Colours (or stripe colour pairs) are uniform and independent of the shape.

Colours: the paper says no training colour occurs in the held-out sets, but both released held-out
sets use all 25 palette colours (and the palette is exactly 25 colours), so the training pentominoes
cannot have used colours disjoint from them within this palette. We follow the data and use the same
25 colours for every set; shapes are disjoint (5 vs 6 blocks vs the full square).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import numpy as np

from tasks.relations_game.palette import PALETTE

GRID = 3  # the object is a GRID x GRID grid of blocks
BLOCK = 3  # a block is BLOCK x BLOCK pixels
OBJECT_PX = GRID * BLOCK  # 9
OBJECT_SETS: tuple[str, ...] = ("pentominoes", "hexominoes", "stripes")

Cells = frozenset[tuple[int, int]]


def _connected(cells: Cells) -> bool:
    """4-connectivity of a set of (row, col) blocks."""
    start = next(iter(cells))
    seen, stack = {start}, [start]
    while stack:
        r, c = stack.pop()
        for nb in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
            if nb in cells and nb not in seen:
                seen.add(nb)
                stack.append(nb)
    return len(seen) == len(cells)


def _normalise(cells: Cells) -> Cells:
    """Translate so the bounding box starts at (0, 0)."""
    r0 = min(r for r, _ in cells)
    c0 = min(c for _, c in cells)
    return frozenset((r - r0, c - c0) for r, c in cells)


def _orientations(cells: Cells) -> list[Cells]:
    """The 8 images of a shape under rotations and reflections (with repeats), normalised."""
    out = []
    for reflect in (False, True):
        cur = frozenset((r, -c) for r, c in cells) if reflect else cells
        for _ in range(4):
            cur = frozenset((c, -r) for r, c in cur)  # rotate by 90 degrees
            out.append(_normalise(cur))
    return out


def _translations(cells: Cells) -> list[Cells]:
    """All placements of a normalised shape inside the GRID x GRID block grid."""
    h = max(r for r, _ in cells) + 1
    w = max(c for _, c in cells) + 1
    return [frozenset((r + dr, c + dc) for r, c in cells) for dr in range(GRID - h + 1) for dc in range(GRID - w + 1)]


def _free_key(cells: Cells) -> tuple[tuple[int, int], ...]:
    return min(tuple(sorted(o)) for o in _orientations(cells))


@dataclass(frozen=True)
class PolyominoSet:
    """All placements of the n-block polyominoes fitting in the 3x3 block grid."""

    masks: np.ndarray  # bool [S, 3, 3], sorted by their row-major bit pattern
    probs: np.ndarray  # float64 [S], sampling probability of each mask (sums to 1)
    free_id: np.ndarray  # int64 [S], index of the free polyomino (up to rotation/reflection)
    fixed_id: np.ndarray  # int64 [S], index of the fixed polyomino (up to translation)

    @property
    def n_free(self) -> int:
        return int(self.free_id.max()) + 1

    @property
    def n_fixed(self) -> int:
        return int(self.fixed_id.max()) + 1


@functools.cache
def polyominoes(n_blocks: int) -> PolyominoSet:
    """Enumerate the connected ``n_blocks``-block shapes in the 3x3 grid with their probabilities."""
    grid = [(r, c) for r in range(GRID) for c in range(GRID)]
    placements = [frozenset(s) for s in itertools.combinations(grid, n_blocks)]
    placements = [p for p in placements if _connected(p)]
    if not placements:
        raise ValueError(f"no connected {n_blocks}-block shape fits in a {GRID}x{GRID} grid")
    free_keys = sorted({_free_key(p) for p in placements})
    fixed_keys = sorted({tuple(sorted(_normalise(p))) for p in placements})
    prob: dict[Cells, float] = dict.fromkeys(placements, 0.0)
    for key in free_keys:
        for orient in _orientations(frozenset(key)):
            spots = _translations(orient)
            for spot in spots:
                prob[spot] += 1.0 / (len(free_keys) * 8 * len(spots))

    def bits(p: Cells) -> int:
        return sum(1 << (GRID * r + c) for r, c in p)

    placements.sort(key=bits)
    masks = np.zeros((len(placements), GRID, GRID), dtype=bool)
    for i, p in enumerate(placements):
        for r, c in p:
            masks[i, r, c] = True
    probs = np.array([prob[p] for p in placements])
    free_id = np.array([free_keys.index(_free_key(p)) for p in placements], dtype=np.int64)
    fixed_id = np.array([fixed_keys.index(tuple(sorted(_normalise(p)))) for p in placements], dtype=np.int64)
    for arr in (masks, probs, free_id, fixed_id):
        arr.setflags(write=False)
    return PolyominoSet(masks=masks, probs=probs, free_id=free_id, fixed_id=fixed_id)


@dataclass(frozen=True)
class ObjectTable:
    """The objects of one set. Object id = ``shape * n_colourings + colouring``.

    For the polyomino sets a colouring is one palette colour on every block; for stripes it is the
    pair (A, B) with id ``A * 25 + B``, drawn as block columns A | B | A.
    """

    name: str
    masks: np.ndarray  # bool [S, 3, 3] block mask of each shape
    shape_probs: np.ndarray  # float64 [S] sampling probability of each shape
    colourings: np.ndarray  # uint8 [C, 3, 3, 3] RGB colour of each block (row, col, channel)

    @property
    def n_shapes(self) -> int:
        return len(self.masks)

    @property
    def n_colourings(self) -> int:
        return len(self.colourings)

    @property
    def n_objects(self) -> int:
        return self.n_shapes * self.n_colourings

    def shape_of(self, ids: np.ndarray) -> np.ndarray:
        """Shape index of object ids (any shape of int array)."""
        return np.asarray(ids) // self.n_colourings

    def colouring_of(self, ids: np.ndarray) -> np.ndarray:
        """Colouring index of object ids."""
        return np.asarray(ids) % self.n_colourings

    def sprites(self) -> np.ndarray:
        """uint8 [K + 1, 9, 9, 3]: the image of every object; the extra last one is empty (black)."""
        blocks = np.where(self.masks[:, None, :, :, None], self.colourings[None], 0)  # [S, C, 3, 3, 3]
        blocks = blocks.reshape(self.n_objects, GRID, GRID, 3).astype(np.uint8)
        pixels = blocks.repeat(BLOCK, axis=1).repeat(BLOCK, axis=2)  # [K, 9, 9, 3]
        return np.concatenate([pixels, np.zeros((1, OBJECT_PX, OBJECT_PX, 3), np.uint8)])


def _uniform_colourings() -> np.ndarray:
    return np.broadcast_to(PALETTE[:, None, None, :], (len(PALETTE), GRID, GRID, 3)).copy()  # [25, 3, 3, 3]


def _stripe_colourings() -> np.ndarray:
    n = len(PALETTE)
    outer, inner = np.divmod(np.arange(n * n), n)  # pair id = outer * 25 + inner
    cols = np.stack([PALETTE[outer], PALETTE[inner], PALETTE[outer]], axis=1)  # [625, 3 (block col), 3]
    return np.broadcast_to(cols[:, None], (n * n, GRID, GRID, 3)).copy()  # [625, 3, 3, 3]


@functools.cache
def object_table(object_set: str) -> ObjectTable:
    """The :class:`ObjectTable` of ``pentominoes``, ``hexominoes`` or ``stripes``."""
    if object_set in ("pentominoes", "hexominoes"):
        poly = polyominoes(5 if object_set == "pentominoes" else 6)
        masks, probs, colourings = poly.masks, poly.probs, _uniform_colourings()
    elif object_set == "stripes":
        masks, probs, colourings = np.ones((1, GRID, GRID), bool), np.ones(1), _stripe_colourings()
    else:
        raise ValueError(f"unknown object set {object_set!r}; valid object sets: {', '.join(OBJECT_SETS)}")
    for arr in (masks, probs, colourings):
        arr.setflags(write=False)
    return ObjectTable(name=object_set, masks=masks, shape_probs=probs, colourings=colourings)
