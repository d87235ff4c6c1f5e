"""Level generator of bridge BoxWorld (paper §3.2 and §5; ``generatePuzzle`` in dmurfet/2simplicialtransformer,
env/bridge_boxworld.py).

Colour indices (0 = gem) on a ``num_rows`` x ``num_cols`` board, boxes only in the slots x in {1, 4, 7},
y in {1, 3, 5} (content at (x, y), lock at (x+1, y)); the player starts at (0, 0).

* Path 1: box k (k = 0..L-1) holds colour k behind lock k+1 (box 0 is the gem box); loose key L.
* ``multi_lock`` (the paper's env): the gem box is two rows high, in a slot with x <= cols-3 and y <= rows-3
  whose lower neighbour slot is removed; its second row holds the gem behind lock L+1. Path 2: boxes holding
  colour c behind lock c+1 for c = L+1..2L-1; loose key 2L. Two disjoint paths of L boxes each, sharing the gem
  box, so getting the gem takes 2L-1 box openings.
* Bridge (``multi_lock`` and ``has_bridge``, probability ``bridge_prob`` = 0.5): source b ~ U{1..L} (a path-1
  colour), target c ~ U{L+1..2L} (a path-2 colour); a box holding c behind lock b. The paper's puzzle type is
  (L, b, c) (§5: indices increase with the distance from the gem); we report (L, 0, 0) without a bridge.
* Decoy paths (0 in the paper): ``U{0..max_decoy_paths}`` chains of U{1..max_decoy_length} boxes, the first
  lock of a random path colour (1..L, or 1..2L with ``multi_lock``), then fresh colours.

The reference shuffles all slots until the first is a legal gem slot; we draw the gem slot uniformly among the
legal ones and shuffle the rest, which is the same distribution. Hues: the 20 HSV colours shuffled, white gem at
index 0 (``createColoursArrayHSV`` in dmurfet/2simplicialtransformer, notebooks/training.ipynb).
"""

from __future__ import annotations

import numpy as np

from tasks.boxworld.config import BridgeBoxWorldConfig
from tasks.boxworld.draws import Draws
from tasks.boxworld.level import GEM, N_COLOURS, Box, Level, code_palette, layout
from tasks.boxworld.palette import BRIDGE_EMPTY, BRIDGE_HUES, BRIDGE_INVENTORY_EMPTY, GEM_RGB, N_HUES


def _box(content: int, slot: tuple[int, int], lock: int | None = None, distractor: bool = False) -> Box:
    x, y = slot
    if lock is None:
        return Box((content,), ((x, y),))
    return Box((content,), ((x, y),), (lock,), ((x + 1, y),), distractor)


def generate_bridge(rng: np.random.Generator, cfg: BridgeBoxWorldConfig) -> Level:
    """One bridge-BoxWorld level drawn from ``rng``."""
    draws = Draws(rng)
    hues = list(range(N_HUES))
    draws.shuffle(hues)
    length = draws.between(cfg.min_sol_length, cfg.max_sol_length)
    n_decoy_paths = draws.between(0, cfg.max_decoy_paths)
    slots = cfg.slots()
    if cfg.multi_lock:
        gem_slots = cfg.gem_slots()
        gem = gem_slots[draws.below(len(gem_slots))]
        rest = [s for s in slots if s != gem and s != (gem[0], gem[1] + 2)]
        draws.shuffle(rest)
        slots = [gem, *rest]
    else:
        draws.shuffle(slots)
    boxes: list[Box] = []
    gx, gy = slots[0]
    if cfg.multi_lock:
        boxes.append(Box((GEM, GEM), ((gx, gy), (gx, gy + 1)), (1, length + 1), ((gx + 1, gy), (gx + 1, gy + 1))))
    else:
        boxes.append(_box(GEM, slots[0], 1))
    boxes += [_box(k, slots[k], k + 1) for k in range(1, length)]
    boxes.append(_box(length, slots[length]))  # loose key of path 1
    used, colour = length + 1, length + 1
    if cfg.multi_lock:
        for c in range(length + 1, 2 * length):
            boxes.append(_box(c, slots[used], c + 1))
            used += 1
        boxes.append(_box(2 * length, slots[used]))  # loose key of path 2
        used, colour = used + 1, 2 * length + 1
    source = target = 0
    if cfg.multi_lock and cfg.has_bridge and draws.coin(cfg.bridge_prob):
        source, target = draws.between(1, length), draws.between(length + 1, 2 * length)
        boxes.append(_box(target, slots[used], source, distractor=True))
        used += 1
    top = 2 * length if cfg.multi_lock else length
    for _ in range(n_decoy_paths):
        lock = draws.between(1, top)
        for _ in range(draws.between(1, cfg.max_decoy_length)):
            boxes.append(_box(colour, slots[used], lock, distractor=True))
            lock, colour, used = colour, colour + 1, used + 1
    info = {
        "solution_length": length,
        "has_bridge": source > 0,
        "bridge_source": source,
        "bridge_target": target,
        "puzzle_type": f"{length}-{source}-{target}",
        "num_decoy_paths": n_decoy_paths,
    }
    return bridge_level(cfg.num_rows, cfg.num_cols, boxes, length, hues, info)


def bridge_level(
    num_rows: int,
    num_cols: int,
    boxes: list[Box] | tuple[Box, ...],
    solution_length: int,
    hues: list[int] | None = None,
    info: dict | None = None,
    player: tuple[int, int] = (0, 0),
) -> Level:
    """A bridge-BoxWorld level from its parts (also for hand-built test scenes); ``hues[c-1]`` is the hue of
    colour c (default: hue order)."""
    hues = list(range(N_HUES)) if hues is None else hues
    colours = np.zeros((N_COLOURS, 3), dtype=np.uint8)  # [21, 3]
    colours[GEM] = GEM_RGB
    colours[1:] = BRIDGE_HUES[hues]
    colours.setflags(write=False)
    board = (0, 0, num_cols - 1, num_rows - 1)
    height, width = num_rows, num_cols + 1  # + the inventory column
    if info is None:
        info = {"solution_length": solution_length, "has_bridge": False, "bridge_source": 0, "bridge_target": 0,
                "puzzle_type": f"{solution_length}-0-0", "num_decoy_paths": 0}
    return Level(
        rules="bridge",
        height=height,
        width=width,
        board=board,
        player=player,
        boxes=tuple(boxes),
        solution_length=solution_length,
        colours=colours,
        palette=code_palette(colours, BRIDGE_EMPTY, BRIDGE_INVENTORY_EMPTY),
        cells=layout(height, width, board, tuple(boxes)),
        info=dict(info),
    )
