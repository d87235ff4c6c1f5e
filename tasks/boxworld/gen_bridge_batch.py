"""Bridge-BoxWorld levels for many boards at once (numpy over levels), with the rules of ``gen_bridge``.

Same puzzle as the per-level generator ``gen_bridge.generate_bridge`` (paper §3.2 and §5; ``generatePuzzle`` in
dmurfet/2simplicialtransformer, env/bridge_boxworld.py), drawn differently: each level takes one block of
:func:`block_width` doubles from its own Generator, and every choice is a column of that block:

* hues: a uniform permutation of the 20 hues (argsort of 20 doubles);
* L ~ U{min..max}, decoy paths ~ U{0..max_decoy_paths};
* slots: the gem slot uniform among the legal ones, the other slots in uniform random order (argsort), the slot
  below the gem box last (it holds the gem's second row);
* the bridge coin, its source b ~ U{1..L} and target c ~ U{L+1..2L};
* per decoy path: its first lock (a random path colour) and its length U{1..max_decoy_length}.

Box m of a level sits in the m-th slot of that order: box 0 is the gem box; with ``multi_lock``, box i
(1 <= i <= 2L) holds colour i behind lock i+1, except the loose keys L and 2L; then the bridge, then the decoy
boxes with fresh colours, each chained to the previous one except at the start of a path.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tasks.boxworld.batch_draws import integers, permutations, uniform_blocks
from tasks.boxworld.config import BridgeBoxWorldConfig
from tasks.boxworld.level import GEM, N_COLOURS, code_palettes
from tasks.boxworld.level_batch import NONE, LevelBatch, puzzle_types
from tasks.boxworld.palette import BRIDGE_EMPTY, BRIDGE_HUES, BRIDGE_INVENTORY_EMPTY, GEM_RGB, N_HUES

_HUES, _LENGTH, _DECOYS, _GEM_SLOT, _SLOTS = 0, N_HUES, N_HUES + 1, N_HUES + 2, N_HUES + 3  # block columns


def block_width(cfg: BridgeBoxWorldConfig) -> int:
    """Doubles per level: hues, L, decoy paths, gem slot, slot keys, bridge (3), decoy paths (2 each)."""
    return _SLOTS + len(cfg.slots()) + 3 + 2 * cfg.max_decoy_paths


def generate_bridge_batch(rngs: Sequence[np.random.Generator], cfg: BridgeBoxWorldConfig) -> LevelBatch:
    """One bridge-BoxWorld level per Generator in ``rngs`` (each level reads only its own Generator)."""
    u = uniform_blocks(rngs, block_width(cfg))  # [k, K]
    k = len(u)
    rows = np.arange(k)
    length = integers(u[:, _LENGTH], cfg.min_sol_length, cfg.max_sol_length)  # [k]
    n_decoy = integers(u[:, _DECOYS], 0, cfg.max_decoy_paths)  # [k]
    slots = np.array(cfg.slots(), dtype=np.int64)  # [S, 2] (x, y)
    width = cfg.num_cols + 1
    keys = u[:, _SLOTS : _SLOTS + len(slots)].copy()  # [k, S]
    if cfg.multi_lock:  # the gem slot first, the slot below it last
        gem_slots = np.array([cfg.slots().index(s) for s in cfg.gem_slots()], dtype=np.int64)
        gem = gem_slots[integers(u[:, _GEM_SLOT], 0, len(gem_slots) - 1)]  # [k]
        below = np.array([cfg.slots().index((x, y + 2)) if (x, y) in cfg.gem_slots() else 0
                          for x, y in cfg.slots()], dtype=np.int64)[gem]
        keys[rows, gem], keys[rows, below] = -1.0, 2.0
    order = slots[permutations(keys)]  # [k, S, 2] slot of box m
    anchor = order[:, :, 1] * width + order[:, :, 0]  # [k, S]

    box = np.arange(len(slots))[None, :]  # [1, S] box index m
    top = 2 * length if cfg.multi_lock else length  # [k] last path colour
    content = np.where(box <= top[:, None], box, NONE)  # path boxes hold their index
    lock = np.where((box < top[:, None]) & (box != length[:, None]), box + 1, NONE)  # loose keys L (and 2L)
    used = top + 1  # [k] boxes so far
    distractor = np.zeros(content.shape, dtype=np.bool_)
    source = target = np.zeros(k, dtype=np.int64)
    at = _SLOTS + len(slots)
    if cfg.multi_lock and cfg.has_bridge:
        bridge = u[:, at] < cfg.bridge_prob  # [k]
        source = np.where(bridge, integers(u[:, at + 1], 1, length), 0)
        target = np.where(bridge, integers(u[:, at + 2], length + 1, 2 * length), 0)
        here = bridge[:, None] & (box == used[:, None])  # [k, S]
        content = np.where(here, target[:, None], content)
        lock = np.where(here, source[:, None], lock)
        distractor |= here
        used = used + bridge
    if cfg.max_decoy_paths:
        content, lock, distractor = _decoys(u[:, at + 3 :], n_decoy, top, used, content, lock, distractor, cfg)
    lower_lock = np.full(k, NONE, dtype=np.int64)
    if cfg.multi_lock:
        lower_lock = length + 1
    colours = np.empty((k, N_COLOURS, 3), dtype=np.uint8)
    colours[:, GEM] = GEM_RGB
    colours[:, 1:] = BRIDGE_HUES[permutations(u[:, _HUES : _HUES + N_HUES])]
    info = {
        "solution_length": length,
        "has_bridge": source > 0,
        "bridge_source": source,
        "bridge_target": target,
        "puzzle_type": puzzle_types((cfg.max_sol_length + 1,) * 2 + (2 * cfg.max_sol_length + 1,))[
            length, source, target],
        "num_decoy_paths": n_decoy,
    }
    return LevelBatch(
        rules="bridge",
        height=cfg.num_rows,
        width=width,
        board=(0, 0, cfg.num_cols - 1, cfg.num_rows - 1),
        content=content,
        lock=lock,
        anchor=anchor,
        distractor=distractor,
        lower_lock=lower_lock,
        player=np.zeros(k, dtype=np.int64),  # (0, 0)
        solution_length=length,
        colours=colours,
        palette=code_palettes(colours, BRIDGE_EMPTY, BRIDGE_INVENTORY_EMPTY),
        info=info,
    )


def _decoys(
    u: np.ndarray,
    n_decoy: np.ndarray,
    top: np.ndarray,
    used: np.ndarray,
    content: np.ndarray,
    lock: np.ndarray,
    distractor: np.ndarray,
    cfg: BridgeBoxWorldConfig,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Add the decoy paths: path p (p < n_decoy) starts with a lock of a random path colour U{1..top} and
    chains U{1..max_decoy_length} boxes of fresh colours top+1, top+2, ...; u [k, 2P] holds their doubles."""
    paths = cfg.max_decoy_paths
    first = integers(u[:, :paths], 1, top[:, None])  # [k, P] first lock of each path
    sizes = integers(u[:, paths : 2 * paths], 1, cfg.max_decoy_length)  # [k, P]
    sizes = np.where(np.arange(paths)[None, :] < n_decoy[:, None], sizes, 0)
    starts = np.cumsum(sizes, axis=1) - sizes  # [k, P] index of each path's first decoy box
    d = np.arange(content.shape[1])[None, :] - used[:, None]  # [k, S] decoy index of box m
    is_decoy = (d >= 0) & (d < sizes.sum(1)[:, None])
    colour = top[:, None] + 1 + d  # fresh colours in order
    start = (d[:, :, None] == starts[:, None, :]) & (sizes[:, None, :] > 0)  # [k, S, P]
    first_lock = (start * first[:, None, :]).sum(2)  # [k, S] the path's first lock, 0 elsewhere
    decoy_lock = np.where(start.any(2), first_lock, colour - 1)
    return (np.where(is_decoy, colour, content), np.where(is_decoy, decoy_lock, lock), distractor | is_decoy)
