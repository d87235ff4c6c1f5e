"""2-simplicial attention with several heads (Clift, Doryn, Murfet & Wallbridge, ICLR 2020, §2.2, eqs. (9)-(11),
(15) and (19); the remark after eq. (17) on K_2 heads, H^2 = the direct sum of the heads' spaces H^2_u).

``model.simplicial_heads`` K > 1 splits each of p, l1, l2 and u of eq. (9) into K contiguous blocks of d / K and
gives each head its own B; head u's output is block u of v'_i. Each head must therefore be exactly a one-head
module of width d / K built from its blocks of W and its own B, checked here against the scalar triple loop of
eq. (15) in tests/test_simplicial.py."""

from __future__ import annotations

import torch

from models.relational.simplicial import TwoSimplicialAttention
from tests.test_simplicial import triple_loop_eq15


def one_head(att: TwoSimplicialAttention, head: int) -> TwoSimplicialAttention:
    """Head ``head`` of ``att`` as a one-head module: rows [head block of W_P; of W_L1; of W_L2; of W_U] and B_head."""
    s, d = att.head_dim, att.dim
    single = TwoSimplicialAttention(att.proj.in_features, s, 1, att.n_standard, att.n_virtual).double()
    rows = [att.proj.weight[part * d + head * s: part * d + (head + 1) * s] for part in range(4)]  # p, l1, l2, u
    with torch.no_grad():
        single.proj.weight.copy_(torch.cat(rows))
        single.tensor_b.copy_(att.tensor_b[head: head + 1])
    return single


def test_each_head_is_eq15_on_its_own_blocks_of_p_l1_l2_u():
    torch.manual_seed(0)
    heads, s = 2, 3
    att = TwoSimplicialAttention(d_model=5, dim=heads * s, heads=heads, n_standard=3, n_virtual=2).double()
    with torch.no_grad():
        att.tensor_b.mul_(5.0)  # make B's contribution large enough to matter
    x = torch.randn(2, 5, 5, dtype=torch.float64)
    out, weights = att(x)
    for head in range(heads):
        want = triple_loop_eq15(one_head(att, head), x)
        torch.testing.assert_close(out[..., head * s:(head + 1) * s], want, rtol=1e-10, atol=1e-10)
        _, head_weights = one_head(att, head)(x)
        torch.testing.assert_close(weights[:, :, head], head_weights[:, :, 0], rtol=1e-10, atol=1e-12)
