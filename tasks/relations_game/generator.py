"""A seeded, vectorised generator for the Relations Game (Shanahan et al., ICML 2020, "PrediNet").

No generator was released; this one is written from the paper and fitted to the four released mini
test sets (``mini_between_{hexos,stripes}``, ``mini_3task_col_patts_{hexos,stripes}``, 5,000 images
each). A scene is first described as the object id at each of the 9 grid cells (:class:`Scenes`), then
rendered (:func:`render`). Objects and their sampling are in :mod:`tasks.relations_game.shapes`.

Image: 36x36x3 uint8, black; a 3x3 grid of 12-px cells, the object in rows/cols 1..9 of its cell.

Relations between two objects: *identical* (same shape, orientation, place in the block grid and
colour), *same shape* (different colour), *same colour* (different shape), *different* (both differ).
Wherever a task needs two objects to differ, the kind of difference is drawn uniformly from the
kinds the object set allows, so "tricky" pairs (same shape or same colour) are as frequent as pairs
differing in both, as the paper requires. The released hexomino files show exactly this (thirds).
Stripes objects all have one shape (the square), so their only kind is "same shape, different
colouring", i.e. a uniformly random different object; the released stripes files show exactly that.

Tasks (label 1 iff ...; binary labels are exactly 50/50, colour_shape exactly 25% each):

* ``same``: 2 objects in 2 random cells; 1 iff they are identical.
* ``between``: 3 objects; 1 iff they lie on a line (row, column or diagonal) and the two outer ones are
  identical. The middle one is a random object and may occasionally be identical too (the released
  files have 3 such positives in 10,000 images, so "a different middle" is not required). Lines are
  drawn uniformly from the 8 lines with the middle row counted twice, as in the released files (the
  middle row is twice as frequent as any other line in positives and negatives alike). Negatives:
  one category per difference kind (outer pair differs in that way, objects on a line) plus one
  "random" category (three random objects in three uniformly random cells, not a positive), all
  equally likely. The random category falls on a line 8/84 of the time, so negatives lie on a line
  with probability 3/4 + 1/4 * 8/84 = 0.77 for the polyomino sets and 1/2 + 1/2 * 8/84 = 0.55 for
  stripes; the released files have 0.78 (hexominoes) and 0.54 (stripes).
* ``occurs``: one object in a random cell of the top row, three in the bottom row; 1 iff the top
  object is identical to one of the bottom ones. Positives: one copy at a random place and two objects
  different from the top one; negatives: three objects different from the top one.
* ``xoccurs``: layout of ``occurs``; 1 iff the top object occurs in the bottom row and the other two
  bottom objects are different (paper). "Different" is ambiguous (from the top object or from each
  other); we require both, i.e. 1 iff the bottom row holds three distinct objects one of which is the
  top object. Negatives: half without the top object (as ``occurs``), a quarter with two copies of it
  plus a different object, a quarter with one copy plus two identical other objects.
* ``colour_shape``: 2 objects in 2 random cells; 4 labels (paper's order): 0 same shape & same colour,
  1 same shape & different colour, 2 same colour & different shape, 3 both different. Not defined for
  stripes (one shape only; the paper has no stripes version): ValueError.
* ``row_<p>`` / ``col_<p>`` for p in aaa, aab, aba, abb, abc: 3 objects in one random row (left to right)
  / column (top to bottom), nothing else; 1 iff they show pattern p; negatives show one of the other
  four patterns uniformly. This is the layout of the released ``3task_col_patts`` files (task ids 0,
  1, 2 = col_aba, col_aab, col_abb). In a pattern, B differs from A, and C differs from A (kind drawn
  independently) and from B.
* ``match_rows`` (Fig. 2d; the paper does not define it in words): the most plausible reading, top and
  bottom rows each hold 3 objects (middle row empty), 1 iff both rows show the same one of the five
  patterns. Pattern of the top row uniform; negatives' bottom pattern uniform among the other four;
  the rows' objects are drawn independently.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tasks.relations_game.shapes import OBJECT_PX, OBJECT_SETS, ObjectTable, object_table

__all__ = [
    "GENERATOR_VERSION", "OBJECT_SETS", "PATTERNS", "TASKS", "Scenes", "can_draw", "generate", "generate_scenes",
    "object_table", "render",
]

# Bump when the generated data changes for a given seed: cached data sets are keyed by it.
GENERATOR_VERSION = 1

PATTERNS: tuple[str, ...] = ("aaa", "aab", "aba", "abb", "abc")
_PATTERN_SLOTS = np.array([[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 1, 1], [0, 1, 2]])  # [5, 3] index into (A, B, C)

TASKS: dict[str, int] = {
    "same": 2,
    "between": 2,
    "occurs": 2,
    "xoccurs": 2,
    "colour_shape": 4,
    **{f"row_{p}": 2 for p in PATTERNS},
    **{f"col_{p}": 2 for p in PATTERNS},
    "match_rows": 2,
}

# Relation kinds between two objects (also the colour_shape labels).
IDENTICAL, SAME_SHAPE, SAME_COLOUR, DIFFERENT = 0, 1, 2, 3

# The 8 lines of the 3x3 grid, cells row-major; the middle cell of a line is its middle entry and,
# in every line, also the median cell index.
LINES = np.array([[0, 1, 2], [3, 4, 5], [6, 7, 8], [0, 3, 6], [1, 4, 7], [2, 5, 8], [0, 4, 8], [2, 4, 6]])
_LINE_DRAW = np.concatenate([LINES, LINES[1:2]])  # middle row twice, as in the released files
_LINE_CODES = (1 << LINES).sum(axis=1)  # bit set of each line's cells

GRID_CELLS = 9
CELL_PX = 12
IMAGE_PX = 36


@dataclass
class Scenes:
    """A batch of n scenes."""

    cells: np.ndarray  # int64 [n, 9]: object id at each grid cell (row-major), -1 empty
    labels: np.ndarray  # int64 [n]


class _Sampler:
    """Vectorised object sampling from one object table."""

    def __init__(self, table: ObjectTable, rng: np.random.Generator) -> None:
        self.table = table
        self.rng = rng
        self.n_colourings = table.n_colourings
        self.cdf = np.cumsum(table.shape_probs)
        kinds = []
        if table.n_colourings > 1:
            kinds.append(SAME_SHAPE)
        if table.n_shapes > 1:
            kinds.append(SAME_COLOUR)
        if table.n_shapes > 1 and table.n_colourings > 1:
            kinds.append(DIFFERENT)
        self.kinds = np.array(kinds)  # the ways two objects can differ in this set

    def _shapes(self, size: int | tuple[int, ...]) -> np.ndarray:
        idx = np.searchsorted(self.cdf, self.rng.random(size) * self.cdf[-1], side="right")
        return np.minimum(idx, len(self.cdf) - 1)

    def random(self, size: int | tuple[int, ...]) -> np.ndarray:
        """Random objects: shape by its probability, colouring uniform."""
        return self._shapes(size) * self.n_colourings + self.rng.integers(self.n_colourings, size=size)

    def related(self, ref: np.ndarray, kind: np.ndarray) -> np.ndarray:
        """Objects standing in relation ``kind`` [n] to ``ref`` [n]."""
        shape, colour = np.divmod(ref, self.n_colourings)
        new_shape = shape.copy()
        todo = np.flatnonzero((kind == SAME_COLOUR) | (kind == DIFFERENT))
        while todo.size:  # rejection: a shape drawn by its probability, other than the reference's
            new_shape[todo] = self._shapes(todo.size)
            todo = todo[new_shape[todo] == shape[todo]]
        recolour = (kind == SAME_SHAPE) | (kind == DIFFERENT)
        shift = self.rng.integers(1, max(self.n_colourings, 2), size=ref.shape)
        new_colour = np.where(recolour, (colour + shift) % self.n_colourings, colour)
        return new_shape * self.n_colourings + new_colour

    def different(self, ref: np.ndarray, avoid: np.ndarray | None = None) -> np.ndarray:
        """Objects differing from ``ref`` [n] in a uniformly drawn kind, and from ``avoid`` [n] if given."""
        out = self.related(ref, self.kinds[self.rng.integers(len(self.kinds), size=ref.shape)])
        if avoid is not None:
            todo = np.flatnonzero(out == avoid)
            while todo.size:
                out[todo] = self.related(ref[todo], self.kinds[self.rng.integers(len(self.kinds), size=todo.size)])
                todo = todo[out[todo] == avoid[todo]]
        return out

    def pattern(self, pattern: np.ndarray) -> np.ndarray:
        """int64 [n, 3]: three objects showing pattern index ``pattern`` [n] (into PATTERNS)."""
        a = self.random(len(pattern))
        b = self.different(a)
        c = self.different(a, avoid=b)
        abc = np.stack([a, b, c], axis=1)
        return np.take_along_axis(abc, _PATTERN_SLOTS[pattern], axis=1)


def _balanced_labels(n: int, n_classes: int, rng: np.random.Generator) -> np.ndarray:
    return rng.permutation(np.arange(n, dtype=np.int64) % n_classes)


def _random_cells(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """int64 [n, k]: k distinct uniformly random cells per scene, sorted."""
    return np.sort(np.argsort(rng.random((n, GRID_CELLS)), axis=1)[:, :k], axis=1)


def _other(value: np.ndarray, n_values: int, rng: np.random.Generator) -> np.ndarray:
    """Uniformly random values in range(n_values) other than ``value``."""
    return (value + rng.integers(1, n_values, size=value.shape)) % n_values


def _place(n: int, where: np.ndarray, objects: np.ndarray) -> np.ndarray:
    cells = np.full((n, GRID_CELLS), -1, dtype=np.int64)
    cells[np.arange(n)[:, None], where] = objects
    return cells


def _pair(labels: np.ndarray, kind: np.ndarray, s: _Sampler, rng: np.random.Generator) -> np.ndarray:
    n = len(labels)
    a = s.random(n)
    where = _random_cells(n, 2, rng)
    where = np.where((rng.random(n) < 0.5)[:, None], where[:, ::-1], where)  # which object comes first
    return _place(n, where, np.stack([a, s.related(a, kind)], axis=1))


def _same(labels: np.ndarray, s: _Sampler, rng: np.random.Generator) -> np.ndarray:
    kind = np.where(labels == 1, IDENTICAL, s.kinds[rng.integers(len(s.kinds), size=len(labels))])
    return _pair(labels, kind, s, rng)


def can_draw(task: str, object_set: str) -> bool:
    """Whether ``object_set`` has the objects ``task`` needs: 'colour_shape' needs two shapes, which the
    stripes set (one shape in many colourings) lacks; the paper reports that task on hexominoes only."""
    return task != "colour_shape" or object_table(object_set).n_shapes >= 2


def _colour_shape(labels: np.ndarray, s: _Sampler, rng: np.random.Generator) -> np.ndarray:
    return _pair(labels, labels, s, rng)


def _between(labels: np.ndarray, s: _Sampler, rng: np.random.Generator) -> np.ndarray:
    n = len(labels)
    n_kinds = len(s.kinds)
    category = rng.integers(n_kinds + 1, size=n)  # for negatives: a difference kind, or n_kinds = random
    on_line = (labels == 1) | (category < n_kinds)
    kind = np.where(labels == 1, IDENTICAL, s.kinds[np.minimum(category, n_kinds - 1)])
    ends = s.random(n)
    line_objects = np.stack([ends, s.random(n), s.related(ends, kind)], axis=1)  # [n, 3] first, middle, last
    line = _LINE_DRAW[rng.integers(len(_LINE_DRAW), size=n)]
    flip = rng.random(n) < 0.5
    line = np.where(flip[:, None], line[:, ::-1], line)
    free = _random_cells(n, 3, rng)  # sorted: if it is a line, its middle is free[:, 1]
    free_objects = s.random((n, 3))
    accidental = np.isin((1 << free).sum(axis=1), _LINE_CODES) & (free_objects[:, 0] == free_objects[:, 2])
    free_objects[accidental, 2] = s.different(free_objects[accidental, 0])
    where = np.where(on_line[:, None], line, free)
    return _place(n, where, np.where(on_line[:, None], line_objects, free_objects))


def _occurs_layout(n: int, rng: np.random.Generator) -> np.ndarray:
    """int64 [n, 4]: a random top-row cell, then the bottom row's cells 6, 7, 8."""
    return np.concatenate([rng.integers(3, size=(n, 1)), np.broadcast_to([6, 7, 8], (n, 3))], axis=1)


