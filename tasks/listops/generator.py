"""A seeded ListOps generator with Long Range Arena's semantics, written as token lists.

Semantics (Tay et al., ICLR 2021; google-research/long-range-arena, ``lra_benchmarks/data/listops.py``,
``generate_tree`` and ``main``; ListOps itself: Nangia & Bowman, NAACL SRW 2018):

* A node at depth ``d`` (the root has depth 1) draws r ~ U(0, 1) if ``d < max_depth``, else r = 1. If
  r > 0.25 it is a leaf: a digit ~ U{0..9}, length 1. Otherwise it is an operator ~ U{MIN, MAX, MED, SM}
  with ~U{2..max_args} children, each generated at depth ``d + 1``; its length is 2 (the operator and its
  closing ``]``) plus its children's lengths. The length is exactly the expression's token count.
* A tree is kept iff ``min_length < length < max_length`` (strict), and only if it was not drawn before
  (LRA keeps a set of trees); sampling goes on until ``n_train + n_val + n_test`` distinct trees are kept.
* The label is the expression's value (:mod:`tasks.listops.evaluate`).

LRA's settings: max_depth 10, max_args 10, lengths 500..2000, 96,000 / 2,000 / 2,000 examples.

Differences from LRA's script, none of which changes the distribution of a kept tree: the random numbers
come from NumPy's ``Generator`` (PCG64, seeded) instead of Python's ``random``, read from a buffer; the
operator is drawn before its children instead of after; a tree is abandoned as soon as it has emitted
``max_length`` tokens (it would be rejected anyway); and the splits are cut in the order the distinct trees
were drawn (LRA cuts a Python set in its iteration order, itself arbitrary), so train is always a prefix.

One generated example is a 1-D array of token ids (uint8, ids of :mod:`tasks.listops.evaluate`), its length
``L`` with ``min_length < L < max_length``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.errors import UserError
from tasks.listops.evaluate import END_ID, FIRST_DIGIT_ID, OPERATOR_IDS, evaluate_ids

GENERATOR_VERSION = 1
VALUE_P = 0.25  # LRA's VALUE_P: a node is a leaf when r > VALUE_P
_BUFFER = 1 << 16  # uniforms drawn from the Generator at a time


@dataclass(frozen=True)
class Settings:
    """What a generated data set is a function of (with the seed and the split sizes)."""

    min_length: int = 500
    max_length: int = 2000
    max_depth: int = 10
    max_args: int = 10

    def check(self) -> None:
        """A UserError for settings under which no tree can ever be kept."""
        if self.max_depth < 1 or self.max_args < 2:
            raise UserError(f"ListOps needs max_depth >= 1 and max_args >= 2, got {self.max_depth}, {self.max_args}")
        if self.max_length - self.min_length < 2:
            raise UserError(f"no length lies strictly between task.min_length ({self.min_length}) and "
                            f"task.max_length ({self.max_length})")
        longest = 1
        for _ in range(self.max_depth - 1):  # the longest tree: max_args children at every level
            longest = 2 + self.max_args * longest
        if longest <= self.min_length:
            raise UserError(f"trees of depth <= {self.max_depth} with <= {self.max_args} arguments have at most "
                            f"{longest} tokens, not more than task.min_length ({self.min_length})")

    def check_count(self, n: int) -> None:
        """A UserError, at once, when fewer than ``n`` distinct trees have a length in the window (none at all, as
        no tree has 2 or 3 tokens), where drawing would go on until the draw limit before refusing."""
        counts = distinct_trees(self.max_depth, self.max_args, self.max_length)  # [max_length]
        available = float(counts[self.min_length + 1:].sum())
        if available >= n:
            return
        what = "no tree has" if available == 0 else f"only {available:,.0f} distinct trees have"
        raise UserError(f"ListOps generator: {what} a length strictly between task.min_length ({self.min_length}) "
                        f"and task.max_length ({self.max_length}) at max_depth {self.max_depth} and max_args "
                        f"{self.max_args}, and {n} are wanted (train + val + test); widen the lengths")


COUNT_CAP = 1e150  # counts are capped here, so that a product of two stays finite (what matters is >= n)


def distinct_trees(max_depth: int, max_args: int, below: int) -> np.ndarray:
    """counts [below]: how many distinct trees of each length L < ``below`` the generator can draw (capped at
    :data:`COUNT_CAP`). A tree of height <= h is a digit (10, length 1) or an operator (4) over 2..max_args
    trees of height <= h - 1, of length 2 plus theirs; the root's height is at most ``max_depth``."""
    leaves = np.zeros(below)
    leaves[1:2] = 10.0
    counts = leaves
    for _ in range(max_depth - 1):
        children, total = counts, np.zeros(below)
        for _ in range(2, max_args + 1):  # sequences of k children: the k-fold convolution of the counts
            children = np.minimum(np.convolve(children, counts)[:below], COUNT_CAP)
            total += children
        operators = np.zeros(below)
        operators[2:] = 4.0 * total[:below - 2]
        counts = np.minimum(leaves + operators, COUNT_CAP)
    return counts


