"""2-simplicial attention and the 2-simplicial Transformer central module ``simplicial`` (Clift, Doryn,
Murfet, Wallbridge, *Logic and the 2-Simplicial Transformer*, ICLR 2020, §2.2 and §4; dmurfet/2simplicialtransformer,
agent/agent_simplicial.py).

2-simplicial attention (one head of dim d = 48; K heads split each of p, l1, l2, u into K contiguous blocks of
d / K, as the reference does): queries come from the N standard entities only, keys and values from the M
virtual entities only.

    (p_i, l1_i, l2_i, u_i) = x_i W            W [64, 4d], no bias                     eq. (9)
    <a, b, c>^2 = (a.b)^2 (c.c) + (b.c)^2 (a.a) + (a.c)^2 (b.b) - 2 (a.b)(a.c)(b.c)         eq. (11)
    logit_ijk = <p_i, l1_j, l2_k> = sqrt(max(eq. (11), 1e-12))   no 1/sqrt(d) scaling       eq. (10)
    A_ijk = softmax over the M^2 pairs (j, k) of logit_ijk                         [B, N, M, M]
    v'_i  = sum_jk A_ijk B(u_j (x) u_k),  B(u_j (x) u_k)_q = sum_rs B_qrs u_j[r] u_k[s]        eq. (15)

B [d, d, d] is learned (Glorot uniform). With K > 1 heads (``model.simplicial_heads``; the paper and the
shipped config use one) each head has its own B [d/K, d/K, d/K]; the reference declares a single B of that
shape, which every head would share, and notes that it assumes one 2-simplicial head (its agent builds the
layer with num_heads=1), so K > 1 is our extension, not a reproduction. The clamp at 1e-12 before the
square root is ours: eq. (11) is a sum of squares that rounding can push to (or just below) 0, where the
square root's gradient is infinite; the clamp keeps it finite and changes the logit by at most 1e-6. The
softmax runs over the virtual pairs only (``multi_softmax`` over the last two axes in
agent/agent_simplicial.py; eq. (18) as printed sums its denominator over 1..N+M, which the reference code does
not do). For a virtual entity the 2-simplicial output is its own u_i (eq. (19)).

B(u_j (x) u_k) depends on the virtual entities only, so it is computed once per example for the M^2
pairs, in two contractions (M d^3 + M^2 d^2 multiplications), never per query.

The block (eq. (16)-(19), the paper's pseudo-code in §4.2), shared weights across ``depth`` iterations:

    x  = LN_t(e)                                          e [B, N+M, 64]: N standard + M virtual entities
    a1 = MHA(x)                                           [B, N+M, 64]  standard -> standard, virtual -> all
    a2 = LN2_t(2SimplicialAttention(x))                   [B, N+M, 48]  eq. (18), (19); Remark 4.1
    e' = LN'_t(e + g_theta(concat[a1, a2]))               [B, N+M, 64]  eq. (17)

then the virtual entities are dropped and the rest max-pooled: out_dim = 64. The virtual entities are M
learned vectors (an Embedding(M, 64) in the reference), the same for every example, appended after the
standard ones. See :mod:`models.relational.transformer` for the shared pieces, the input projection used
when d_entity != model_dim (a deviation), the Keras initialisation and the analysis hooks; here
``last_attention`` also carries the 2-simplicial attention of each iteration, [B, N, K, M, M].
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from models.relational.transformer import LAYER_NORM_EPS, RelationalTransformer, cfg_value

TRIPLE_PRODUCT_EPS = 1e-12  # clamp of eq. (11) before the square root (finite gradients at 0)
EMBEDDING_INIT = 0.05  # Keras Embedding's default initialiser: uniform(-0.05, 0.05)


def unsigned_triple_product(pl1: torch.Tensor, pl2: torch.Tensor, pp: torch.Tensor, l1l1: torch.Tensor,
                            l2l2: torch.Tensor, l12: torch.Tensor) -> torch.Tensor:
    """<p_i, l1_j, l2_k> of eq. (10) via eq. (11), for the P = M^2 pairs (j, k) laid out along the last dim.

    pl1 = p_i.l1_j and pl2 = p_i.l2_k [..., N, P]; pp = p_i.p_i [..., N, 1]; l1l1 = l1_j.l1_j, l2l2 = l2_k.l2_k
    and l12 = l1_j.l2_k [..., 1, P] (virtual entities only). Returns the logits [..., N, P].
    """
    squared = pl1.square() * l2l2 + pp * l12.square() + pl2.square() * l1l1 - 2.0 * pl1 * pl2 * l12  # eq. (11)
    return squared.clamp_min(TRIPLE_PRODUCT_EPS).sqrt()  # eq. (10)


class TwoSimplicialAttention(nn.Module):
    """x [B, N+M, d_model] -> ([B, N+M, dim], attention [B, N, heads, M, M]): eq. (9)-(11), (15), (19).

    Queries from the first N (standard) entities, keys and values from the last M (virtual) ones; the
    virtual entities' output is their own value u_i (eq. (19)). ``heads`` blocks of ``dim / heads`` each.
    """

    def __init__(self, d_model: int, dim: int, heads: int, n_standard: int, n_virtual: int) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"model.simplicial_dim ({dim}) must be a multiple of model.simplicial_heads ({heads})")
        if n_virtual < 1:
            raise ValueError("2-simplicial attention needs at least one virtual entity")
        self.dim, self.heads, self.head_dim = dim, heads, dim // heads
        self.n_standard, self.n_virtual = n_standard, n_virtual
        self.proj = nn.Linear(d_model, 4 * dim, bias=False)  # W = [W_P; W_L1; W_L2; W_U], eq. (9)
        self.tensor_b = nn.Parameter(torch.empty(heads, self.head_dim, self.head_dim, self.head_dim))  # B
        pairs = torch.arange(n_virtual)
        self.register_buffer("pair_j", pairs.repeat_interleave(n_virtual), persistent=False)  # [M^2]
        self.register_buffer("pair_k", pairs.repeat(n_virtual), persistent=False)  # [M^2]
        self.reset_keras_init()

    def reset_keras_init(self) -> None:
        """Glorot uniform for W and for each head's B (fan_in = fan_out = (d/K)^2, as Keras for a cubic 3-tensor)."""
        nn.init.xavier_uniform_(self.proj.weight)
        for b in self.tensor_b.data:
            nn.init.xavier_uniform_(b)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        batch, n, m, h, s = x.shape[0], self.n_standard, self.n_virtual, self.heads, self.head_dim
        if x.shape[1] != n + m:
            raise ValueError(f"expected {n} standard + {m} virtual entities, got {x.shape[1]}")
        weight = self.proj.weight  # [4d, d_model]
        p = F.linear(x[:, :n], weight[: self.dim]).view(batch, n, h, s).transpose(1, 2)  # queries: [B, h, N, s]
        virtual = F.linear(x[:, n:], weight[self.dim :]).view(batch, m, 3, h, s)  # (l1, l2, u) of virtual entities
        keys = virtual[:, :, :2].permute(0, 3, 2, 1, 4).reshape(batch, h, 2 * m, s)  # [l1_1..l1_M, l2_1..l2_M]
        u = virtual[:, :, 2].transpose(1, 2)  # values: [B, h, M, s]
        dots = p @ keys.transpose(-1, -2)  # p_i.l1_j, p_i.l2_k: [B, h, N, 2M]
        gram = (keys @ keys.transpose(-1, -2)).reshape(batch, h, 1, 4 * m * m)  # l.l' (flattened): [B, h, 1, 4M^2]
        j, k = self.pair_j, self.pair_k  # the pairs (j, k), j-major: [M^2] each; l2_k sits at index M + k
        logits = unsigned_triple_product(
            dots.index_select(-1, j), dots.index_select(-1, k + m), p.square().sum(-1, keepdim=True),
            gram.index_select(-1, j * (2 * m + 1)), gram.index_select(-1, (k + m) * (2 * m + 1)),
            gram.index_select(-1, j * 2 * m + k + m))  # eq. (10): [B, h, N, M^2]
        att = torch.softmax(logits, dim=-1)  # joint softmax over the pairs (j, k): [B, h, N, M^2]
        # B(u_j (x) u_k) once per example, in two contractions: [B, h, M*M, s]
        bu = torch.einsum("hqrs,bhjr->bhjqs", self.tensor_b, u)  # sum_r B_qrs u_j[r]: [B, h, M, s, s]
        buu = torch.einsum("bhjqs,bhks->bhjkq", bu, u).reshape(batch, h, m * m, s)  # [B, h, M*M, s]
        standard = (att @ buu).transpose(1, 2).reshape(batch, n, self.dim)  # eq. (15): [B, N, d]
        own = virtual[:, :, 2].reshape(batch, m, self.dim)  # eq. (19): the virtual entities keep their own u
        out = torch.cat([standard, own], dim=1)  # [B, N+M, d]
        return out, att.view(batch, h, n, m, m).transpose(1, 2)  # attention [B, N, h, M, M]


