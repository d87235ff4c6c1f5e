"""The 25-colour palette of the Relations Game images.

Every object pixel in the released mini test sets (hexominoes and stripes alike) has each RGB channel
in {64, 144, 192}; of the 27 combinations the two greys (64, 64, 64) and (192, 192, 192) never occur,
which leaves 25 colours, all of which are used by both held-out sets. The background is black.
"""

from __future__ import annotations

import itertools

import numpy as np

LEVELS: tuple[int, ...] = (64, 144, 192)
EXCLUDED: tuple[tuple[int, int, int], ...] = ((64, 64, 64), (192, 192, 192))


def _build_palette() -> np.ndarray:
    rgb = [c for c in itertools.product(LEVELS, repeat=3) if c not in EXCLUDED]
    palette = np.array(rgb, dtype=np.uint8)  # [25, 3], lexicographic (r, g, b) order
    palette.setflags(write=False)
    return palette


PALETTE: np.ndarray = _build_palette()  # uint8 [25, 3]
N_COLOURS: int = len(PALETTE)
