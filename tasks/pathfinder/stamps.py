"""Pre-rendered pieces of a Pathfinder image: paddle strokes, their occupancy masks and the marker disc.

The reference generator (drewlinsley/pathfinder, ``snakes.py``: ``draw_line_n_mask``, ``get_coords_cmf``,
``generate_dilation_struct``; ``snakes2.py``: ``draw_circle``) renders every paddle on its own: a line of
``paddle_length * aa`` pixels drawn at ``aa`` times the resolution into a small square window centred on the
paddle's start, shrunk with a Lanczos filter, and a mask made the same way from the line dilated by a disc of
radius ``margin * aa``. A paddle therefore looks the same wherever it lies; only its orientation matters. This
module draws each orientation the generator can ask for once (Pillow's ``ImageDraw`` and Lanczos resize), so
that the vectorised generator only has to paste small arrays:

* seed paddles take an integer orientation in degrees, -180..179 (360 stamps);
* extension paddles point along one of the few integer displacements from a pivot to a candidate head
  (:func:`extension_steps`), drawn from the head back towards the pivot.

Strokes and masks are shrunk as 8-bit images (values k / 255), as the reference's resize (SciPy's
``imresize``, which byte-scales its input) does.

Stamps are ``[S, S]`` float32 arrays (``S = 2 * half + 1``) whose centre pixel is the paddle's start.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw
from scipy import ndimage


@dataclass(frozen=True)
class Geometry:
    """The paddle geometry of LRA's Pathfinder-32 (google-research/long-range-arena,
    lra_benchmarks/data/pathfinder.py, ``Pathfinder32``)."""

    paddle_length: int = 2
    paddle_thickness: float = 0.5
    margin: int = 1
    aa_scale: int = 2
    marker_radius: float = 1.5

    @property
    def half(self) -> int:
        """Half the side of a paddle's window: length + ceil(thickness) + margin."""
        return self.paddle_length + int(np.ceil(self.paddle_thickness)) + self.margin


def translate(y: np.ndarray, x: np.ndarray, angle: np.ndarray, dist: float) -> tuple[np.ndarray, np.ndarray]:
    """Move integer points by ``dist`` along ``angle`` (radians, y down) and round up, as the reference does."""
    return (np.ceil(y + dist * np.sin(angle)).astype(np.int64),
            np.ceil(x + dist * np.cos(angle)).astype(np.int64))


def flip(angle: np.ndarray) -> np.ndarray:
    """The opposite direction, kept in [-pi, pi) the reference's way (add pi below 0, else subtract it)."""
    return np.where(angle < 0, angle + np.pi, angle - np.pi)


def _disc(radius: float) -> np.ndarray:
    r = int(np.floor(radius))
    y, x = np.ogrid[-r:r + 1, -r:r + 1]
    return (x * x + y * y <= radius * radius).astype(bool)  # [2r+1, 2r+1]


def _paddle(angle: float, g: Geometry) -> tuple[np.ndarray, np.ndarray]:
    """(stroke, mask), each float32 [S, S], of one paddle starting at the centre and pointing along ``angle``."""
    big = 2 * g.half * g.aa_scale + 1
    centre = g.half * g.aa_scale
    hy, hx = translate(np.array(centre), np.array(centre), np.array(angle), g.paddle_length * g.aa_scale)
    canvas = Image.new("F", (big, big), 0.0)
    ImageDraw.Draw(canvas).line([(centre, centre), (int(hx), int(hy))], fill=255.0,
                                width=int(round(g.paddle_thickness * g.aa_scale)))
    small = (2 * g.half + 1, 2 * g.half + 1)
    line = np.asarray(canvas) > 0
    # Shrunk as an 8-bit image, as the reference's byte-scaling resize does: Pillow's 8-bit Lanczos rounds and
    # clips between its two passes, which takes about a tenth off the peak of a float resize.
    line_img = Image.fromarray(line.astype(np.uint8) * 255)
    stroke = np.asarray(line_img.resize(small, Image.Resampling.LANCZOS), dtype=np.float32) / 255.0
    grown = ndimage.binary_dilation(line, structure=_disc(g.margin * g.aa_scale))
    mask_img = Image.fromarray(grown.astype(np.uint8) * 255)  # 8-bit: the resize clips to 0..255
    mask = np.asarray(mask_img.resize(small, Image.Resampling.LANCZOS), dtype=np.float32) / 255.0
    return stroke, mask