def _occurs(labels: np.ndarray, s: _Sampler, rng: np.random.Generator) -> np.ndarray:
    n = len(labels)
    top = s.random(n)
    bottom = np.stack([s.different(top) for _ in range(3)], axis=1)  # [n, 3]
    slot = rng.integers(3, size=n)
    pos = np.flatnonzero(labels == 1)
    bottom[pos, slot[pos]] = top[pos]
    return _place(n, _occurs_layout(n, rng), np.concatenate([top[:, None], bottom], axis=1))


def _xoccurs(labels: np.ndarray, s: _Sampler, rng: np.random.Generator) -> np.ndarray:
    n = len(labels)
    top = s.random(n)
    other1 = s.different(top)
    other2 = s.different(top, avoid=other1)
    # kind of scene: 0 positive (top, o1, o2); negatives 1 absent, 2 two copies, 3 one copy + pair
    neg_kind = np.array([1, 1, 2, 3])[rng.integers(4, size=n)]
    kind = np.where(labels == 1, 0, neg_kind)
    third = np.select([kind == 1, kind == 2, kind == 3], [s.different(top), top, other1], default=other2)
    first = np.where(kind == 1, other2, top)
    row = np.stack([first, other1, third], axis=1)  # [n, 3], then shuffled
    row = np.take_along_axis(row, np.argsort(rng.random((n, 3)), axis=1), axis=1)
    return _place(n, _occurs_layout(n, rng), np.concatenate([top[:, None], row], axis=1))


