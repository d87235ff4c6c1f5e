"""A plain pre-LayerNorm Transformer encoder as a sequence core (Vaswani et al., NeurIPS 2017; pre-LN as Xiong
et al., ICML 2020, Fig. 1b): the baseline the Long Range Arena compares against (Tay et al., ICLR 2021).

    h_0 = [CLS; x] + PE                      x [B, T, d_model]; sinusoidal positions (Vaswani et al. §3.5)
    h_l = h + MHA(LN(h)),  h + FFN(LN(h))    ``model.layers`` blocks, ``model.heads`` heads, FFN ``model.ff_size``
    out = LN(h_L)[CLS]  or  the mean of LN(h_L) over real steps   (``model.pooling``: cls | mean)

Padding steps are masked out of attention and of the mean.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn


def sinusoidal_positions(length: int, dim: int) -> torch.Tensor:
    """PE [length, dim]: sin on even, cos on odd dimensions (Vaswani et al. 2017, §3.5)."""
    position = torch.arange(length, dtype=torch.float32).unsqueeze(1)  # [T, 1]
    rate = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))  # [dim/2]
    table = torch.zeros(length, dim)
    table[:, 0::2] = torch.sin(position * rate)
    table[:, 1::2] = torch.cos(position * rate)[:, : dim // 2]
    return table


class TransformerCore(nn.Module):
    """(x [B, T, in_dim], mask [B, T] bool) -> [B, out_dim]."""

    def __init__(self, cfg: Any) -> None:
        super().__init__()
        self.in_dim = self.out_dim = dim = int(cfg.d_model)
        if dim % int(cfg.heads):
            raise ValueError(f"model.d_model ({dim}) must be a multiple of model.heads ({cfg.heads})")
        self.pooling = str(cfg.pooling)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        block = nn.TransformerEncoderLayer(dim, int(cfg.heads), int(cfg.ff_size), float(cfg.dropout),
                                           activation="gelu", batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(block, int(cfg.layers), enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        batch, steps, dim = x.shape
        h = torch.cat([self.cls.expand(batch, 1, dim), x], dim=1)  # [B, 1 + T, d]
        h = h + sinusoidal_positions(steps + 1, dim).to(h)
        real = torch.cat([torch.ones(batch, 1, dtype=torch.bool, device=x.device), mask], dim=1)  # [B, 1 + T]
        h = self.norm(self.blocks(h, src_key_padding_mask=~real))  # [B, 1 + T, d]
        if self.pooling == "cls":
            return h[:, 0]
        weights = mask.unsqueeze(-1).to(h.dtype)  # [B, T, 1]
        return (h[:, 1:] * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)