@lru_cache(maxsize=4)
def seed_stamps(g: Geometry = Geometry()) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Paddles for the 360 seed orientations (index = degrees + 180): stroke and mask float32 [360, S, S], and
    the seed's exclusion kernel bool [360, K, K] (K = 2 * (length + margin) + 1).

    The kernel is the reference's "head-centric struct": the paddle's mask drawn in a K x K window with its start
    at (K // 2 + 1, K // 2 + 1), kept where it is exactly 1. A seed may start at p only if no occupied pixel lies
    at p + (k - K // 2) for any kernel pixel k (a dilation of the occupancy by the kernel).
    """
    strokes, masks, kernels = [], [], []
    side = 2 * (g.paddle_length + g.margin) + 1
    for degrees in range(-180, 180):
        stroke, mask = _paddle(np.deg2rad(degrees), g)
        strokes.append(stroke)
        masks.append(mask)
        start = side // 2 + 1  # the reference's struct_head, one pixel off the window's centre
        lo = g.half - start  # the stamp's row/column at window position 0
        window = mask[lo:lo + side, lo:lo + side]
        padded = np.zeros((side, side), dtype=np.float32)
        padded[: window.shape[0], : window.shape[1]] = window
        kernels.append(padded >= 1.0)
    return np.stack(strokes), np.stack(masks), np.stack(kernels)


@lru_cache(maxsize=4)
def extension_steps(g: Geometry = Geometry()) -> tuple[np.ndarray, np.ndarray]:
    """The candidate heads of an extension relative to its pivot, int64 [D, 2] (dy, dx), and their orientations
    float64 [D] (radians, ``arctan2(dy, dx)``).

    The reference samples points on a circle of radius length + margin around the pivot, one per arc of one
    pixel, truncates them to integers and keeps the distinct ones; for points inside the image the truncation
    is a floor, so the distinct displacements do not depend on where the pivot lies.
    """
    radius = g.paddle_length + g.margin
    step = 360.0 / (2 * radius * np.pi)
    angles = np.deg2rad(np.arange(0, 360, step))
    moves = np.stack([np.floor(radius * np.sin(angles)), np.floor(radius * np.cos(angles))], axis=1)
    unique = np.unique(moves.astype(np.int64), axis=0)  # [D, 2], sorted as the reference's np.unique
    return unique, np.arctan2(unique[:, 0], unique[:, 1]).astype(np.float64)


@lru_cache(maxsize=4)
def extension_stamps(g: Geometry = Geometry()) -> tuple[np.ndarray, np.ndarray]:
    """Stroke and mask float32 [D, S, S] of the paddle drawn from each candidate head back towards the pivot."""
    _, orientations = extension_steps(g)
    pairs = [_paddle(float(flip(np.array(angle))), g) for angle in orientations]
    return np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs])


@lru_cache(maxsize=4)
def marker_stamp(g: Geometry = Geometry()) -> np.ndarray:
    """The marker, float32 [M, M] centred on its pixel: a disc of ``marker_radius * aa`` pixels drawn at
    ``aa`` times the resolution around the pixel's top-left corner (as the reference's ``draw_circle``), shrunk
    with Lanczos on an 8-bit image (values 0..1)."""
    out_half = 6
    big = (2 * out_half + 1) * g.aa_scale
    centre = out_half * g.aa_scale
    y, x = np.ogrid[-centre:big - centre, -centre:big - centre]
    disc = (x * x + y * y <= (g.marker_radius * g.aa_scale) ** 2).astype(np.uint8) * 255
    small = Image.fromarray(disc).resize((2 * out_half + 1,) * 2, Image.Resampling.LANCZOS)
    return np.asarray(small, dtype=np.float32) / 255.0
