"""A vectorised Pathfinder-32 generator (the Long Range Arena version of the Pathfinder challenge).

Facts from the reference generator (Linsley et al., NeurIPS 2018; Kim, Linsley et al., ICLR 2020;
drewlinsley/pathfinder, ``snakes2.py``: ``from_wrapper``, ``two_snakes``, ``initialize_two_seeds``,
``draw_circle``; ``snakes.py``: ``make_many_snakes``, ``seed_snake``, ``extend_snake``, ``get_coords_cmf``)
and LRA's parameters (Tay et al., ICLR 2021; google-research/long-range-arena,
``lra_benchmarks/data/pathfinder.py``, docstring of ``Pathfinder32``):

* Window 32x32, border padding 1, anti-aliasing at 2x, paddles of length 2, thickness 0.5, margin 1, continuity
  1.0, marker radius 1.5, seed distance 7. Target paddles have contrast 0.75 * 2 = 1.5, distractor paddles 2,
  markers 1. Contour length 6 / 9 / 14 paddles (easy / intermediate / hard), distractor snakes of
  ``contour_length // 3`` paddles, ``20 // distractor_length`` of them; no single-paddle distractors.
* Seeds (the first target seed and every distractor's) can only take 30 of the 360 orientations, -150..-121
  degrees: the reference dilates with OpenCV, which leaves a pixel none of whose kernel offsets lands inside the
  image at the lowest float, and its free-pixel search then returns nothing, so any other orientation fails the
  attempt at once (:class:`_Tables`, ``seed_alive``). Since such an attempt changes nothing, we skip it
  beforehand: a first trial draws a usable orientation, and a share 30/360 of attempts is made at all.
* Two target snakes. The first seed's start lies at least ``2 * seed_distance`` pixels from the border (a free
  4x4 centre), where the paddle does not touch the border (an exclusion kernel, :mod:`tasks.pathfinder.stamps`);
  the second starts ``seed_distance`` pixels away in a uniform direction. Both take a uniform integer
  orientation; the paddle's head and the pivot behind it must lie inside the window (3 trials).
* A snake grows paddle by paddle, the two target snakes taking turns: the pivot moves ``length + 2 * margin``
  along the last orientation; the next head is one of the distinct integer points on the circle of radius
  ``length + margin`` around it, with weight ``(1 - dilated occupancy) * cos^2(min(continuity * |dtheta|,
  pi/2))`` (the occupancy dilated by a 3x3 cross); a sampled paddle is kept if ``occupancy + its mask < 1.8``
  everywhere (3 samples). The occupancy takes a paddle's mask only once the next paddle of its snake is
  drawn; at the end the last paddle of the second target snake is added, the first's is not (as the
  reference). A failure anywhere restarts both target snakes.
* Distractor snakes: a seed anywhere its exclusion kernel meets no occupied pixel (nor the 1-pixel border),
  given at least 1% free pixels, then ``distractor_length - 1`` extensions; a failed snake is retried up to
  4 more times, then given up (the image keeps fewer distractors).
* The label ~ U{0, 1}; one target snake, ~U{0, 1}, gets a marker at its first paddle's start; the other marker
  goes on the last paddle's head of the same snake (label 1) or of the other one (label 0).
* Every paddle is pasted as a pre-rendered stamp (drawn at 2x, Lanczos-downsampled as an 8-bit image, as the
  reference's byte-scaling ``imresize``; pixel for pixel the reference's strokes) with ``np.maximum``; the
  image is min-max scaled to 0..255 per image (the reference saves with a byte-scaling ``imsave``).

Vectorisation: the images of a block advance together (paddle k of every image at once); state is kept as
``[N, H, W]`` arrays and small per-image vectors. Deviations from the reference, none of which changes the
algorithm above: NumPy's PCG64 instead of the global ``np.random``/``random`` state; the orientation table
is pre-rendered; the reference's unbounded restarts of the target snakes are capped at ``MAX_ROUNDS`` rounds
(never reached in practice; an error says so if it is).

Determinism: images come in blocks of ``BLOCK`` drawn from ``SeedSequence([seed, contour_length, block])``,
so the first n images of a seed are the same whatever n is (a request is rounded up to whole blocks and cut).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tasks.pathfinder.stamps import (
    Geometry,
    extension_stamps,
    extension_steps,
    flip,
    marker_stamp,
    seed_stamps,
    translate,
)

GENERATOR_VERSION = 2
BLOCK = 500  # images per independently seeded block
MAX_ROUNDS = 1000  # rounds of restarts of the target snakes before giving up
MIN_ATTEMPTS = 512  # target-snake attempts per round (pending images are tried several times at once)
PAD = 6  # canvas padding: stamps never need clipping
LEVELS = {"easy": 6, "intermediate": 9, "hard": 14}  # contour length per LRA difficulty


@dataclass(frozen=True)
class Settings:
    """LRA's Pathfinder-32 parameters (the contour length picks the difficulty)."""

    contour_length: int = 14
    window: int = 32
    padding: int = 1
    seed_distance: int = 7
    continuity: float = 1.0
    snake_contrast: float = 2.0
    paddle_contrast: float = 0.75
    max_target_contour_retrial: int = 4  # unused: the target snakes restart until they succeed (as the reference)
    max_distractor_contour_retrial: int = 4
    max_paddle_retrial: int = 2
    geometry: Geometry = field(default_factory=Geometry)

    @property
    def distractor_length(self) -> int:
        return self.contour_length // 3

    @property
    def num_distractor_snakes(self) -> int:
        return 20 // self.distractor_length