def _line_pattern(task: str) -> tuple[str, int]:
    axis, pattern = task.split("_")
    return axis, PATTERNS.index(pattern)


def _row_col(labels: np.ndarray, s: _Sampler, rng: np.random.Generator, axis: str, target: int) -> np.ndarray:
    n = len(labels)
    pattern = np.where(labels == 1, target, _other(np.full(n, target), len(PATTERNS), rng))
    k = rng.integers(3, size=(n, 1))
    where = 3 * k + np.arange(3) if axis == "row" else k + 3 * np.arange(3)
    return _place(n, where, s.pattern(pattern))


def _match_rows(labels: np.ndarray, s: _Sampler, rng: np.random.Generator) -> np.ndarray:
    n = len(labels)
    top = rng.integers(len(PATTERNS), size=n)
    bottom = np.where(labels == 1, top, _other(top, len(PATTERNS), rng))
    objects = np.concatenate([s.pattern(top), s.pattern(bottom)], axis=1)
    return _place(n, np.broadcast_to([0, 1, 2, 6, 7, 8], (n, 6)), objects)


def _check(task: str, object_set: str) -> None:
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; valid tasks: {', '.join(TASKS)}")
    if object_set not in OBJECT_SETS:
        raise ValueError(f"unknown object set {object_set!r}; valid object sets: {', '.join(OBJECT_SETS)}")
    if not can_draw(task, object_set):
        raise ValueError(f"task {task!r} needs several shapes; object set {object_set!r} has one")


