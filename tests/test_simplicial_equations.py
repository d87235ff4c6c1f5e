"""The 2-simplicial Transformer (Clift, Doryn, Murfet & Wallbridge, ICLR 2020) against literal transcriptions.

2-simplicial attention with several heads (§2.2, eqs. (9)-(11), (15) and (19); the remark after eq. (17) on K_2
heads, H^2 = the direct sum of the heads' spaces H^2_u):
``model.simplicial_heads`` K > 1 splits each of p, l1, l2 and u of eq. (9) into K contiguous blocks of d / K and
gives each head its own B; head u's output is block u of v'_i. Each head must therefore be exactly a one-head
module of width d / K built from its blocks of W and its own B, checked here against the scalar triple loop of
eq. (15) in tests/test_simplicial.py.

The block (§2.1 eqs. (3)-(5) and (7), §2.2 eqs. (16)-(19), with Remark 4.2's LayerNorm on the incoming entities
and the reference agent's 1/sqrt(head size) logit scaling), its weights shared across the iterations, then the
virtual entities dropped and the standard ones max-pooled (§4.1)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from models.relational.simplicial import SimplicialTransformer, TwoSimplicialAttention
from models.relational.transformer import RelationalTransformer
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


def layer_norm(norm: nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5) * norm.weight + norm.bias


def one_simplicial(model: RelationalTransformer, x: torch.Tensor) -> torch.Tensor:
    """Eqs. (3), (4), (7) for one example x [N+M, d]: (q, k, v) = E(x) split per head, softmax over the entities
    a standard entity may see (the standard ones, eq. (18)) or all of them (a virtual entity, eq. (19))."""
    heads, size, n = model.heads, model.head_size, model.n_entities
    w = model.attention.qkv.weight  # rows: q of every head, then k, then v
    outs = []
    for h in range(heads):
        q, k, v = (x @ w[part * heads * size + h * size: part * heads * size + (h + 1) * size].T for part in range(3))
        rows = []
        for i in range(x.shape[0]):
            seen = range(n) if i < n else range(x.shape[0])
            logits = torch.stack([q[i] @ k[j] / math.sqrt(size) for j in seen])
            rows.append(torch.softmax(logits, dim=0) @ v[list(seen)])
        outs.append(torch.stack(rows))
    return torch.cat(outs, dim=-1)


def block_literal(model: RelationalTransformer, entities: torch.Tensor) -> torch.Tensor:
    """One example [N, D] -> [model_dim]."""
    e = entities if model.input_proj is None else entities @ model.input_proj.weight.T
    if isinstance(model, SimplicialTransformer):
        e = torch.cat([e, model.virtual.weight])  # the virtual entities after the standard ones
    for t in range(model.depth):
        x = layer_norm(model.input_norms[t], e)  # Remark 4.2
        a = one_simplicial(model, x)
        if isinstance(model, SimplicialTransformer):
            two = triple_loop_eq15(model.simplicial, x[None])[0]  # eqs. (15), (19)
            a = torch.cat([a, layer_norm(model.simplicial_norms[t], two)], dim=-1)  # eqs. (16), (18); Remark 4.1
        g = torch.relu(a @ model.ff.hidden.weight.T + model.ff.hidden.bias) @ model.ff.output.weight.T
        e = layer_norm(model.output_norms[t], e + g + model.ff.output.bias)  # eqs. (5), (17)
    return e[: model.n_entities].amax(dim=0)


@pytest.mark.parametrize(("cls", "d_entity"), [(SimplicialTransformer, 6), (RelationalTransformer, 5)])
def test_the_block_is_the_papers_equations(cls: type, d_entity: int):
    torch.manual_seed(0)
    cfg = {"model_dim": 6, "heads": 2, "head_size": 3, "depth": 2, "ff_hidden": 5, "virtual_entities": 2,
           "simplicial_dim": 4}
    model = cls(3, d_entity, cfg).double()
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name or name.endswith("bias") or name.endswith("tensor_b"):
                p.add_(0.5 * torch.randn(p.shape, generator=g, dtype=p.dtype))
            if name.startswith("virtual"):
                p.mul_(20.0)  # Keras' U(-0.05, 0.05) would make the virtual entities nearly irrelevant
    x = torch.randn(2, 3, d_entity, generator=g, dtype=torch.float64)
    out = model(x)
    for b in range(2):
        torch.testing.assert_close(out[b], block_literal(model, x[b]), rtol=1e-10, atol=1e-10)