class VirtualEntities(nn.Module):
    """M learned entity vectors (the reference's Embedding(M, 64)), tiled over the batch: [B, M, d]."""

    def __init__(self, count: int, dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(count, dim))
        self.reset_keras_init()

    def reset_keras_init(self) -> None:
        nn.init.uniform_(self.weight, -EMBEDDING_INIT, EMBEDDING_INIT)

    def forward(self, batch: int) -> torch.Tensor:
        return self.weight.unsqueeze(0).expand(batch, -1, -1)


class SimplicialTransformer(RelationalTransformer):
    """entities [B, N, D] -> [B, model_dim]: the 2-simplicial Transformer block, ``depth`` shared iterations.

    cfg fields (defaults = the paper's agent): those of :class:`RelationalTransformer` (model_dim 64,
    heads 2, head_size 32, depth 2, ff_hidden 64) and virtual_entities 2, simplicial_heads 1,
    simplicial_dim 48.
    """

    def __init__(self, n_entities: int, d_entity: int, cfg: Any) -> None:
        n_virtual = int(cfg_value(cfg, "virtual_entities", 2))
        dim = int(cfg_value(cfg, "simplicial_dim", 48))
        super().__init__(n_entities, d_entity, cfg, n_virtual=n_virtual, extra_width=dim)
        self.virtual = VirtualEntities(n_virtual, self.model_dim)
        self.simplicial = TwoSimplicialAttention(self.model_dim, dim, int(cfg_value(cfg, "simplicial_heads", 1)),
                                                 self.n_entities, n_virtual)  # shared across iterations
        self.simplicial_norms = nn.ModuleList(nn.LayerNorm(dim, eps=LAYER_NORM_EPS) for _ in range(self.depth))
        self._simplicial_maps: list[torch.Tensor] = []
        self.reset_parameters_paper()

    def add_virtual(self, e: torch.Tensor) -> torch.Tensor:
        return torch.cat([e, self.virtual(e.shape[0]).to(e.dtype)], dim=1)  # [B, N+M, d]

    def extra_attention(self, x: torch.Tensor, step: int) -> torch.Tensor:
        if step == 0:
            self._simplicial_maps = []
        a2, att = self.simplicial(x)  # [B, N+M, dim]
        self._simplicial_maps.append(att.detach())
        return self.simplicial_norms[step](a2)  # the extra LayerNorm of Remark 4.1

    def extra_maps(self) -> tuple[torch.Tensor, ...]:
        return tuple(self._simplicial_maps)
