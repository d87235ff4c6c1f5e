"""The relational Transformer central module ``relational``: the baseline relational agent of Clift et al.,
*Logic and the 2-Simplicial Transformer* (ICLR 2020), §2.1 and §4 (dmurfet/2simplicialtransformer,
agent/agent_relational.py), itself modelled on
Zambaldi et al. (ICLR 2019). Also the pieces the 2-simplicial module (:mod:`models.relational.simplicial`)
reuses: the masked 1-simplicial attention, the feed-forward network and the shared-weight depth loop.

With entities e [B, N, 64], per iteration t = 1..depth (eq. (3), (4), (7) with Remark 4.2's LayerNorms):

    x  = LN_t(e)                                                  [B, N, 64]   fresh LayerNorm per iteration
    (q, k, v) = x W                W [64, 3 * heads * head_size], no bias      eq. (3)
    a  = concat_h softmax(q_h k_h^T / sqrt(head_size)) v_h        [B, N, 64]   eq. (4), (7); no output projection
    c  = W_2 ReLU(W_1 a + b_1) + b_2                              [B, N, 64]   g_theta, hidden 64
    e' = LN'_t(e + c)                                             [B, N, 64]   eq. (5)

The 1/sqrt(head_size) scaling is the reference code's (``sqrt_d`` in agent/agent_relational.py); eq. (4) as
printed has none.
The attention W and g_theta are shared across the iterations (the same layer objects, as in the reference
agent); only the LayerNorms (per-feature gain and bias, eps 1e-5) are new per iteration. Afterwards the
entities are max-pooled: out = max_n e''_n, out_dim = model_dim = 64 (paper §4.1).

Deviation: the agent's entities already have model_dim = 64 features. Where the input has d_entity !=
model_dim (the Relations Game's 34-d entities), a bias-free Linear(d_entity, model_dim) first maps them
to model_dim; the paper has no such layer. It lets the module join the PrediNet paper's Table 1.

Initialisation (``reset_parameters_paper``): the Keras defaults of the reference agent, not the PrediNet
paper's truncated normal: Glorot uniform weights, zero biases, LayerNorm gain 1 and bias 0.

Analysis hooks (harness.runners.analysis): ``last_attention`` is a tuple of the 1-simplicial attention
of each iteration, detached, each [B, heads, N, N]; ``head_mask`` ([heads]; None = all) scales each
1-simplicial head's output in every iteration, for head pruning.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from models.relational.predinet import HeadMaskMixin

LAYER_NORM_EPS = 1e-5  # keras-transformer's LayerNormalization


def cfg_value(cfg: Any, name: str, default: Any) -> Any:
    """``cfg.name`` where the config has it, else ``default`` (works for dicts and OmegaConf nodes)."""
    value = cfg.get(name) if hasattr(cfg, "get") else getattr(cfg, name, None)
    return default if value is None else value


def keras_init_(module: nn.Module) -> nn.Module:
    """In place, recursively: Keras defaults (Glorot uniform weights, zero biases, LayerNorm (1, 0));
    a submodule with its own ``reset_keras_init`` (e.g. an embedding or a 3-tensor) runs that instead."""
    for child in module.modules():
        hook = getattr(child, "reset_keras_init", None)
        if callable(hook):
            hook()
        elif isinstance(child, nn.LayerNorm):
            nn.init.ones_(child.weight)
            nn.init.zeros_(child.bias)
        elif isinstance(child, nn.Linear | nn.Conv2d):
            nn.init.xavier_uniform_(child.weight)
            if child.bias is not None:
                nn.init.zeros_(child.bias)
    return module


def entity_mask(n_standard: int, n_virtual: int) -> torch.Tensor | None:
    """Additive logit mask [N+M, N+M] of eq. (18)-(19): standard entities (rows < N) attend only to standard
    entities, virtual entities attend to all N+M; None when there are no virtual entities."""
    if n_virtual == 0:
        return None
    total = n_standard + n_virtual
    mask = torch.zeros(total, total)
    mask[:n_standard, n_standard:] = float("-inf")
    return mask


class EntitySelfAttention(nn.Module):
    """1-simplicial multi-head self-attention, eq. (3), (4), (7): x [B, N+M, d] -> [B, N+M, heads * head_size].

    One bias-free W [d, 3 * heads * head_size] gives (q, k, v), split per head in that order; logits
    q.k / sqrt(head_size); no output projection (the heads are concatenated). With n_virtual > 0 the last M
    entities are virtual: standard entities attend to standard entities only (eq. (18)), virtual ones to
    all (eq. (19)).
    """

    def __init__(self, d_model: int, heads: int, head_size: int, n_standard: int, n_virtual: int = 0) -> None:
        super().__init__()
        self.heads, self.head_size = heads, head_size
        self.qkv = nn.Linear(d_model, 3 * heads * head_size, bias=False)  # W
        mask = entity_mask(n_standard, n_virtual)
        self.register_buffer("mask", mask, persistent=False)  # [N+M, N+M] or None

    def forward(self, x: torch.Tensor, head_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """x [B, N+M, d] -> (output [B, N+M, heads * head_size], attention [B, heads, N+M, N+M])."""
        batch, n, _ = x.shape
        qkv = self.qkv(x).view(batch, n, 3, self.heads, self.head_size).transpose(1, 3)  # [B, h, 3, N, s]
        q, k, v = qkv.unbind(2)  # each [B, h, N, s] (unbind: one stacked gradient, not three zero-filled ones)
        logits = (q @ k.transpose(-1, -2)).mul_(1.0 / math.sqrt(self.head_size))  # [B, h, N, N], in place
        if self.mask is not None:
            logits.add_(self.mask.to(logits.dtype))  # -inf: standard -> virtual
        att = torch.softmax(logits, dim=-1)  # [B, h, N, N]
        values = att @ v  # [B, h, N, s]
        if head_mask is not None:
            values = values * head_mask.to(values)[None, :, None, None]
        return values.transpose(1, 2).reshape(batch, n, self.heads * self.head_size), att  # [B, N, h*s]


class FeedForward(nn.Module):
    """g_theta of eq. (5) / (17): Dense(hidden, ReLU) -> Dense(d_out), both with biases. [..., d_in] -> [..., d_out]."""

    def __init__(self, d_in: int, hidden: int, d_out: int) -> None:
        super().__init__()
        self.hidden = nn.Linear(d_in, hidden)
        self.output = nn.Linear(hidden, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.output(torch.relu(self.hidden(x)))


class RelationalTransformer(HeadMaskMixin, nn.Module):
    """entities [B, N, D] -> max-pooled [B, model_dim]: ``depth`` iterations of one shared Transformer block.

    cfg fields (defaults = the paper's agent): model_dim 64, heads 2, head_size 32, depth 2, ff_hidden 64.
    Subclasses pass ``n_virtual`` virtual entities (appended by :meth:`add_virtual`) and ``extra_width``
    further attention features (from :meth:`extra_attention`); the depth loop, the entity mask, the pooling
    and the analysis hooks stay here.
    """

    def __init__(self, n_entities: int, d_entity: int, cfg: Any, n_virtual: int = 0, extra_width: int = 0) -> None:
        super().__init__()
        self.n_entities, self.n_virtual = int(n_entities), int(n_virtual)
        self.model_dim = int(cfg_value(cfg, "model_dim", 64))
        self.heads = int(cfg_value(cfg, "heads", 2))
        self.head_size = int(cfg_value(cfg, "head_size", 32))
        self.depth = int(cfg_value(cfg, "depth", 2))
        ff_hidden = int(cfg_value(cfg, "ff_hidden", 64))
        if self.depth < 1:
            raise ValueError(f"model.depth must be at least 1, got {self.depth}")
        self.out_dim = self.model_dim
        # Deviation for inputs of another width (Relations Game: 34): a bias-free projection to model_dim.
        self.input_proj = nn.Linear(d_entity, self.model_dim, bias=False) if d_entity != self.model_dim else None
        self.attention = EntitySelfAttention(self.model_dim, self.heads, self.head_size, self.n_entities,
                                             self.n_virtual)  # shared across iterations
        self.ff = FeedForward(self.heads * self.head_size + int(extra_width), ff_hidden, self.model_dim)  # shared
        self.input_norms = nn.ModuleList(nn.LayerNorm(self.model_dim, eps=LAYER_NORM_EPS) for _ in range(self.depth))
        self.output_norms = nn.ModuleList(nn.LayerNorm(self.model_dim, eps=LAYER_NORM_EPS) for _ in range(self.depth))
        self.head_mask: torch.Tensor | None = None
        self.last_attention: tuple[torch.Tensor, ...] | None = None
        self.reset_parameters_paper()

    # hooks for subclasses ------------------------------------------------------------------------
    def add_virtual(self, e: torch.Tensor) -> torch.Tensor:
        """[B, N, d] -> [B, N+M, d] (no virtual entities here)."""
        return e

    def extra_attention(self, x: torch.Tensor, step: int) -> torch.Tensor | None:
        """Extra attention features [B, N+M, extra_width] for iteration ``step`` (none here)."""
        return None

    def reset_parameters_paper(self) -> None:
        """The reference agent's Keras initialisation (see the module docstring); called by ``paper_init_``."""
        keras_init_(self)

    # the shared block and the depth loop ---------------------------------------------------------
    def block(self, e: torch.Tensor, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        """One iteration (eq. (17) with Remark 4.2's LayerNorms): e [B, N+M, d] -> (e' [B, N+M, d], attention)."""
        x = self.input_norms[step](e)  # LN before the attention projections (Remark 4.2)
        mask = self._checked_head_mask()
        a, att = self.attention(x, mask)  # [B, N+M, heads * head_size]
        extra = self.extra_attention(x, step)
        if extra is not None:
            a = torch.cat([a, extra], dim=-1)  # eq. (16) / (18): direct sum with the 2-simplicial output
        return self.output_norms[step](e + self.ff(a)), att  # eq. (17)

    def forward(self, entities: torch.Tensor) -> torch.Tensor:
        """entities [B, N, D] -> [B, model_dim]."""
        e = entities if self.input_proj is None else self.input_proj(entities)  # [B, N, d]
        e = self.add_virtual(e)  # [B, N+M, d]
        maps = []
        for step in range(self.depth):
            e, att = self.block(e, step)
            maps.append(att.detach())
        self.last_attention = tuple(maps) + self.extra_maps()
        return e[:, : self.n_entities].amax(dim=1)  # drop virtual entities, max-pool: [B, d]

    def extra_maps(self) -> tuple[torch.Tensor, ...]:
        """Further attention maps appended to ``last_attention`` (none here)."""
        return ()

    def _checked_head_mask(self) -> torch.Tensor | None:
        if self.head_mask is None:
            return None
        if self.head_mask.shape != (self.heads,):
            raise ValueError(f"head_mask must have shape [{self.heads}], got {tuple(self.head_mask.shape)}")
        return self.head_mask
