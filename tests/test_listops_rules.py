"""ListOps generator (Long Range Arena, Tay et al., ICLR 2021; google-research/long-range-arena,
``lra_benchmarks/data/listops.py``, ``generate_tree`` and ``main``): the distributions of a node, and the set of
trees kept, checked on small settings.

* A node below ``max_depth`` is a leaf when r > VALUE_P = 0.25, so the root is a leaf with probability 0.75.
* A leaf is ``random.choice(VALUES)``: every digit 0-9 alike; an operator is ``random.choice(OPERATORS)``: MIN,
  MAX, MED and SM alike, with ``random.randint(2, max_args)`` arguments, both ends included.
* ``main`` keeps a set of trees: no tree is kept twice.
"""

from __future__ import annotations

import itertools

import numpy as np

from tasks.listops.evaluate import END_ID, FIRST_DIGIT_ID, OPERATOR_IDS
from tasks.listops.generator import Settings, Uniforms, generate, generate_tree


def arguments_and_tokens(trees: list[list[int]]) -> tuple[list[int], list[int], list[int]]:
    """Every operator's argument count, every operator id and every digit in ``trees``."""
    counts, operators, digits = [], [], []
    for tree in trees:
        stack: list[int] = []
        for token in tree:
            if token in OPERATOR_IDS:
                operators.append(token)
                stack.append(0)
                continue
            if token == END_ID:
                counts.append(stack.pop())
            else:
                digits.append(token - FIRST_DIGIT_ID)
            if stack:
                stack[-1] += 1
    return counts, operators, digits


def test_node_distributions_follow_lra() -> None:
    uniforms = Uniforms(1)
    trees = [generate_tree(uniforms, max_depth=3, max_args=4) for _ in range(6000)]
    assert abs(np.mean([len(t) == 1 for t in trees]) - 0.75) < 0.025  # the root: a leaf when r > 0.25
    counts, operators, digits = arguments_and_tokens(trees)
    for values, choices in ((counts, range(2, 5)), (operators, OPERATOR_IDS), (digits, range(10))):
        frequencies = np.array([values.count(c) for c in choices]) / len(values)
        assert np.abs(frequencies - 1 / len(choices)).max() < 0.03, (choices, frequencies)


def test_no_tree_is_kept_twice() -> None:
    """Between 3 and 5 tokens at depth 2 and two arguments lie exactly the 4 x 10 x 10 trees [op d d ]: asked for
    all 400, the generator must keep each once."""
    settings = Settings(min_length=3, max_length=5, max_depth=2, max_args=2)
    kept = {tuple(tree.tolist()) for tree in generate(400, 0, settings)}
    every = {(op, FIRST_DIGIT_ID + a, FIRST_DIGIT_ID + b, END_ID)
             for op, a, b in itertools.product(OPERATOR_IDS, range(10), range(10))}
    assert kept == every