class Uniforms:
    """U(0, 1) numbers from a seeded NumPy Generator, handed out one at a time from a buffer (the same stream
    however they are consumed)."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.buffer: list[float] = []
        self.index = 0

    def topped_up(self) -> list[float]:
        """The unread numbers followed by a fresh draw from the Generator (the stream goes on unchanged)."""
        self.buffer = self.buffer[self.index:] + self.rng.random(_BUFFER).tolist()
        self.index = 0
        return self.buffer

    def __call__(self) -> float:
        if self.index >= len(self.buffer):
            self.topped_up()
        value = self.buffer[self.index]
        self.index += 1
        return value


def generate_tree(uniforms: Uniforms, max_depth: int = 10, max_args: int = 10, depth: int = 1,
                  give_up_at: int | None = None) -> list[int] | None:
    """One tree as token ids in prefix order (``[op`` children ``]``), generated iteratively; its length is
    ``len`` of the list. ``None`` once it has ``give_up_at`` tokens (it would be too long to keep)."""
    limit = give_up_at if give_up_at is not None else 1 << 62
    tokens: list[int] = []
    remaining: list[int] = []  # children still to generate, per open operator (its depth = depth + index)
    buffer, index = uniforms.buffer, uniforms.index  # the stream, read inline (a method call per number is slow)
    spread = max_args - 1
    try:
        while True:
            if index + 3 > len(buffer):  # a node reads at most 3 numbers
                uniforms.index = index
                buffer, index = uniforms.topped_up(), 0
            if depth + len(remaining) < max_depth and buffer[index] <= VALUE_P:  # an operator node
                remaining.append(2 + int(buffer[index + 1] * spread))  # U{2..max_args} children
                tokens.append(OPERATOR_IDS[int(buffer[index + 2] * 4)])
                index += 3
                if len(tokens) >= limit:
                    return None
                continue
            if depth + len(remaining) < max_depth:
                index += 1  # r was drawn
            tokens.append(FIRST_DIGIT_ID + int(buffer[index] * 10))  # a leaf: U{0..9}
            index += 1
            while remaining:  # this node is complete: close every operator it completes
                remaining[-1] -= 1
                if remaining[-1]:
                    break
                remaining.pop()
                tokens.append(END_ID)
            if not remaining:
                return tokens
            if len(tokens) >= limit:
                return None
    finally:
        uniforms.buffer, uniforms.index = buffer, index


def generate(n: int, seed: int, settings: Settings, max_draws: int | None = None) -> list[np.ndarray]:
    """``n`` distinct trees with ``min_length < length < max_length``, in the order drawn: a list of uint8
    arrays of token ids [L]. A UserError if ``max_draws`` trees (default 2,000 per example + 100,000) keep
    fewer (settings under which such trees are too rare, or too few distinct ones exist)."""
    settings.check()
    settings.check_count(n)
    uniforms = Uniforms(seed)
    limit = max_draws if max_draws is not None else 2000 * n + 100_000
    seen: set[bytes] = set()
    kept: list[np.ndarray] = []
    draws = 0
    while len(kept) < n:
        draws += 1
        if draws > limit:
            raise UserError(f"ListOps generator: {draws - 1} trees drawn, only {len(kept)} of the {n} wanted kept "
                            f"(lengths strictly between {settings.min_length} and {settings.max_length}, "
                            f"max_depth {settings.max_depth}, max_args {settings.max_args}); widen the lengths")
        tokens = generate_tree(uniforms, settings.max_depth, settings.max_args, give_up_at=settings.max_length)
        if tokens is None or not settings.min_length < len(tokens) < settings.max_length:
            continue
        key = bytes(tokens)
        if key in seen:
            continue
        seen.add(key)
        kept.append(np.frombuffer(key, dtype=np.uint8))
    return kept


def generate_splits(sizes: dict[str, int], seed: int, settings: Settings) -> dict[str, dict[str, np.ndarray]]:
    """Distinct trees for each split, cut in the order of ``sizes`` (e.g. train, val, test) from one stream, so
    no expression occurs in two splits. Each split: ``tokens`` uint8 [sum L] (the expressions one after another),
    ``lengths`` int64 [N], ``labels`` int64 [N]."""
    trees = generate(sum(sizes.values()), seed, settings)
    splits, start = {}, 0
    for name, size in sizes.items():
        part = trees[start:start + size]
        start += size
        splits[name] = {
            "tokens": np.concatenate(part) if part else np.zeros(0, dtype=np.uint8),
            "lengths": np.array([len(t) for t in part], dtype=np.int64),
            "labels": np.array([evaluate_ids(t) for t in part], dtype=np.int64),
        }
    return splits
