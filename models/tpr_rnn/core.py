"""TPR-RNN's memory as a sequence core (``spec.core``): each step vector is written as a statement, and a
learned question reads the answer out (paper §4, eqs. 4-19; ``models.tpr_rnn.model.TPRReasoning``).

    s_t = x_t                                   x [B, T, in_dim], in_dim = model.entity_size
    F   = TPR updates over the real steps        (eqs. 9-14)
    out = i1 + i2 + i3 for a learned question q  [B, d_e]   (eqs. 15-19)

Not from the paper, whose input module reads words: the route by which the sequence adapters
(``models/adapters.yaml``) put TPR-RNN on images, grids and token sequences.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from models.tpr_rnn.model import TPRReasoning


class TPRCore(TPRReasoning):
    """(x [B, T, in_dim], mask [B, T] bool) -> [B, out_dim]."""

    def __init__(self, cfg: Any) -> None:
        super().__init__()
        self.in_dim = int(cfg.entity_size)
        self.question = nn.Parameter(torch.empty(self.in_dim).uniform_(-cfg.init_limit, cfg.init_limit))
        self.build_reasoning(self.in_dim, cfg)
        self.out_dim = self.d_e

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.reason(x, mask, self.question.expand(x.shape[0], -1))
