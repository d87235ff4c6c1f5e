"""Original-BoxWorld levels for many boards at once (numpy over levels), with the rules of ``gen_classic``.

Same puzzle and placement rules as the per-level generator ``gen_classic.generate_classic`` (google-deepmind/
pycolab, pycolab/examples/research/box_world/box_world.py), drawn differently: each level takes one block of
doubles from its own Generator (hues, L, forward and backward distractors with their colours, the player), then
one block per placement attempt (one double per box). Box columns have fixed roles: column 0 is the loose key
of colour 1, column i (1 <= i <= L) has lock i and content i+1 (the gem for i = L), then ``distractor_length``
columns per forward branch, then one per backward distractor; columns beyond a level's counts are unused.

* Distractor colours are uniform in {L+1..19}; a chained content is uniform among those colours other than its
  lock (pycolab redraws until they differ: the same distribution).
* Placement: box by box in column order, the content tile uniform among the anchors whose 3 x 4 block is still
  empty (``gen_classic._place``); a level whose room fills up redraws its placement block only.
* The player starts uniformly on an empty cell with x in [1, n-1], y in [2, n-1] (pycolab's rectangle).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from tasks.boxworld.batch_draws import integers, permutations, pick_true, uniform_blocks
from tasks.boxworld.config import BoxWorldConfig
from tasks.boxworld.gen_classic import DISTRACTOR_COLOURS_END, MAX_PLACEMENTS
from tasks.boxworld.level import EMPTY, GEM, N_COLOURS, code_palettes
from tasks.boxworld.level_batch import NONE, LevelBatch, puzzle_types
from tasks.boxworld.palette import CLASSIC_BACKGROUND, CLASSIC_BORDER, CLASSIC_HUES, GEM_RGB, N_HUES

_HUES, _LENGTH, _FORWARD, _BACKWARD, _PLAYER, _COLOURS = 0, N_HUES, N_HUES + 1, N_HUES + 2, N_HUES + 3, N_HUES + 4


def box_columns(cfg: BoxWorldConfig) -> int:
    """Box columns M: the longest solution path and loose key, the most forward and backward distractors."""
    return cfg.solution_length[1] + 1 + cfg.num_distractors[1] * cfg.distractor_length + cfg.num_backward[1]


def problem_width(cfg: BoxWorldConfig) -> int:
    """Doubles of a level's first block: hues, L, branch counts, player, then the distractor colours."""
    return _COLOURS + cfg.num_distractors[1] * (1 + cfg.distractor_length) + 2 * cfg.num_backward[1]


@lru_cache(maxsize=8)
def _footprints(n: int) -> tuple[np.ndarray, np.ndarray]:
    """bool [A, A] per anchor a (anchors (x, y) in [2, n-3] x [2, n-1], a = (y-2) * (n-4) + x-2): the anchors
    whose block (x-1..x+2, y-1..y+1) meets box a's tiles, for a loose key (one tile) and for a box (two tiles)."""
    xs, ys = n - 4, n - 2
    x, y = np.meshgrid(np.arange(xs), np.arange(ys))
    x, y = x.reshape(-1), y.reshape(-1)  # [A]
    near = np.abs(y[:, None] - y[None, :]) <= 1  # [A, A] (placed, candidate)
    dx = x[None, :] - x[:, None]
    return near & (dx >= -2) & (dx <= 1), near & (dx >= -2) & (dx <= 2)


def _problem(u: np.ndarray, cfg: BoxWorldConfig) -> tuple[np.ndarray, ...]:
    """(L [k], forward [k], backward [k], content [k, M], lock [k, M]) from the first blocks u [k, W]."""
    k, m = len(u), box_columns(cfg)
    length = integers(u[:, _LENGTH], *cfg.solution_length)
    forward = integers(u[:, _FORWARD], *cfg.num_distractors)
    backward = integers(u[:, _BACKWARD], *cfg.num_backward)
    lmax, branches, chain = cfg.solution_length[1], cfg.num_distractors[1], cfg.distractor_length
    column = np.arange(lmax + 1)[None, :]  # [1, Lmax+1]
    content = np.full((k, m), NONE, dtype=np.int64)
    lock = np.full((k, m), NONE, dtype=np.int64)
    on_path = column <= length[:, None]
    content[:, : lmax + 1] = np.where(on_path, np.where(column == length[:, None], GEM, column + 1), NONE)
    lock[:, : lmax + 1] = np.where(on_path & (column > 0), column, NONE)
    low = length[:, None] + 1  # [k, 1] first distractor colour
    at = _COLOURS
    if branches:
        cols = u[:, at : at + branches * (1 + chain)].reshape(k, branches, 1 + chain)
        active = np.arange(branches)[None, :] < forward[:, None]  # [k, F]
        previous = integers(cols[:, :, 0], 1, length[:, None])  # [k, F] the branch's first lock
        for j in range(chain):
            if j == 0:  # the lock is a solution colour: any distractor colour will do
                colour = integers(cols[:, :, 1], low, DISTRACTOR_COLOURS_END)
            else:  # uniform among the distractor colours other than the lock
                colour = integers(cols[:, :, 1 + j], low, DISTRACTOR_COLOURS_END - 1)
                colour += colour >= previous
            columns = lmax + 1 + np.arange(branches) * chain + j
            content[:, columns] = np.where(active, colour, NONE)
            lock[:, columns] = np.where(active, previous, NONE)
            previous = colour
        at += branches * (1 + chain)
    if cfg.num_backward[1]:
        nb = cfg.num_backward[1]
        active = np.arange(nb)[None, :] < backward[:, None]  # [k, Bk]
        columns = m - nb + np.arange(nb)
        lock[:, columns] = np.where(active, integers(u[:, at : at + nb], low, DISTRACTOR_COLOURS_END), NONE)
        content[:, columns] = np.where(active, integers(u[:, at + nb : at + 2 * nb], 1, length[:, None]), NONE)
    return length, forward, backward, content, lock


