"""Fast uniform draws for level generation from a seeded ``numpy.random.Generator``.

A level needs a few dozen small random integers; one ``Generator.integers`` call costs about 2 us, so we draw
doubles in blocks (one Generator call per block) and turn each into an integer in Python. The stream is a pure
function of the Generator's state, so the same seed gives the same levels in the single and the batched envs.
"""

from __future__ import annotations

import numpy as np

_BLOCK = 64


class Draws:
    """Uniform integers, coins and shuffles consuming ``rng.random(64)`` blocks of doubles in [0, 1)."""

    __slots__ = ("_rng", "_buf", "_i")

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._buf: list[float] = []
        self._i = 0

    def uniform(self) -> float:
        """One double in [0, 1)."""
        if self._i == len(self._buf):
            self._buf = self._rng.random(_BLOCK).tolist()
            self._i = 0
        u = self._buf[self._i]
        self._i += 1
        return u

    def below(self, n: int) -> int:
        """Uniform integer in [0, n)."""
        k = int(self.uniform() * n)
        return k if k < n else n - 1  # u * n can round up to n for u just below 1

    def between(self, lo: int, hi: int) -> int:
        """Uniform integer in [lo, hi] (inclusive)."""
        return lo + self.below(hi - lo + 1)

    def coin(self, p: float) -> bool:
        """True with probability p."""
        return self.uniform() < p

    def shuffle(self, items: list) -> None:
        """Fisher-Yates shuffle in place."""
        for i in range(len(items) - 1, 0, -1):
            j = self.below(i + 1)
            items[i], items[j] = items[j], items[i]
