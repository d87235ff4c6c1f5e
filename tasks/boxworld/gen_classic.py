"""Level generator of the original BoxWorld, following pycolab's ``box_world`` (google-deepmind/pycolab,
pycolab/examples/research/box_world/box_world.py).

Problem (colour indices; 0 is the gem): the solution path has locks 0..L and contents 1..L, gem, so box i
(1 <= i <= L) has lock i and content i+1 (the gem for i = L), and "lock 0" means a loose key of colour 1.
Each forward distractor branch starts with a lock of a random solution colour in 1..L and chains
``distractor_length`` boxes whose contents are random colours in {L+1..19} (never equal to the box's own lock);
a backward distractor holds a solution colour behind a lock of a colour in {L+1..19}. Colours are mapped to a
per-episode random permutation of the 20 hues.

Placement: on an (n+2) x (n+2) grid with a 1-cell border, a box's content tile goes at (x, y) with
x in [2, n-3], y in [2, n-1] and its lock at (x+1, y), such that the 3 x 4 block (x-1..x+2, y-1..y+1) is empty.
pycolab samples positions by rejection (<= 200 tries, then regenerates the problem); we also sample uniformly
among the valid positions, but know when none is left, and then retry the placement only (not the problem).
The player starts on a uniformly random empty cell with x in [1, n-1], y in [2, n-1], as in pycolab.
"""

from __future__ import annotations

import numpy as np

from tasks.boxworld.config import BoxWorldConfig
from tasks.boxworld.draws import Draws
from tasks.boxworld.level import GEM, N_COLOURS, Box, Level, code_palette, layout
from tasks.boxworld.palette import CLASSIC_BACKGROUND, CLASSIC_BORDER, CLASSIC_HUES, GEM_RGB, N_HUES

DISTRACTOR_COLOURS_END = 19  # pycolab: range(L + 1, MAX_NUM_KEYS = 20)
MAX_PLACEMENTS = 200


def sample_problem(draws: Draws, cfg: BoxWorldConfig) -> tuple[int, int, int, list[tuple[int, int]]]:
    """(L, forward branches, backward boxes, [(lock, content), ...]); lock 0 = loose key, content 0 = gem."""
    length = draws.between(*cfg.solution_length)
    n_forward = draws.between(*cfg.num_distractors)
    n_backward = draws.between(*cfg.num_backward)
    pairs = [(i, i + 1) for i in range(length)] + [(length, GEM)]
    for _ in range(n_forward):
        lock = draws.between(1, length)
        for _ in range(cfg.distractor_length):
            content = lock
            while content == lock:
                content = draws.between(length + 1, DISTRACTOR_COLOURS_END)
            pairs.append((lock, content))
            lock = content
    for _ in range(n_backward):
        pairs.append((draws.between(length + 1, DISTRACTOR_COLOURS_END), draws.between(1, length)))
    return length, n_forward, n_backward, pairs


def _place(draws: Draws, n: int, locked: list[bool]) -> list[tuple[int, int]] | None:
    """One anchor (content cell) per box such that each box's 3 x 4 block was empty when it was placed, or
    None if the room fills up. ``locked[i]``: box i has a lock tile at x+1 (a loose key does not).

    Anchors (x, y) in [2, n-3] x [2, n-1] are indexed k = (y-2) * xs + (x-2); an anchor is blocked once its
    block x-1..x+2, y-1..y+1 meets a placed tile. Uniform draws over all anchors, rejected while blocked, give
    a uniform choice among the free ones.
    """
    xs, ys = n - 4, n - 2
    blocked = bytearray(xs * ys)
    free = xs * ys
    anchors = []
    for has_lock in locked:
        if free == 0:
            return None
        k = draws.below(xs * ys)
        while blocked[k]:
            k = draws.below(xs * ys)
        ax, ay = 2 + k % xs, 2 + k // xs
        anchors.append((ax, ay))
        right = ax + 2 if has_lock else ax + 1  # block meets (ax, ay) [and (ax+1, ay)] iff ax-2 <= x <= right
        for y in range(max(2, ay - 1), min(n - 1, ay + 1) + 1):
            row = (y - 2) * xs - 2
            for x in range(max(2, ax - 2), min(n - 3, right) + 1):
                if not blocked[row + x]:
                    blocked[row + x] = 1
                    free -= 1
    return anchors


