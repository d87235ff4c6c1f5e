"""Which sentences MemN2N stores and the temporal index of each (Sukhbaatar et al. 2015, §4.1, temporal encoding
and random noise; §4.2: the memory holds the 50 most recent sentences).

Memory slot i holds the (i+1)-th most recent statement: §4.1 indexes sentences in reverse order, by their
distance from the question, so x_1 is the story's last sentence. Its temporal index (the row of T_A and T_C it
reads, 0-based here) is i.

Random noise (RN, §4.1): in training, about 10% of empty memories are added to each story. As the
authors' code does (facebookarchive/MemNN, MemN2N-babi-matlab/train.m, ``randomize_time``), the empty
memories are gaps in the temporal indices, not extra slots: a story of n statements draws a number of blanks
uniformly from {0, ..., ceil(0.1 n)}, its n statements take n distinct indices chosen uniformly at random
among n + blanks (in the statements' order, the most recent lowest), and indices past the temporal table's
last row share that row.
"""

from __future__ import annotations

import torch


def recent_memories(story: torch.Tensor, story_len: torch.Tensor, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The most recent ``size`` statements, newest first.

    story [B, T, W] (statements in story order, the real ones first), story_len [B]
    -> tokens [B, M, W] (slot i: the (i+1)-th most recent statement; 0 past the story), real [B, M] bool,
    with M = min(size, T).
    """
    batch, steps, width = story.shape
    slots = min(size, steps)
    index = story_len.unsqueeze(1) - 1 - torch.arange(slots, device=story.device)  # [B, M] statement of each slot
    real = index >= 0  # [B, M]
    gathered = story.gather(1, index.clamp(min=0).unsqueeze(-1).expand(batch, slots, width))  # [B, M, W]
    return gathered * real.unsqueeze(-1), real


def noisy_time_index(real: torch.Tensor, noise: float, rows: int) -> torch.Tensor:
    """Temporal indices with random empty memories (RN): real [B, M] bool (the first n_b slots) -> [B, M] long.

    Slot i of story b gets the i-th smallest of n_b distinct indices drawn from 0 .. n_b + blanks_b - 1, clamped to
    ``rows - 1``; slots past the story get ``rows - 1`` (they are masked out of the attention).
    """
    batch, slots = real.shape
    device = real.device
    counts = real.sum(dim=1)  # [B] n_b
    most_blanks = torch.ceil(counts.to(torch.float64) * noise).long()  # [B]
    blanks = (torch.rand(batch, device=device, dtype=torch.float64) * (most_blanks + 1)).long()  # [B] in 0..most
    totals = counts + blanks  # [B] positions to choose from
    width = max(int(totals.max()) if batch else 0, slots)
    positions = torch.arange(width, device=device)  # [S]
    keys = torch.rand(batch, width, device=device).masked_fill(positions >= totals.unsqueeze(1), 2.0)  # [B, S]
    order = keys.argsort(dim=1)  # [B, S]: its first totals_b entries are a random permutation of 0..totals_b-1
    picked = torch.where(positions < counts.unsqueeze(1), order, width)  # [B, S]: the first n_b of them
    chosen = picked.sort(dim=1).values[:, :slots]  # [B, M] ascending; slots past n_b hold `width`
    return chosen.clamp(max=rows - 1)


def time_index(real: torch.Tensor, noise: float, rows: int, training: bool) -> torch.Tensor:
    """Slot i's temporal index: i at evaluation (and with ``noise`` 0), RN's random gaps in training. [B, M] long."""
    if training and noise > 0:
        return noisy_time_index(real, noise, rows)
    slots = torch.arange(real.shape[1], device=real.device).clamp(max=rows - 1)  # [M]
    return slots.unsqueeze(0).expand_as(real)

