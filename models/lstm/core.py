"""The LSTM as a sequence core (``spec.core``): the adapters of ``models/adapters.yaml`` hand it a sequence of
vectors (image patches, tokens, grid cells, state variables) and it returns its last hidden state.

    h = LSTM(x)[last real step]          x [B, T, embedding_size], mask [B, T] -> [B, hidden_size]
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence


class LSTMCore(nn.Module):
    """(x [B, T, in_dim], mask [B, T] bool, real steps first) -> [B, out_dim]."""

    def __init__(self, cfg: Any) -> None:
        super().__init__()
        self.in_dim, self.out_dim = int(cfg.embedding_size), int(cfg.hidden_size)
        layers = int(cfg.layers)
        self.lstm = nn.LSTM(self.in_dim, self.out_dim, num_layers=layers, batch_first=True,
                            dropout=float(cfg.dropout) if layers > 1 else 0.0)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        lengths = mask.sum(dim=1).clamp(min=1).cpu()  # [B]
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        _, (hidden, _) = self.lstm(packed)  # [layers, B, H]
        return hidden[-1]
