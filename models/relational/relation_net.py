"""Relation-net central module (Santoro et al., NeurIPS 2017, as the PrediNet paper's RN baseline:
Shanahan et al., ICML 2020, §4 and Table S2; ``RelationNet`` in google-deepmind/deepmind-research,
PrediNet/PrediNet.ipynb):

    R* = mean_{i, j} ReLU(W_2 ReLU(W_1 [e_i, e_j]))      over all N^2 ordered pairs, i = j included
    W_1 [2D -> 256], W_2 [256 -> 640], no biases (Table S2 "Bias: No"; the notebook's RelationNet).

The pair MLP's first layer is evaluated without building the [B, N^2, 2D] pair tensor: with
W_1 = [W_a | W_b] split along its input, W_1 [e_i, e_j] = W_a e_i + W_b e_j, a broadcast sum of two
per-entity products. This is the same function (and gradient) in N times fewer multiplications;
e_i is the notebook's "sender" (first half of the pair) and e_j the "receiver". The mean is taken as
sum / N^2, which saves its backward a division over the [B, N, N, 640] tensor.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class RelationNet(nn.Module):
    """entities [B, N, D] -> [B, central_output]: pair MLP averaged over every ordered pair."""

    def __init__(self, n_entities: int, d_entity: int, cfg: Any) -> None:
        super().__init__()
        self.d_entity = d_entity
        self.out_dim = int(cfg.central_output)
        self.pair_hidden = nn.Linear(2 * d_entity, int(cfg.central_hidden), bias=False)  # W_1
        self.pair_output = nn.Linear(int(cfg.central_hidden), self.out_dim, bias=False)  # W_2

    def forward(self, entities: torch.Tensor) -> torch.Tensor:
        w_sender = self.pair_hidden.weight[:, : self.d_entity]  # W_a [H, D]
        w_receiver = self.pair_hidden.weight[:, self.d_entity :]  # W_b [H, D]
        sender = entities @ w_sender.T  # [B, N, H]
        receiver = entities @ w_receiver.T  # [B, N, H]
        hidden = torch.relu(sender[:, :, None, :] + receiver[:, None, :, :])  # [B, N_i, N_j, H]
        pairs = torch.relu(self.pair_output(hidden))  # [B, N, N, central_output]
        return pairs.sum(dim=(1, 2)) / (pairs.shape[1] * pairs.shape[2])  # mean over pairs, [B, central_output]
