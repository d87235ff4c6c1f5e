"""PrediNet central module (Shanahan et al., ICML 2020, §2 and Fig. 1; ``PrediNet4MultiTask`` in
google-deepmind/deepmind-research, PrediNet/PrediNet.ipynb).

Input L [B, N, D]: N entities whose last two features are their (x, y) position. With k heads, j
relations and key size g (32, 16, 16 in the paper's experiments):

    K     = L W_K                         W_K [D, g] shared by the heads, no bias       [B, N, g]
    Q_1^h = flatten(L) W_Q1^h             W_Q1 [N*D, k*g], no bias (likewise Q_2)       [B, k, g]
    A_1^h = softmax_n(Q_1^h K^T)          over entities, *no* 1/sqrt(g) scaling         [B, k, N]
    E_1^h = A_1^h L                       (likewise E_2^h from Q_2^h)                   [B, k, D]
    D^h   = E_1^h W_S - E_2^h W_S         W_S [D, j] shared by the heads, no bias       [B, k, j]
    R^h   = (D^h, P_1^h, P_2^h)           P = the last two features of E (the position) [B, k, j+4]
    R*    = concat_h R^h                                                                 [B, k(j+4)] = [B, 640]

The paper's default-hyperparameter table (Table S2, Supplementary §S1) lists k = 16 heads for the PrediNet,
but its main text (§4, "k=32 heads and j=16 relations"), the captions of Figs. S11 and S13 and the reference
notebook (HEADS_P = 32, CENTRAL_OUTPUT_SIZE = 640) use k = 32; we follow the main text and the notebook (k = 32).

Analysis hooks (paper §5, Fig. 6 / Supplementary S2.2-S2.3): ``last_attention`` keeps (A_1, A_2) of the last forward
pass, detached, each [B, k, N]; ``head_mask`` ([k], bool or float; None = all heads) multiplies each
head's output R^h, so zeros prune heads at test time (Fig. S10).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class HeadMaskMixin:
    """A ``head_mask`` attribute ([heads], None = every head kept) that scales each head's output.

    ``HEAD_MASK_SCALES_OUTPUT`` says whether the mask does nothing but scale each head's block of the module's
    output (R* = [R^1, ..., R^k]): then a masked output is the unmasked one times the mask, and the head-pruning
    analysis may compute the module once and re-run only what follows it. A module that applies the mask
    inside further computation (attention iterated with shared weights, LayerNorm, pooling) leaves it False.
    """

    HEAD_MASK_SCALES_OUTPUT = False
    heads: int
    head_mask: torch.Tensor | None

    def set_head_mask(self, mask: torch.Tensor | None) -> None:
        if mask is not None:
            mask = torch.as_tensor(mask).detach()
            if mask.shape != (self.heads,):
                raise ValueError(f"head_mask must have shape [{self.heads}], got {tuple(mask.shape)}")
        self.head_mask = mask

    def _mask_heads(self, per_head: torch.Tensor) -> torch.Tensor:
        """per_head [B, heads, d] -> the same with masked heads zeroed (scaled by the mask)."""
        if self.head_mask is None:
            return per_head
        if self.head_mask.shape != (self.heads,):
            raise ValueError(f"head_mask must have shape [{self.heads}], got {tuple(self.head_mask.shape)}")
        return per_head * self.head_mask.to(per_head)[None, :, None]


class PrediNet(HeadMaskMixin, nn.Module):
    """entities [B, N, D] -> R* [B, heads * (relations + 4)]."""

    HEAD_MASK_SCALES_OUTPUT = True  # forward ends with _mask_heads over the k blocks of R*

    def __init__(self, n_entities: int, d_entity: int, cfg: Any) -> None:
        super().__init__()
        self.heads, self.relations, self.key_size = int(cfg.heads), int(cfg.relations), int(cfg.key_size)
        if d_entity < 3:
            raise ValueError("PrediNet needs entities with features beyond their two position coordinates")
        self.out_dim = self.heads * (self.relations + 4)
        expected = cfg.get("central_output")
        if expected is not None and int(expected) != self.out_dim:
            raise ValueError(f"PrediNet's output is heads * (relations + 4) = {self.out_dim}, "
                             f"but model.central_output is {expected}")
        self.n_entities, self.d_entity = n_entities, d_entity
        self.w_k = nn.Linear(d_entity, self.key_size, bias=False)  # shared keys
        self.w_q1 = nn.Linear(n_entities * d_entity, self.heads * self.key_size, bias=False)
        self.w_q2 = nn.Linear(n_entities * d_entity, self.heads * self.key_size, bias=False)
        self.w_s = nn.Linear(d_entity, self.relations, bias=False)  # shared relation embedding
        self.head_mask: torch.Tensor | None = None
        self.last_attention: tuple[torch.Tensor, torch.Tensor] | None = None

    def forward(self, entities: torch.Tensor) -> torch.Tensor:
        batch = entities.shape[0]
        flat = entities.reshape(batch, -1)  # [B, N*D], entity-major
        keys = self.w_k(entities)  # [B, N, g]
        q1 = self.w_q1(flat).view(batch, self.heads, self.key_size)  # [B, k, g]
        q2 = self.w_q2(flat).view(batch, self.heads, self.key_size)  # [B, k, g]
        att1 = torch.softmax(torch.einsum("bhg,bng->bhn", q1, keys), dim=-1)  # [B, k, N], unscaled logits
        att2 = torch.softmax(torch.einsum("bhg,bng->bhn", q2, keys), dim=-1)  # [B, k, N]
        e1 = torch.einsum("bhn,bnd->bhd", att1, entities)  # [B, k, D]
        e2 = torch.einsum("bhn,bnd->bhd", att2, entities)  # [B, k, D]
        diff = self.w_s(e1) - self.w_s(e2)  # [B, k, j]
        per_head = torch.cat([diff, e1[..., -2:], e2[..., -2:]], dim=-1)  # [B, k, j + 4]
        self.last_attention = (att1.detach(), att2.detach())
        return self._mask_heads(per_head).reshape(batch, self.out_dim)  # [B, k(j+4)]