@dataclass
class Batch:
    """Generated images and what the tests read about them."""

    images: np.ndarray  # uint8 [N, H, W]
    labels: np.ndarray  # int64 [N], 1 = the markers lie on the same snake
    markers: np.ndarray  # int64 [N, 2, 2]: (y, x) of the origin and the terminal marker
    marker_snakes: np.ndarray  # int64 [N, 2]: which target snake (0 or 1) each marker lies on
    snake_ink: np.ndarray | None  # float32 [N, 2, H, W]: each target snake's strokes (only when asked for)
    target_paddles: np.ndarray  # int64 [N]: paddles of the two target snakes (2 * contour_length)
    distractor_snakes: np.ndarray  # int64 [N]: distractor snakes placed
    distractor_paddles: np.ndarray  # int64 [N]


class _Canvas:
    """Per-image float canvases [n, H + 2 PAD, W + 2 PAD] with stamp pasting and window reads."""

    def __init__(self, n: int, size: int) -> None:
        self.size = size
        self.data = np.zeros((n, size + 2 * PAD, size + 2 * PAD), dtype=np.float32)

    def _index(self, rows: np.ndarray, y: np.ndarray, x: np.ndarray, side: int) -> np.ndarray:
        """Flat indices [n, side * side] of the side x side windows centred on (y, x) of images ``rows``."""
        full = self.data.shape[-1]
        offs = np.arange(side) - side // 2
        grid = (offs[:, None] * full + offs[None, :]).reshape(-1)  # [side * side]
        base = rows * full * full + (y + PAD) * full + (x + PAD)  # [n]
        return base[:, None] + grid[None, :]

    def window(self, rows: np.ndarray, y: np.ndarray, x: np.ndarray, side: int) -> np.ndarray:
        """[n, side, side] around (y, x) of images ``rows``."""
        return self.data.reshape(-1)[self._index(rows, y, x, side)].reshape(len(rows), side, side)

    def paste(self, rows: np.ndarray, y: np.ndarray, x: np.ndarray, stamps: np.ndarray) -> None:
        """canvas = max(canvas, stamp) around (y, x); ``rows`` must be distinct."""
        side = stamps.shape[-1]
        index = self._index(rows, y, x, side)
        flat = self.data.reshape(-1)
        flat[index] = np.maximum(flat[index], stamps.reshape(-1, side * side))

    def inner(self) -> np.ndarray:
        return self.data[:, PAD:PAD + self.size, PAD:PAD + self.size]