def generate_scenes(task: str, n: int, object_set: str, rng: np.random.Generator) -> Scenes:
    """Describe ``n`` scenes of ``task`` with objects from ``object_set``, labels balanced."""
    _check(task, object_set)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    s = _Sampler(object_table(object_set), rng)
    labels = _balanced_labels(n, TASKS[task], rng)
    builders = {"same": _same, "colour_shape": _colour_shape, "between": _between, "occurs": _occurs,
                "xoccurs": _xoccurs, "match_rows": _match_rows}
    if task in builders:
        cells = builders[task](labels, s, rng)
    else:  # row_<p> / col_<p>
        cells = _row_col(labels, s, rng, *_line_pattern(task))
    return Scenes(cells=cells, labels=labels)


def render(scenes: Scenes, object_set: str, chunk: int = 8192) -> np.ndarray:
    """uint8 [n, 36, 36, 3] images of ``scenes`` (objects of ``object_set``)."""
    table = object_table(object_set)
    sprites = table.sprites()  # [K + 1, 9, 9, 3], last = empty
    cells = np.asarray(scenes.cells)
    if cells.size and (cells.min() < -1 or cells.max() >= table.n_objects):
        raise ValueError(f"object ids must be in [-1, {table.n_objects}) for object set {object_set!r}")
    n = len(cells)
    images = np.zeros((n, 3, CELL_PX, 3, CELL_PX, 3), dtype=np.uint8)  # [n, grid row, y, grid col, x, rgb]
    for start in range(0, n, chunk):
        ids = np.where(cells[start : start + chunk] < 0, table.n_objects, cells[start : start + chunk])
        pix = sprites[ids].reshape(-1, 3, 3, OBJECT_PX, OBJECT_PX, 3)  # [b, grid row, grid col, y, x, rgb]
        images[start : start + chunk, :, 1 : 1 + OBJECT_PX, :, 1 : 1 + OBJECT_PX] = pix.transpose(0, 1, 3, 2, 4, 5)
    return images.reshape(n, IMAGE_PX, IMAGE_PX, 3)


def generate(task: str, n: int, object_set: str, seed: int) -> dict[str, np.ndarray]:
    """``n`` images of ``task``: {"images": uint8 [n, 36, 36, 3], "labels": int64 [n], "cells": int64 [n, 9]}."""
    _check(task, object_set)
    scenes = generate_scenes(task, n, object_set, np.random.default_rng(seed))
    return {"images": render(scenes, object_set), "labels": scenes.labels, "cells": scenes.cells}
