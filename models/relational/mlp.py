"""MLP baselines' central modules (Shanahan et al., ICML 2020, §4 and Table S2; ``ConvNetMLP1L`` and
``ConvNetMLP2L`` in google-deepmind/deepmind-research, PrediNet/PrediNet.ipynb):

    MLP1: R* = ReLU(W flatten(L) + b)                              [B, N*D] -> [B, 640]
    MLP2: R* = ReLU(W_2 ReLU(W_1 flatten(L) + b_1) + b_2)          [B, N*D] -> [B, 1024] -> [B, 640]

Every layer carries a bias (Table S2 "Bias: Yes", MLP2 "Yes (both)"; the notebook's ConvNetMLP1L / ConvNetMLP2L).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class MLP1(nn.Module):
    """entities [B, N, D] -> [B, central_output]: one fully connected ReLU layer on the flattened entities."""

    def __init__(self, n_entities: int, d_entity: int, cfg: Any) -> None:
        super().__init__()
        self.out_dim = int(cfg.central_output)
        self.fc = nn.Linear(n_entities * d_entity, self.out_dim)

    def forward(self, entities: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(entities.reshape(entities.shape[0], -1)))


class MLP2(nn.Module):
    """entities [B, N, D] -> [B, central_output]: two fully connected ReLU layers (hidden central_hidden)."""

    def __init__(self, n_entities: int, d_entity: int, cfg: Any) -> None:
        super().__init__()
        self.out_dim = int(cfg.central_output)
        self.fc1 = nn.Linear(n_entities * d_entity, int(cfg.central_hidden))
        self.fc2 = nn.Linear(int(cfg.central_hidden), self.out_dim)

    def forward(self, entities: torch.Tensor) -> torch.Tensor:
        hidden = torch.relu(self.fc1(entities.reshape(entities.shape[0], -1)))  # [B, central_hidden]
        return torch.relu(self.fc2(hidden))  # [B, central_output]