class _Tables:
    """The stamps and kernels of one geometry, in the shapes the generator indexes."""

    def __init__(self, s: Settings) -> None:
        g = s.geometry
        self.seed_stroke, self.seed_mask, kernels = seed_stamps(g)  # [360, S, S] x2, [360, K, K]
        self.moves, self.move_angle = extension_steps(g)  # [D, 2], [D]
        self.ext_stroke, self.ext_mask = extension_stamps(g)  # [D, S, S]
        self.marker = marker_stamp(g)  # [M, M]
        self.strokes = np.concatenate([self.seed_stroke, self.ext_stroke])  # [360 + D, S, S], by stamp id
        self.masks = np.concatenate([self.seed_mask, self.ext_mask])
        self.ext_mask = self.masks[360:]
        angles = np.concatenate([np.deg2rad(np.arange(-180, 180)), self.move_angle])  # [360 + D], by stamp id
        delta = np.abs(self.move_angle[None, :] - angles[:, None])
        delta = np.minimum(delta, 2 * np.pi - delta)
        self.turn = np.maximum(np.cos(np.minimum(delta * s.continuity, np.pi / 2)), 0.0) ** 2  # [360 + D, D]
        side = kernels.shape[-1]
        most = int(kernels.sum((1, 2)).max())
        self.kernel_dy = np.zeros((360, most), dtype=np.int64)  # [360, Kmax] offsets, padded with the first one
        self.kernel_dx = np.zeros((360, most), dtype=np.int64)
        for i, kernel in enumerate(kernels):
            ky, kx = np.nonzero(kernel)
            ky, kx = np.resize(ky, most) - side // 2, np.resize(kx, most) - side // 2
            self.kernel_dy[i], self.kernel_dx[i] = ky, kx
        cross = np.array([[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1]])
        self.cross = cross  # [5, 2]: the margin-1 dilation of the extension step
        w, pad, gap = s.window, s.padding, 2 * s.seed_distance
        frame = np.ones((w, w), dtype=bool)
        frame[max(pad, gap):w - max(pad, gap), max(pad, gap):w - max(pad, gap)] = False
        # The reference dilates with OpenCV, which leaves out what lies outside the image: a pixel from which no
        # kernel offset lands inside the window gets the lowest float, and its search for free pixels then finds
        # none at all (it returns no coordinates when the dilated mask has a negative value). So a seed can only
        # take an orientation whose kernel reaches into the window from every pixel, i.e. holds an offset in
        # each quadrant (30 of 360 with LRA's Pathfinder-32 geometry: -150..-121 degrees); any other fails.
        self.seed_alive = _dilate(np.ones((360, w, w), dtype=bool), self.kernel_dy, self.kernel_dx).all(axis=(1, 2))
        self.first_seed_free = ~_dilate(np.broadcast_to(frame, (360, w, w)), self.kernel_dy, self.kernel_dx)
        self.first_seed_free &= self.seed_alive[:, None, None]
        self.alive_degrees = np.flatnonzero(self.seed_alive) - 180
        self.alive_share = len(self.alive_degrees) / 360


def _dilate(occupied: np.ndarray, dy: np.ndarray, dx: np.ndarray) -> np.ndarray:
    """occupied bool [n, H, W] dilated by per-image kernel offsets [n, K]: out[p] = any occupied[p + d]."""
    n, h, w = occupied.shape
    m = 3  # offsets lie within +-3
    padded = np.zeros((n, h + 2 * m, w + 2 * m), dtype=bool)
    padded[:, m:m + h, m:m + w] = occupied
    rows = (np.arange(h)[None, None, :, None] + m + dy[:, :, None, None])  # [n, K, H, 1]
    cols = (np.arange(w)[None, None, None, :] + m + dx[:, :, None, None])  # [n, K, 1, W]
    return padded[np.arange(n)[:, None, None, None], rows, cols].any(axis=1)


def _pick(rng: np.random.Generator, weights: np.ndarray) -> np.ndarray:
    """One index per row of weights [n, C] (not all zero), with probability proportional to the weight."""
    cdf = np.cumsum(weights, axis=1)
    u = rng.random(len(weights)) * cdf[:, -1]
    return np.minimum((cdf <= u[:, None]).sum(axis=1), weights.shape[1] - 1)


class _Snakes:
    """The growing snakes of a set of images: one current snake per image slot ``k`` (pivot, orientation, the
    mask stamp of its last paddle, not yet in the occupancy)."""

    def __init__(self, n: int, length: int) -> None:
        self.paddles = np.zeros((n, length, 3), dtype=np.int64)  # stamp id, y, x of each paddle, drawn later
        self.count = np.zeros(n, dtype=np.int64)
        self.pivot = np.zeros((n, 2), dtype=np.int64)
        self.angle = np.zeros(n)
        self.pending = np.zeros(n, dtype=np.int64)  # stamp id: < 360 seed, else 360 + extension move
        self.pending_at = np.zeros((n, 2), dtype=np.int64)
        self.tip = np.zeros((n, 2), dtype=np.int64)  # the start of the first paddle
        self.end = np.zeros((n, 2), dtype=np.int64)  # the head of the last paddle


