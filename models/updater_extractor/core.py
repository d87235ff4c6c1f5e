"""The Updater-Extractor as a sequence core (``spec.core``) for the harness's sequence adapters
(``models/adapters.yaml``, shape ``recurrent``): a supervised task's sequence is read in chunks, one chunk per
step, as in the paper's Pathfinder and ListOps experiments (Moskvichev & Liu 2021, §7.3 and Appendix B,
"Experiment 3" and "Experiment 3.B": the input is split into chunks that are fed one per step).

    e     = Linear(x) + PE                       x [B, T, d_model]; PE: sinusoidal position of each element in
                                                 the whole sequence (Vaswani et al. 2017, §3.5)
    w_0   = W0                                   the learned initial world state [B, S, D]
    w_k   = Updater(w_{k-1} + P, chunk_k of e)   k = 1 .. ceil(T / chunk_size), padding masked out
    out   = Extractor(c, w_K + P)[:, 0]          ONE learned "class" query c -> [B, d_model]

The adapter puts the classifier on top of ``out``. The world tokens, Updater and Extractor are the blocks of
``updater_extractor.py``.

Deviations from the paper (also in the README):

* One label per sequence, so the gradient flows through every chunk (full backpropagation through the chunks).
  The paper trains stepwise (Algorithm 1) with the state detached between steps, asking recall queries about
  the pixels seen so far and the class at every step; a supervised run has no such per-step queries.
* Chunks are consecutive runs of ``model.chunk_size`` elements in the adapter's order (raster order for
  images); the paper groups Pathfinder's pixels into random chunks.
* A chunk with no real element (padding after the last real step) leaves the world state unchanged, so a
  sequence's output does not depend on how much padding it has. (In the stream model an empty instruction set
  still updates the state: there, a step is a tick of the world's clock.)
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from models.transformer.core import sinusoidal_positions
from models.updater_extractor.updater_extractor import blocks_from_config


class UpdaterExtractorCore(nn.Module):
    """(x [B, T, in_dim], mask [B, T] bool) -> [B, out_dim]; in_dim = out_dim = model.d_model."""

    def __init__(self, cfg: Any) -> None:
        super().__init__()
        self.in_dim = self.out_dim = d_model = int(cfg.d_model)
        self.chunk_size = int(cfg.chunk_size)
        if self.chunk_size < 1:
            raise ValueError(f"model.chunk_size must be at least 1, got {self.chunk_size}")
        self.world, self.updater, self.extractor = blocks_from_config(cfg)
        self.project = nn.Linear(d_model, d_model)
        self.class_query = nn.Parameter(torch.randn(1, 1, d_model) * 0.02)  # [1, 1, D]

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        batch, steps, d_model = x.shape
        chunks = -(-steps // self.chunk_size)  # ceil
        padded = chunks * self.chunk_size
        e = self.project(x) + sinusoidal_positions(steps, d_model).to(x)  # [B, T, D]
        e = nn.functional.pad(e, (0, 0, 0, padded - steps)).view(batch, chunks, self.chunk_size, d_model)
        real = nn.functional.pad(mask.bool(), (0, padded - steps)).view(batch, chunks, self.chunk_size)
        active = real.any(dim=2)  # [B, K] chunks with at least one real element
        used = active.any(dim=0).nonzero()
        last = int(used.max()) + 1 if used.numel() else 0  # chunks after this one are padding for every row
        state = self.world.start(batch)  # [B, S, D]
        for k in range(last):
            world, positions = self.world.read(state)
            new = self.updater(world, e[:, k], real[:, k], positions)  # [B, S, D]
            state = torch.where(active[:, k, None, None], new, state)
        query = self.class_query.expand(batch, 1, -1)  # [B, 1, D]
        world, positions = self.world.read(state)
        return self.extractor(query, world, positions)[:, 0]  # [B, D]