def place(u: np.ndarray, used: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(anchor [k, M] flat content cell on the (n+2)-wide grid, placed [k]) from one double per box u [k, M];
    ``used`` [k, M] marks the boxes to place; column 0 is a loose key, the others have a lock on the right."""
    loose, locked = _footprints(n)
    xs = n - 4
    k, m = used.shape
    blocked = np.zeros((k, (n - 4) * (n - 2)), dtype=np.bool_)  # [k, A]
    anchor = np.zeros((k, m), dtype=np.int64)
    placed = np.ones(k, dtype=np.bool_)
    for j in range(m):
        choice, free = pick_true(u[:, j], ~blocked)
        placed &= ~used[:, j] | (free > 0)
        anchor[:, j] = choice
        rows = np.flatnonzero(used[:, j])
        blocked[rows] |= (loose if j == 0 else locked)[choice[rows]]
    size = n + 2
    return (2 + anchor // xs) * size + 2 + anchor % xs, placed


def generate_classic_batch(rngs: Sequence[np.random.Generator], cfg: BoxWorldConfig) -> LevelBatch:
    """One original-BoxWorld level per Generator in ``rngs`` (each level reads only its own Generator)."""
    m, n = box_columns(cfg), cfg.n
    u = uniform_blocks(rngs, problem_width(cfg) + m)  # [k, W + M]
    first, placement = u[:, : problem_width(cfg)], u[:, problem_width(cfg) :]
    length, forward, backward, content, lock = _problem(first, cfg)
    used = content >= 0
    anchor, placed = place(placement, used, n)
    for _ in range(MAX_PLACEMENTS - 1):
        if placed.all():
            break
        again = np.flatnonzero(~placed)
        anchor[again], placed[again] = place(uniform_blocks([rngs[i] for i in again], m), used[again], n)
    else:
        if not placed.all():
            raise RuntimeError(f"could not place {int(used.sum(1).max())} boxes in a {n} x {n} room; use a larger n")
    k, size = len(u), n + 2
    colours = np.zeros((k, N_COLOURS, 3), dtype=np.uint8)  # colour 20 unused, as pycolab
    colours[:, GEM] = GEM_RGB
    colours[:, 1:N_HUES] = CLASSIC_HUES[permutations(first[:, _HUES : _HUES + N_HUES])[:, : N_HUES - 1]]
    batch = LevelBatch(
        rules="classic",
        height=size,
        width=size,
        board=(1, 1, n, n),
        content=content,
        lock=lock,
        anchor=np.where(used, anchor, 0),
        distractor=used & (np.arange(m)[None, :] > cfg.solution_length[1]),
        lower_lock=np.full(k, NONE, dtype=np.int64),
        player=np.zeros(k, dtype=np.int64),
        solution_length=length,
        colours=colours,
        palette=code_palettes(colours, CLASSIC_BACKGROUND, CLASSIC_BORDER),
        info={"solution_length": length, "num_distractors": forward, "num_backward": backward,
              "puzzle_type": puzzle_types((cfg.solution_length[1] + 1, cfg.num_distractors[1] + 1))[length, forward]},
    )
    batch.player[:] = pick_true(first[:, _PLAYER], (batch.cells() == EMPTY) & _player_cells(n)[None, :])[0]
    return batch


@lru_cache(maxsize=8)
def _player_cells(n: int) -> np.ndarray:
    """bool [(n+2)^2]: the cells where pycolab may start the player, x in [1, n-1], y in [2, n-1]."""
    size = n + 2
    x, y = np.meshgrid(np.arange(size), np.arange(size))
    return ((x >= 1) & (x <= n - 1) & (y >= 2) & (y <= n - 1)).reshape(-1)
