"""Uniform draws for many levels at once, from one block of doubles per level.

The batched generators (``gen_bridge_batch``, ``gen_classic_batch``) give each level a fixed number of doubles in
[0, 1) drawn from that level's own ``numpy.random.Generator`` (one ``Generator.random`` call per level), and turn
the columns into integers, coins, shuffles and choices with numpy, for all levels at once. Every level depends
only on its own Generator's stream, so a batch of one level gives the same level as a batch of many.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def uniform_blocks(rngs: Sequence[np.random.Generator], width: int) -> np.ndarray:
    """float64 [len(rngs), width]: ``width`` doubles from each Generator, in order."""
    if len(rngs) == 1:
        return rngs[0].random(width)[None, :]
    return np.stack([rng.random(width) for rng in rngs])


def integers(u: np.ndarray, lo: np.ndarray | int, hi: np.ndarray | int) -> np.ndarray:
    """int64, uniform in [lo, hi] (inclusive) from doubles ``u`` in [0, 1); shapes broadcast."""
    span = np.asarray(hi) - np.asarray(lo) + 1
    return np.asarray(lo) + np.minimum((u * span).astype(np.int64), span - 1)  # u * span can round up to span


def permutations(u: np.ndarray) -> np.ndarray:
    """int64 [k, n]: a uniform random permutation of range(n) per row, from doubles ``u`` [k, n] (argsort of
    independent uniform keys; ties have probability about n^2 / 2^53)."""
    return np.argsort(u, axis=1, kind="stable")


def pick_true(u: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index [k], count [k]): a uniform choice among the True entries of each row of ``mask`` [k, n] from
    doubles ``u`` [k]; rows without a True entry return index 0 and count 0."""
    counts = np.cumsum(mask, axis=1)  # [k, n]
    total = counts[:, -1]
    rank = np.minimum((u * total).astype(np.int64), np.maximum(total - 1, 0))  # [k] in [0, total)
    return np.argmax(counts > rank[:, None], axis=1), total
