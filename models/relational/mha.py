"""Multi-head self-attention central module, the PrediNet paper's MHA baseline (Vaswani et al.,
NeurIPS 2017, as used by Shanahan et al., ICML 2020, §4 and Table S2; ``SelfAttentionNet`` in
google-deepmind/deepmind-research, PrediNet/PrediNet.ipynb):

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

Initialisation and the slow start on 'between'. Every weight starts as in the notebook: truncated normal,
stddev 0.1 (models.relational.init), including W_Q, W_K and c. This module matches the notebook's
SelfAttentionNet / CombineValues term for term (per-entity Q, K, V without biases; softmax over keys,
unscaled; c [heads, 1, 25] summed over the 25 entities; heads concatenated); no fidelity gap was found.
With that init, though, the attention starts uniform: on conv entities (features ~0.1-0.5, coordinates in
[0, 0.8]) the logits Q K^T have std ~0.08, so every row of A is ~1/25, R^h = (sum_n c^h_n) mean_n V^h_n
is a linear mean-pool that carries no positions, and the gradients on W_Q, W_K are ~3e-4 (relative 2e-5),
40-50x smaller than on the PrediNet's W_Q / W_K. SGD (lr 0.01, batch 10) leaves this saddle at a
seed-dependent time: on 'between' (pentominoes -> hexominoes / stripes), 5 of 10 seeds were still at
chance after 100,000 batches, the others escaped between 50k and 75k; mean test accuracy at 100k
69 % / 67 % against Table 1's 95.0 / 91.2 (means of 10 runs). Our 'between' data come from our generator.

``model.qk_init_std`` (absent or null: the reference's 0.1) sets the stddev of W_Q and W_K alone, an
explicit, opt-in deviation for when the paper's MHA numbers matter more than the notebook's init: with
0.3, 5 of 5 seeds left chance within 15k-25k batches and reached 98.2 % / 96.7 % (hexominoes / stripes)
at 100k; with 1.0, 2 of 2 seeds reached 99.1 % / 98.7 %. The default draws exactly the numbers it drew
before the option existed.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from models.relational.init import WEIGHT_STD, truncated_normal_
from models.relational.predinet import HeadMaskMixin


class MultiHeadAttention(HeadMaskMixin, nn.Module):
    """entities [B, N, D] -> [B, central_output]."""

    HEAD_MASK_SCALES_OUTPUT = True  # forward ends with _mask_heads over the h blocks of its output

    def __init__(self, n_entities: int, d_entity: int, cfg: Any) -> None:
        super().__init__()
        self.heads, self.key_size = int(cfg.heads), int(cfg.key_size)
        self.out_dim = int(cfg.central_output)
        if self.out_dim % self.heads:
            raise ValueError(f"model.central_output ({self.out_dim}) must be a multiple of model.heads ({self.heads})")
        self.value_size = self.out_dim // self.heads
        qk_std = cfg.get("qk_init_std")  # None: the reference's stddev 0.1, like every other weight
        self.qk_init_std = WEIGHT_STD if qk_std is None else float(qk_std)
        if not self.qk_init_std > 0:
            raise ValueError(f"model.qk_init_std must be positive (or null), got {qk_std!r}")
        self.w_q = nn.Linear(d_entity, self.heads * self.key_size, bias=False)
        self.w_k = nn.Linear(d_entity, self.heads * self.key_size, bias=False)
        self.w_v = nn.Linear(d_entity, self.heads * self.value_size, bias=False)
        self.combine = nn.Parameter(truncated_normal_(torch.empty(self.heads, 1, n_entities)))  # c
        self.head_mask: torch.Tensor | None = None
        self.last_attention: torch.Tensor | None = None

    def reset_parameters_paper(self) -> None:
        """The reference's init (truncated normal, stddev 0.1; no biases here), drawn in the order the generic
        :func:`~models.relational.init.paper_init_` uses (c, W_Q, W_K, W_V), so that the default draws the same
        numbers; only W_Q and W_K take ``model.qk_init_std`` when it is set."""
        truncated_normal_(self.combine)
        truncated_normal_(self.w_q.weight, self.qk_init_std)
        truncated_normal_(self.w_k.weight, self.qk_init_std)
        truncated_normal_(self.w_v.weight)

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