class Generator:
    """Pathfinder images for one Settings; :meth:`block` makes ``BLOCK`` of them from one seed."""

    def __init__(self, settings: Settings) -> None:
        self.s = settings
        self.t = _Tables(settings)
        self.w = settings.window

    # shared steps ------------------------------------------------------------------------------
    def _mask_stamp(self, ids: np.ndarray) -> np.ndarray:
        return self.t.masks[ids]

    def _commit(self, mask: _Canvas, rows: np.ndarray, snake: _Snakes, k: np.ndarray) -> None:
        """Add the pending paddle masks of snakes ``k`` to the occupancy of images ``rows``."""
        mask.paste(rows, snake.pending_at[k, 0], snake.pending_at[k, 1], self._mask_stamp(snake.pending[k]))

    def _bounds(self, *points: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        ok = np.ones(points[0][0].shape, dtype=bool)
        for y, x in points:
            ok &= (y >= 0) & (y < self.w) & (x >= 0) & (x < self.w)
        return ok

    def _extend(self, rng: np.random.Generator, rows: np.ndarray, snake: _Snakes, k: np.ndarray,
                mask: _Canvas) -> np.ndarray:
        """Add one paddle to snakes ``k`` of images ``rows`` (the reference's ``extend_snake``); bool [n] success.
        Only the occupancy is updated; the paddle is recorded in ``snake.paddles`` and drawn by :meth:`_draw`."""
        n, t = len(rows), self.t
        py, px = translate(snake.pivot[k, 0], snake.pivot[k, 1], snake.angle[k],
                           self.s.geometry.paddle_length + 2 * self.s.geometry.margin)
        hy = py[:, None] + t.moves[None, :, 0]  # [n, D]
        hx = px[:, None] + t.moves[None, :, 1]
        inside = self._bounds((hy, hx))
        side = mask.data.shape[-1]
        flat = (rows[:, None] * side * side + (np.clip(hy, 1 - PAD, self.w + PAD - 2) + PAD) * side
                + np.clip(hx, 1 - PAD, self.w + PAD - 2) + PAD)  # [n, D] (outside candidates are masked below)
        cells = mask.data.reshape(-1)
        dilated = cells[flat]
        for cy, cx in t.cross[1:]:  # the occupancy dilated by a 3x3 cross, read at the candidates
            dilated = np.maximum(dilated, cells[flat + cy * side + cx])
        turn = t.turn[snake.pending[k]]  # [n, D]: the last paddle's orientation against each candidate's
        weights = np.where(inside, (1.0 - dilated) * turn, 0.0)  # [n, D]
        alive = weights.sum(axis=1) >= 1e-4
        weights[~alive] = 1.0
        chosen = np.full(n, -1, dtype=np.int64)
        for _ in range(self.s.max_paddle_retrial + 1):
            todo = np.flatnonzero(alive & (chosen < 0))
            if len(todo) == 0:
                break
            pick = _pick(rng, weights[todo])
            y, x = hy[todo, pick], hx[todo, pick]
            window = mask.window(rows[todo], y, x, t.ext_mask.shape[-1])
            fits = (window + t.ext_mask[pick]).max(axis=(1, 2)) < 1.8
            chosen[todo[fits]] = pick[fits]
        ok = np.flatnonzero(chosen >= 0)
        pick, r, kk = chosen[ok], rows[ok], k[ok]
        y, x = hy[ok, pick], hx[ok, pick]
        snake.paddles[kk, snake.count[kk]] = np.stack([360 + pick, y, x], axis=1)
        snake.count[kk] += 1
        self._commit(mask, r, snake, kk)
        snake.pending[kk], snake.pending_at[kk] = 360 + pick, np.stack([y, x], axis=1)
        snake.pivot[kk] = np.stack([py[ok], px[ok]], axis=1)
        snake.angle[kk] = t.move_angle[pick]
        snake.end[kk] = np.stack([y, x], axis=1)
        return chosen >= 0

    def _seed_geometry(self, ty: np.ndarray, tx: np.ndarray, angle: np.ndarray) -> tuple[np.ndarray, ...]:
        g = self.s.geometry
        hy, hx = translate(ty, tx, angle, g.paddle_length)
        py, px = translate(hy, hx, flip(angle), g.paddle_length + g.margin)
        return hy, hx, py, px, self._bounds((hy, hx), (py, px))

    def _place_seed(self, snake: _Snakes, k: np.ndarray, ty: np.ndarray, tx: np.ndarray, degrees: np.ndarray,
                    py: np.ndarray, px: np.ndarray) -> None:
        snake.tip[k] = np.stack([ty, tx], axis=1)
        snake.end[k] = snake.tip[k]
        snake.pivot[k] = np.stack([py, px], axis=1)
        snake.angle[k] = np.deg2rad(degrees)
        snake.pending[k] = degrees + 180
        snake.pending_at[k] = snake.tip[k]
        snake.paddles[k, 0] = np.stack([degrees + 180, ty, tx], axis=1)
        snake.count[k] = 1

    def _draw(self, canvases: list[_Canvas], rows: np.ndarray, snake: _Snakes, k: np.ndarray,
              contrast: float) -> None:
        """Paste the recorded paddles of snakes ``k`` into images ``rows`` of every canvas (full snakes only)."""
        for j in range(snake.paddles.shape[1]):
            ids, y, x = (snake.paddles[k, j, i] for i in range(3))
            stroke = self.t.strokes[ids] * contrast
            for canvas in canvases:
                canvas.paste(rows, y, x, stroke)

    def _seed_degrees(self, rng: np.random.Generator, n: int, first: bool) -> np.ndarray:
        """Seed orientations in degrees: uniform over -180..179, but over the usable ones only at a snake's first
        trial. An attempt whose first orientation is unusable fails at once and changes nothing (the reference
        finds no free pixel and gives up), so callers leave such attempts out beforehand
        (:meth:`_alive_first`); later trials may still draw an unusable one and fail."""
        if first:
            return self.t.alive_degrees[rng.integers(0, len(self.t.alive_degrees), n)]
        return rng.integers(-180, 180, n)

    def _alive_first(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """bool [n]: which of n attempts draw a usable first seed orientation (the others fail at once)."""
        return rng.random(n) < self.t.alive_share

    def _sample_free(self, rng: np.random.Generator, free: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A uniform free pixel (y, x) of each bool [n, H, W] (each with at least one)."""
        flat = free.reshape(len(free), -1)
        counts = flat.sum(axis=1)
        target = np.floor(rng.random(len(free)) * counts).astype(np.int64)
        _, cells = np.nonzero(flat)  # row-major: each image's free cells in order
        index = cells[np.cumsum(counts) - counts + target]
        return index // self.w, index % self.w

    # the two target snakes -----------------------------------------------------------------------
    def _targets(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, _Canvas, _Canvas, list[_Canvas],
                                                                   _Snakes]:
        """One attempt at the two target snakes of n images: (success bool [n], image, mask, per-snake ink,
        snakes in slots 2i and 2i + 1)."""
        s, t, w = self.s, self.t, self.w
        image, mask = _Canvas(n, w), _Canvas(n, w)
        mask.inner()[:] = 1.0
        mask.inner()[:, s.padding:w - s.padding, s.padding:w - s.padding] = 0.0
        inks = [_Canvas(n, w), _Canvas(n, w)]
        snakes = _Snakes(2 * n, s.contour_length)
        ok = np.zeros(n, dtype=bool)
        contrast = s.paddle_contrast * s.snake_contrast
        # first seed: inside the free centre, up to max_paddle_retrial + 1 orientation trials
        first = np.zeros((n, 5), dtype=np.int64)  # ty, tx, degrees, py, px
        failed = np.zeros(n, dtype=bool)
        for trial in range(s.max_paddle_retrial + 1):
            todo = np.flatnonzero(~ok & ~failed)
            if len(todo) == 0:
                break
            degrees = self._seed_degrees(rng, len(todo), trial == 0)
            free = t.first_seed_free[degrees + 180]
            empty = ~free.any(axis=(1, 2))
            failed[todo[empty]] = True  # no room at all: the reference gives up the attempt
            todo, degrees, free = todo[~empty], degrees[~empty], free[~empty]
            ty, tx = self._sample_free(rng, free)
            _, _, py, px, inside = self._seed_geometry(ty, tx, np.deg2rad(degrees))
            first[todo[inside]] = np.stack([ty, tx, degrees, py, px], axis=1)[inside]
            ok[todo[inside]] = True
        # second seed: seed_distance away from the first, in a uniform direction
        second = np.zeros((n, 5), dtype=np.int64)
        ok2 = np.zeros(n, dtype=bool)
        for _ in range(s.max_paddle_retrial + 1):
            todo = np.flatnonzero(ok & ~ok2)
            if len(todo) == 0:
                break
            degrees = rng.integers(-180, 180, len(todo))
            away = np.deg2rad(rng.integers(0, 360, len(todo)))
            ty = np.round(first[todo, 0] + s.seed_distance * np.sin(away)).astype(np.int64)
            tx = np.round(first[todo, 1] + s.seed_distance * np.cos(away)).astype(np.int64)
            _, _, py, px, inside = self._seed_geometry(ty, tx, np.deg2rad(degrees))
            second[todo[inside]] = np.stack([ty, tx, degrees, py, px], axis=1)[inside]
            ok2[todo[inside]] = True
        ok &= ok2
        rows = np.flatnonzero(ok)
        for i, seed in enumerate((first, second)):
            ty, tx, degrees, py, px = (seed[rows, j] for j in range(5))
            self._place_seed(snakes, 2 * rows + i, ty, tx, degrees, py, px)
        for _ in range(s.contour_length - 1):
            for i in range(2):
                rows = np.flatnonzero(ok)
                done = self._extend(rng, rows, snakes, 2 * rows + i, mask)
                ok[rows[~done]] = False
        rows = np.flatnonzero(ok)
        self._commit(mask, rows, snakes, 2 * rows + 1)  # the last paddle of the second snake only
        for i in range(2):
            self._draw([image, inks[i]], rows, snakes, 2 * rows + i, contrast)
        return ok, image, mask, inks, snakes

    # distractors ---------------------------------------------------------------------------------
    def _distractor(self, rng: np.random.Generator, rows: np.ndarray, image: _Canvas, mask: _Canvas) -> np.ndarray:
        """One attempt at a distractor snake in images ``rows``; committed where it succeeds (bool [n])."""
        s, t, w = self.s, self.t, self.w
        n = len(rows)
        trial_image, trial_mask = _Canvas(n, w), _Canvas(n, w)
        trial_image.data[:], trial_mask.data[:] = image.data[rows], mask.data[rows]
        local = np.arange(n)
        occupied = trial_mask.inner() > 0.3  # [n, H, W]
        roomy = (~occupied).reshape(n, -1).mean(axis=1) >= 0.01  # the reference's stop_with_availability
        lined = occupied.copy()
        lined[:, [0, -1], :] = True
        lined[:, :, [0, -1]] = True
        snake = _Snakes(n, s.distractor_length)
        placed = np.zeros(n, dtype=bool)
        failed = ~roomy
        for trial in range(s.max_paddle_retrial + 1):
            todo = np.flatnonzero(~placed & ~failed)
            if len(todo) == 0:
                break
            degrees = self._seed_degrees(rng, len(todo), trial == 0)
            free = ~_dilate(lined[todo], t.kernel_dy[degrees + 180], t.kernel_dx[degrees + 180])
            free &= t.seed_alive[degrees + 180][:, None, None]
            empty = ~free.any(axis=(1, 2))
            failed[todo[empty]] = True
            todo, degrees, free = todo[~empty], degrees[~empty], free[~empty]
            ty, tx = self._sample_free(rng, free)
            _, _, py, px, inside = self._seed_geometry(ty, tx, np.deg2rad(degrees))
            k = todo[inside]
            self._place_seed(snake, k, ty[inside], tx[inside], degrees[inside], py[inside], px[inside])
            placed[k] = True
        ok = placed
        for _ in range(s.distractor_length - 1):
            live = np.flatnonzero(ok)
            done = self._extend(rng, live, snake, local[live], trial_mask)
            ok[live[~done]] = False
        live = np.flatnonzero(ok)
        self._commit(trial_mask, live, snake, live)
        self._draw([trial_image], live, snake, live, s.snake_contrast)
        image.data[rows[live]] = trial_image.data[live]
        mask.data[rows[live]] = trial_mask.data[live]
        return ok

    # one block -------------------------------------------------------------------------------------
    def block(self, rng: np.random.Generator, n: int, keep_ink: bool = False) -> Batch:
        s, w = self.s, self.w
        image, mask = _Canvas(n, w), _Canvas(n, w)
        inks = [_Canvas(n, w), _Canvas(n, w)] if keep_ink else []
        tips = np.zeros((n, 2, 2), dtype=np.int64)  # snake, (y, x) of the first paddle's start
        ends = np.zeros((n, 2, 2), dtype=np.int64)  # snake, (y, x) of the last paddle's head
        todo = np.arange(n)
        for _ in range(MAX_ROUNDS):
            # several independent attempts per image; the first success counts, as if the attempts had been made
            # one after another
            reps = max(1, int(MIN_ATTEMPTS / (self.t.alive_share * len(todo))))
            tries = np.repeat(todo, reps)
            tries = tries[self._alive_first(rng, len(tries))]  # the others fail at the first seed
            if len(tries) == 0:
                continue
            ok, t_image, t_mask, t_inks, snakes = self._targets(rng, len(tries))
            first = np.flatnonzero(ok)
            _, keep = np.unique(tries[first], return_index=True)
            got = first[keep]
            rows = tries[got]
            image.data[rows], mask.data[rows] = t_image.data[got], t_mask.data[got]
            for canvas, t_ink in zip(inks, t_inks, strict=False):
                canvas.data[rows] = t_ink.data[got]
            for i in range(2):
                tips[rows, i], ends[rows, i] = snakes.tip[2 * got + i], snakes.end[2 * got + i]
            todo = np.setdiff1d(todo, rows)
            if len(todo) == 0:
                break
        else:
            raise RuntimeError(f"Pathfinder: {len(todo)} images found no room for the target snakes in "
                               f"{MAX_ROUNDS} rounds")
        placed = np.zeros(n, dtype=np.int64)
        for _ in range(s.num_distractor_snakes):
            need = np.arange(n)
            for _ in range(s.max_distractor_contour_retrial + 1):
                if len(need) == 0:
                    break
                go = self._alive_first(rng, len(need))  # the others fail at the seed: the attempt is used up
                done = np.zeros(len(need), dtype=bool)
                if go.any():
                    done[go] = self._distractor(rng, need[go], image, mask)
                placed[need[done]] += 1
                need = need[~done]
        labels = rng.integers(0, 2, n)
        origin = rng.integers(0, 2, n)
        terminal = np.where(labels == 1, origin, 1 - origin)
        markers = np.stack([tips[np.arange(n), origin], ends[np.arange(n), terminal]], axis=1)  # [n, 2, 2]
        rows = np.arange(n)
        for j in range(2):
            image.paste(rows, markers[:, j, 0], markers[:, j, 1], np.broadcast_to(self.t.marker,
                                                                                 (n, *self.t.marker.shape)))
        pixels = image.inner()
        lo = pixels.min(axis=(1, 2), keepdims=True)
        hi = pixels.max(axis=(1, 2), keepdims=True)
        scaled = np.floor((pixels - lo) * (255.0 / np.maximum(hi - lo, 1e-12)) + 0.5)
        ink = np.stack([c.inner() for c in inks], axis=1).copy() if keep_ink else None
        return Batch(images=np.clip(scaled, 0, 255).astype(np.uint8), labels=labels.astype(np.int64),
                     markers=markers, marker_snakes=np.stack([origin, terminal], axis=1).astype(np.int64),
                     snake_ink=ink, target_paddles=np.full(n, 2 * s.contour_length, dtype=np.int64),
                     distractor_snakes=placed, distractor_paddles=placed * s.distractor_length)


def generate(n: int, seed: int, settings: Settings | None = None, keep_ink: bool = False) -> Batch:
    """The first ``n`` images of ``seed``: whole blocks of ``BLOCK`` images, each from its own seed, cut to n."""
    settings = settings or Settings()
    maker = Generator(settings)
    parts = []
    for block in range(-(-n // BLOCK)):
        rng = np.random.default_rng(np.random.SeedSequence([seed, settings.contour_length, block]))
        parts.append(maker.block(rng, BLOCK, keep_ink))
    fields = {}
    for name in Batch.__dataclass_fields__:
        values = [getattr(p, name) for p in parts]
        fields[name] = None if values[0] is None else np.concatenate(values)[:n]
    return Batch(**fields)


def level_settings(difficulty: str) -> Settings:
    """LRA's settings of ``easy``, ``intermediate`` or ``hard``."""
    return Settings(contour_length=LEVELS[difficulty])
