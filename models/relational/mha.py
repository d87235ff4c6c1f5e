"""Multi-head self-attention central module, the PrediNet paper's MHA baseline (Vaswani et al.,
NeurIPS 2017, as used by Shanahan et al., ICML 2020, §3 and Table S1; REFERENCE.md §3.3):

    Q^h = L W_Q^h,  K^h = L W_K^h   [B, N, 16];   V^h = L W_V^h   [B, N, 20]      no biases
    A^h = softmax_m(Q^h K^h^T)      [B, N, N]     softmax over the keys, *no* 1/sqrt(16) scaling
    O^h = A^h V^h                   [B, N, 20]
    R^h = sum_n c^h_n O^h_n         [B, 20]       c [heads, 1, N]: learned per-head weights over entities
    R*  = concat_h R^h              [B, heads * 20] = [B, 640]

Value size = central_output / heads (= 640 / 32 = 20), so that R* has the PrediNet's width. There is
no output projection and no non-linearity after the combination (the notebook's SelfAttentionNet
and CombineValues); the paper's softmax(QK^T)V has no scaling and the notebook none either.

Analysis hooks: ``last_attention`` keeps A of the last forward pass, detached, [B, heads, N, N];
``head_mask`` ([heads]; None = all) scales each head's R^h, for the head pruning of Fig. S10.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from models.relational.init import truncated_normal_
from models.relational.predinet import HeadMaskMixin


class MultiHeadAttention(HeadMaskMixin, nn.Module):
    """entities [B, N, D] -> [B, central_output]."""

    def __init__(self, n_entities: int, d_entity: int, cfg: Any) -> None:
        super().__init__()
        self.heads, self.key_size = int(cfg.heads), int(cfg.key_size)
        self.out_dim = int(cfg.central_output)
        if self.out_dim % self.heads:
            raise ValueError(f"model.central_output ({self.out_dim}) must be a multiple of model.heads ({self.heads})")
        self.value_size = self.out_dim // self.heads
        self.w_q = nn.Linear(d_entity, self.heads * self.key_size, bias=False)
        self.w_k = nn.Linear(d_entity, self.heads * self.key_size, bias=False)
        self.w_v = nn.Linear(d_entity, self.heads * self.value_size, bias=False)
        self.combine = nn.Parameter(truncated_normal_(torch.empty(self.heads, 1, n_entities)))  # c
        self.head_mask: torch.Tensor | None = None
        self.last_attention: torch.Tensor | None = None

    def forward(self, entities: torch.Tensor) -> torch.Tensor:
        batch, n, _ = entities.shape
        q = self.w_q(entities).view(batch, n, self.heads, self.key_size).transpose(1, 2)  # [B, h, N, 16]
        k = self.w_k(entities).view(batch, n, self.heads, self.key_size).transpose(1, 2)  # [B, h, N, 16]
        v = self.w_v(entities).view(batch, n, self.heads, self.value_size).transpose(1, 2)  # [B, h, N, 20]
        att = torch.softmax(q @ k.transpose(-1, -2), dim=-1)  # [B, h, N, N], unscaled logits
        values = att @ v  # [B, h, N, 20]
        per_head = torch.einsum("bhnv,hn->bhv", values, self.combine[:, 0, :])  # [B, h, 20]
        self.last_attention = att.detach()
        return self._mask_heads(per_head).reshape(batch, self.out_dim)  # [B, h * 20]
