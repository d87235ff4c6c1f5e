"""MemN2N's random noise and learning-rate schedule (Sukhbaatar, Szlam, Weston & Fergus 2015, §4.1 and §4.2).

Random noise (§4.1, "Learning time invariance by injecting random noise": about 10% of empty memories added to
the stories in training) is drawn as the authors' code does (facebookarchive/MemNN, MemN2N-babi-matlab/train.m,
``randomize_time``): a story of n statements takes a number of blanks uniform on {0, ..., ceil(0.1 n)}, and its
statements take n distinct temporal indices chosen uniformly among the n + blanks, in order.

For n = 9 there are 0 or 1 blanks, each half the time; with one blank, the missing index is uniform on 0..9. So
the indices are exactly 0..8 with probability 1/2 + 1/2 * 1/10 = 0.55, and each of 0..9 is left out with
probability 0.05 (9 itself with 0.5 * 0.1 as well, since 0..8 leaves out 9 whenever there is no blank)."""

from __future__ import annotations

import torch

from models.memn2n.memory import time_index
from tests.test_memn2n import make


def test_random_noise_draws_blanks_and_their_places_uniformly():
    torch.manual_seed(0)
    draws, n = 4000, 9
    real = torch.ones(draws, n, dtype=torch.bool)
    index = time_index(real, noise=0.1, rows=50, training=True)  # [draws, 9]
    assert bool((index[:, 1:] > index[:, :-1]).all()) and int(index.max()) <= n
    missing = torch.tensor(45) - index.sum(dim=1)  # the left-out index of 0..9 (9 when there is no blank)
    no_gap = (index == torch.arange(n)).all(dim=1)
    assert abs(float(no_gap.float().mean()) - 0.55) < 0.035
    gapped = missing[index[:, -1] == n]  # draws with one blank
    counts = torch.bincount(gapped, minlength=n + 1)[:n]  # the blank's place among 0..8
    assert abs(len(gapped) / draws - 0.45) < 0.035
    assert bool((counts > 0.6 * len(gapped) / 10).all()) and bool((counts < 1.4 * len(gapped) / 10).all())


def test_random_noise_can_reach_the_most_blanks():
    """n = 20: ceil(0.1 n) = 2 blanks at most, so the largest index is 19, 20 or 21 and never more."""
    torch.manual_seed(1)
    real = torch.ones(600, 20, dtype=torch.bool)
    largest = time_index(real, noise=0.1, rows=50, training=True)[:, -1]
    assert set(largest.tolist()) == {19, 20, 21}


def test_the_learning_rate_halvings_restart_after_linear_start():
    """§4.2: the learning rate is halved every 25 epochs; linear start runs at a constant rate, and after it the
    full schedule starts again from its first epoch (the authors' code, MemN2N-babi-matlab/config_babi.m:
    ``ls_nepochs = 20`` without decay, then the ordinary schedule). With 20 linear-start epochs: factor 1 for
    epochs 0-44, 1/2 for 45-69, 1/4 from 70."""
    model = make(linear_start_epochs=20, halve_lr_every=25)
    factors = {}
    for epoch in (0, 19, 20, 44, 45, 69, 70):
        model.schedule.epochs = epoch
        factors[epoch] = model.schedule.lr_factor()
    assert factors == {0: 1.0, 19: 1.0, 20: 1.0, 44: 1.0, 45: 0.5, 69: 0.5, 70: 0.25}
