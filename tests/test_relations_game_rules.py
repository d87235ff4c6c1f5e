"""Relations Game (Shanahan et al., ICML 2020, "An Explicitly Relational Neural Network Architecture", §3): rules
of the generator the other tests cannot reach with the real object sets.

* ``between``: label 1 iff three objects lie on a line with identical outer objects. A negative of the "random"
  category (three random objects in random cells) that happens to be such a scene is redrawn; with 49 x 25
  pentominoes that is about one scene in 100,000, so it is checked here on a two-object set, where it is common.
* ``same`` and ``colour_shape``: the two objects' cells are random, and so is which of them is the reference the
  other was drawn from; otherwise a negative's first object (row-major) would follow the shape distribution of a
  reference and its second that of a shape drawn to differ, which differ (the X pentomino, the likeliest shape:
  1/8 against about 0.111).
"""

from __future__ import annotations

import numpy as np

from tasks.relations_game import generator
from tasks.relations_game.generator import LINES, generate_scenes, object_table
from tasks.relations_game.shapes import ObjectTable


def test_no_between_negative_is_an_accidental_positive() -> None:
    base = object_table("stripes")
    tiny = ObjectTable(name="tiny", masks=base.masks, shape_probs=base.shape_probs, colourings=base.colourings[:2])
    rng = np.random.default_rng(0)
    cells = generator._between(np.zeros(4000, dtype=np.int64), generator._Sampler(tiny, rng), rng)  # negatives
    lines = {frozenset(line.tolist()) for line in LINES}
    for scene in cells:
        occupied = np.flatnonzero(scene >= 0)
        assert len(occupied) == 3
        assert not (frozenset(occupied.tolist()) in lines and scene[occupied[0]] == scene[occupied[2]]), scene


def test_which_object_of_a_pair_comes_first_is_random() -> None:
    table = object_table("pentominoes")
    likeliest = int(np.argmax(table.shape_probs))  # the X pentomino: one orientation, one place
    scenes = generate_scenes("same", 200_000, "pentominoes", np.random.default_rng(1))
    pairs = np.sort(np.argsort(scenes.cells < 0, axis=1, kind="stable")[:, :2], axis=1)  # [n, 2] occupied cells
    objects = np.take_along_axis(scenes.cells, pairs, axis=1)  # [n, 2] first and second object, row-major
    shapes = objects // table.n_colourings
    differ = shapes[:, 0] != shapes[:, 1]
    first, second = (shapes[differ] == likeliest).mean(axis=0)
    assert abs(first - second) < 0.007, (first, second)
