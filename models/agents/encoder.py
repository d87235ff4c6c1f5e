"""Observation -> entities, the input stage of the BoxWorld agents of Clift et al., ICLR 2020, §4.1
(dmurfet/2simplicialtransformer, agent/agent_relational.py and agent/agent_simplicial.py):

    x = obs / 255                                        [B, H, W, 3] channels last (uint8 or float 0..255)
    F = ReLU(conv_{2x2, VALID}(ReLU(conv_{2x2, VALID}(x))))  12 then 24 channels   [B, 24, H-2, W-2]
    E = F W                                              W [24, entity_dim - 2], no bias
    e_n = [E_{r,c}, y_r, x_c],  n = r * (W-2) + c        y = linspace(-1, 1, H-2), x = linspace(-1, 1, W-2)

giving N = (H-2)(W-2) entities of entity_dim = 64 features (a 7x10 observation: 5 x 8 = 40 entities),
in row-major order with the (row, column) coordinates last.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn


class GridEntityEncoder(nn.Module):
    """[B, H, W, C] observations -> entities [B, N, entity_dim]."""

    def __init__(self, observation_shape: Sequence[int], conv_channels: Sequence[int], conv_kernel: int,
                 entity_dim: int) -> None:
        super().__init__()
        height, width, in_channels = (int(v) for v in observation_shape)
        if entity_dim < 3:
            raise ValueError(f"agent.entity_dim must leave room for the 2 coordinates, got {entity_dim}")
        layers: list[nn.Module] = []
        for out_channels in conv_channels:
            layers += [nn.Conv2d(in_channels, int(out_channels), kernel_size=conv_kernel), nn.ReLU()]  # VALID
            in_channels = int(out_channels)
            height, width = height - conv_kernel + 1, width - conv_kernel + 1
        if height < 1 or width < 1:
            raise ValueError(f"observation {tuple(observation_shape)} is too small for {len(conv_channels)} "
                             f"{conv_kernel}x{conv_kernel} convolutions")
        self.observation_shape = tuple(int(v) for v in observation_shape)
        self.grid_hw = (height, width)
        self.convs = nn.Sequential(*layers)
        self.project = nn.Linear(in_channels, entity_dim - 2, bias=False)
        rows, cols = torch.meshgrid(torch.linspace(-1, 1, height), torch.linspace(-1, 1, width), indexing="ij")
        coords = torch.stack([rows, cols], dim=-1).reshape(height * width, 2)  # [N, 2] = (row, column)
        self.register_buffer("coords", coords, persistent=False)
        self.entity_dim = int(entity_dim)

    @property
    def n_entities(self) -> int:
        return self.grid_hw[0] * self.grid_hw[1]

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """obs [B, H, W, C] -> entities [B, N, entity_dim]"""
        if tuple(obs.shape[1:]) != self.observation_shape:
            raise ValueError(f"expected observations of shape {self.observation_shape}, got {tuple(obs.shape[1:])}")
        x = obs.to(self.project.weight.dtype) / 255.0
        features = self.convs(x.permute(0, 3, 1, 2))  # [B, channels, h, w]
        batch = features.shape[0]
        features = features.permute(0, 2, 3, 1).reshape(batch, self.n_entities, -1)  # [B, N, channels]
        coords = self.coords.to(features.dtype).expand(batch, -1, -1)  # [B, N, 2]
        return torch.cat([self.project(features), coords], dim=-1)  # [B, N, entity_dim]
