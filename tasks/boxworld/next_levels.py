"""Each board's next level, generated ahead in batches, so that an autoreset only copies arrays.

A batched env resets a few boards per step; generating their levels there would pay numpy's per-call cost for a
handful of levels every step. Instead every board holds its next level, already encoded as the arrays the env
loads (cell codes, take tables, pixels, palette, info). Taking a board's next level marks it *used*; the used
boards are refilled together, with one batched generator call, once there are ``refill_at`` of them (or at once
when a used board must reset again).

Board i's levels are still drawn in order from board i's own Generator (the next level is drawn right after the
current one), and the generator gives each level from its own Generator only, so the levels do not depend on
which boards were refilled together.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

Encoded = dict[str, np.ndarray]  # array name -> values [k, ...] for k levels


class NextLevels:
    """The next level of each of ``num_envs`` boards; ``encode(rngs)`` generates one level per Generator."""

    def __init__(
        self,
        num_envs: int,
        encode: Callable[[Sequence[np.random.Generator]], Encoded],
        rng: Callable[[int], np.random.Generator],
        refill_at: int,
    ) -> None:
        self._encode = encode
        self._rng = rng  # board -> its Generator
        self._refill_at = max(1, refill_at)
        self._used = np.ones(num_envs, dtype=np.bool_)  # [B] no next level stored yet
        self._count = num_envs  # boards used
        self._store: Encoded = {}

    def forget(self, boards: np.ndarray) -> None:
        """Drop the stored next levels of ``boards`` (their Generators were re-seeded)."""
        self._used[boards] = True
        self._count = int(np.count_nonzero(self._used))

    def take(self, boards: np.ndarray) -> Encoded:
        """The next levels of ``boards`` (int [k]): name -> values [k, ...]; they become used."""
        if np.count_nonzero(self._used[boards]):
            self._refill()
        taken = {name: values[boards] for name, values in self._store.items()}
        self._used[boards] = True
        self._count += len(boards)  # none of them was used before
        if self._count >= self._refill_at:
            self._refill()
        return taken

    def _refill(self) -> None:
        boards = np.flatnonzero(self._used)
        fresh = self._encode([self._rng(int(b)) for b in boards])
        if not self._store:
            num_envs = len(self._used)
            self._store = {name: np.empty((num_envs, *v.shape[1:]), dtype=v.dtype) for name, v in fresh.items()}
        for name, values in fresh.items():
            self._store[name][boards] = values
        self._used[boards] = False
        self._count = 0