def check_fits(cfg: BoxWorldConfig) -> None:
    """Raise ``ValueError`` unless the largest problem of ``cfg`` can be placed in the room (tried with a fixed
    generator, up to 200 placements), so that a bad configuration fails at construction, not mid-training."""
    boxes = cfg.solution_length[1] + cfg.num_distractors[1] * cfg.distractor_length + cfg.num_backward[1]
    draws = Draws(np.random.default_rng(0))
    if not any(_place(draws, cfg.n, [False] + [True] * boxes) for _ in range(MAX_PLACEMENTS)):
        raise ValueError(f"up to {boxes + 1} boxes (gem box, loose key and distractors) do not fit in a "
                         f"{cfg.n} x {cfg.n} room; use a larger n or fewer boxes")


def generate_classic(rng: np.random.Generator, cfg: BoxWorldConfig) -> Level:
    """One original-BoxWorld level drawn from ``rng``."""
    draws = Draws(rng)
    length, n_forward, n_backward, pairs = sample_problem(draws, cfg)
    n = cfg.n
    for _ in range(MAX_PLACEMENTS):
        anchors = _place(draws, n, [lock != 0 for lock, _ in pairs])
        if anchors is not None:
            break
    else:
        raise RuntimeError(f"could not place {len(pairs)} boxes in a {n} x {n} room; use a larger n")
    boxes = []
    for i, ((lock, content), (x, y)) in enumerate(zip(pairs, anchors, strict=True)):
        if lock == 0:
            boxes.append(Box((content,), ((x, y),)))
        else:
            boxes.append(Box((content,), ((x, y),), (lock,), ((x + 1, y),), distractor=i > length))
    size = n + 2
    cells = layout(size, size, (1, 1, n, n), tuple(boxes))
    while True:  # the room always has free cells in the player's rectangle
        x, y = draws.between(1, n - 1), draws.between(2, n - 1)
        if cells[y * size + x] == 0:
            break
    hues = list(range(N_HUES))
    draws.shuffle(hues)
    info = {
        "solution_length": length,
        "num_distractors": n_forward,
        "num_backward": n_backward,
        "puzzle_type": f"{length}-{n_forward}",
    }
    return classic_level(n, boxes, (x, y), length, hues, info)


def classic_level(
    n: int,
    boxes: list[Box] | tuple[Box, ...],
    player: tuple[int, int],
    solution_length: int,
    hues: list[int] | None = None,
    info: dict | None = None,
) -> Level:
    """An original-BoxWorld level from its parts (also for hand-built test scenes); ``hues[c-1]`` is the hue
    of colour c (default: hue order)."""
    hues = list(range(N_HUES)) if hues is None else hues
    colours = np.zeros((N_COLOURS, 3), dtype=np.uint8)  # [21, 3]; index 20 unused (pycolab uses 19 colours)
    colours[GEM] = GEM_RGB
    colours[1:N_HUES] = CLASSIC_HUES[hues[: N_HUES - 1]]
    colours.setflags(write=False)
    size, board = n + 2, (1, 1, n, n)
    return Level(
        rules="classic",
        height=size,
        width=size,
        board=board,
        player=player,
        boxes=tuple(boxes),
        solution_length=solution_length,
        colours=colours,
        palette=code_palette(colours, CLASSIC_BACKGROUND, CLASSIC_BORDER),
        cells=layout(size, size, board, tuple(boxes)),
        info=dict(info or {"solution_length": solution_length, "num_distractors": 0, "num_backward": 0,
                           "puzzle_type": f"{solution_length}-0"}),
    )
