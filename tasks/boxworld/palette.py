"""Colour palettes of the two BoxWorld variants (RGB, uint8).

* Original BoxWorld (pycolab ``box_world``: google-deepmind/pycolab, pycolab/examples/research/box_world/
  box_world.py): 20 key/lock colours, a white gem, a grey player, a light background and a black border.
  pycolab's 20 colours are the hues 0, 18, ..., 342 degrees at saturation 0.5 and value 0.7 on its 0-999 scale;
  we compute the same ring with ``colorsys`` and round to 0-255. The player (500/999) and background (800/999)
  greys are rescaled the same way.
* Bridge BoxWorld (gym wrapper ``BoxWorld`` in dmurfet/2simplicialtransformer, notebooks/training.ipynb; paper §5
  footnote): 20 hues h = 0, 18, ..., 342 at saturation 0.7 and value 0.8, rounded to 0-255 and shuffled per
  episode, with the white gem prepended at index 0; empty tile (199, 199, 199), empty inventory slot (10, 10, 10),
  player (127, 127, 127).
"""

from __future__ import annotations

import colorsys

import numpy as np

N_HUES: int = 20  # key/lock colours of both variants


def hue_ring(saturation: float, value: float) -> np.ndarray:
    """The 20 colours with hues 18k degrees (k = 0..19) at the given saturation and value: uint8 [20, 3]."""
    rgb = [colorsys.hsv_to_rgb(18 * k / 360, saturation, value) for k in range(N_HUES)]
    ring = np.array([[int(round(c * 255.0)) for c in colour] for colour in rgb], dtype=np.uint8)  # [20, 3]
    ring.setflags(write=False)
    return ring


def _grey(level: int) -> np.ndarray:
    colour = np.array([level, level, level], dtype=np.uint8)  # [3]
    colour.setflags(write=False)
    return colour


GEM_RGB: np.ndarray = _grey(255)

# Original BoxWorld (pycolab scale 0-999 rescaled to 0-255).
CLASSIC_HUES: np.ndarray = hue_ring(0.5, 0.7)  # [20, 3]
CLASSIC_PLAYER: np.ndarray = _grey(round(500 * 255 / 999))  # 128
CLASSIC_BACKGROUND: np.ndarray = _grey(round(800 * 255 / 999))  # 204
CLASSIC_BORDER: np.ndarray = _grey(0)

# Bridge BoxWorld (values of the paper's training notebook).
BRIDGE_HUES: np.ndarray = hue_ring(0.7, 0.8)  # [20, 3]
BRIDGE_PLAYER: np.ndarray = _grey(127)
BRIDGE_EMPTY: np.ndarray = _grey(199)
BRIDGE_INVENTORY_EMPTY: np.ndarray = _grey(10)
