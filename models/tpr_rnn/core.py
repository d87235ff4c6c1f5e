"""TPR-RNN's memory as a sequence core (``spec.core``): each step vector is written as a statement, and a
learned question reads the answer out (paper §4, eqs. 4-19; ``models.tpr_rnn.model.TPRReasoning``).

    s_t = x_t                                   x [B, T, in_dim], in_dim = model.entity_size
    F   = TPR updates over the real steps        (eqs. 9-14), with unit-length entity and role vectors
    out = i1 + i2 + i3 for a learned question q  [B, d_e]   (eqs. 15-19)

Not from the paper, whose input module reads words: the route by which the sequence adapters
(``models/adapters.yaml``) put TPR-RNN on images, grids and token sequences.

Deviation, for this route only: the entity and role vectors (the outputs of the update and query MLPs, eqs.
7-8 and 15-16) are L2-normalised. The paper's updates are not normalised, and over long sequences they are
unstable: a statement's own write is read back scaled by |e|^2 |r|^2 (up to d_e x d_r for tanh outputs), so
over the 36 patches of a Relations Game image the memory reads grow by five orders of magnitude at
initialisation and the loss becomes NaN (after 1,035 steps on `between`; at the first step on ListOps).
With unit keys each write is a delta-rule update that a read with the same key returns exactly, as in the
normalised fast-weight updates of Schlag, Irie & Schmidhuber (ICML 2021, §4.2). The story reader
(``models.tpr_rnn.model.TPRRNN``, what the bAbI runs use) keeps the paper's updates unchanged.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from models.tpr_rnn.model import MLPBank, TPRReasoning

KEY_BANKS = ("update_entities", "update_roles", "query_entity", "query_roles")


class UnitMLPBank(MLPBank):
    """An :class:`MLPBank` whose outputs [n, ..., d_out] have unit L2 norm along d_out."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(super().forward(x), dim=-1)


def unit_bank(bank: MLPBank) -> UnitMLPBank:
    """The same MLPs (same parameters and names), with unit-length outputs."""
    n, d_in, d_hidden = bank.w1.shape
    unit = UnitMLPBank(n, d_in, d_hidden, bank.w2.shape[-1])
    unit.load_state_dict(bank.state_dict())
    return unit


class TPRCore(TPRReasoning):
    """(x [B, T, in_dim], mask [B, T] bool) -> [B, out_dim]."""

    def __init__(self, cfg: Any) -> None:
        super().__init__()
        self.in_dim = int(cfg.entity_size)
        self.question = nn.Parameter(torch.empty(self.in_dim).uniform_(-cfg.init_limit, cfg.init_limit))
        self.build_reasoning(self.in_dim, cfg)
        for name in KEY_BANKS:
            setattr(self, name, unit_bank(getattr(self, name)))
        self.out_dim = self.d_e

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.reason(x, mask, self.question.expand(x.shape[0], -1))
