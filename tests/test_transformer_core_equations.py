"""The Transformer sequence core (models/transformer/core.py) against a literal transcription of the encoder it
documents, written with explicit per-head, per-query loops from the module's own parameters:

    positions (Vaswani et al., NeurIPS 2017, §3.5):  PE[pos, 2i] = sin(pos / 10000^(2i/d)),
                                                      PE[pos, 2i+1] = cos(pos / 10000^(2i/d))
    input:       h_0 = [CLS; x_1 .. x_T] + PE[0 .. T]
    attention (Vaswani et al. 2017, §3.2.2): softmax over the *real* keys of q k / sqrt(d_head) per head, heads
                 concatenated, then the output projection
    block (pre-LN, Xiong et al., ICML 2020, Fig. 1b):  h += MHA(LN(h)),  h += W_2 GELU(W_1 LN(h) + b_1) + b_2
    output:      LN(h_L)[CLS] (``pooling: cls``) or the mean of LN(h_L) over the real steps (``pooling: mean``)

Padding steps must change nothing: the literal version never sees them.
"""

from __future__ import annotations

import math

import pytest
import torch
from omegaconf import OmegaConf
from torch import nn

from models.transformer.core import TransformerCore, sinusoidal_positions
from tests.test_updater_extractor_equations import sinusoid

Tensor = torch.Tensor


def layer_norm(norm: nn.LayerNorm, x: Tensor) -> Tensor:
    """Ba et al.'s LayerNorm of one vector x [d] (biased variance)."""
    mean = sum(x.tolist()) / len(x)
    var = sum((v - mean) ** 2 for v in x.tolist()) / len(x)
    return (x - mean) / math.sqrt(var + norm.eps) * norm.weight + norm.bias


def attention(mha: nn.MultiheadAttention, h: Tensor) -> Tensor:
    """Multi-head self-attention over the steps h [T, d] (all real) -> [T, d]."""
    steps, dim = h.shape
    heads = mha.num_heads
    size = dim // heads
    w_q, w_k, w_v = mha.in_proj_weight.chunk(3)
    b_q, b_k, b_v = mha.in_proj_bias.chunk(3)
    out = torch.zeros(steps, dim)
    for head in range(heads):
        part = slice(head * size, (head + 1) * size)
        q, k, v = (h @ w[part].T + b[part] for w, b in ((w_q, b_q), (w_k, b_k), (w_v, b_v)))  # [T, size] each
        for i in range(steps):
            scores = [float(q[i] @ k[j]) / math.sqrt(size) for j in range(steps)]
            top = max(scores)
            weights = [math.exp(s - top) for s in scores]
            total = sum(weights)
            out[i, part] = sum(weights[j] / total * v[j] for j in range(steps))
    return out @ mha.out_proj.weight.T + mha.out_proj.bias


def gelu(x: Tensor) -> Tensor:
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def encode(core: TransformerCore, x: Tensor) -> Tensor:
    """The real steps x [T, d] of one example -> LN(h_L) [1 + T, d] (step 0 is CLS)."""
    h = torch.cat([core.cls[0], x]) + sinusoid(len(x) + 1, x.shape[1])
    for block in core.blocks.layers:
        normed = torch.stack([layer_norm(block.norm1, row) for row in h])
        h = h + attention(block.self_attn, normed)
        normed = torch.stack([layer_norm(block.norm2, row) for row in h])
        h = h + gelu(normed @ block.linear1.weight.T + block.linear1.bias) @ block.linear2.weight.T + block.linear2.bias
    return torch.stack([layer_norm(core.norm, row) for row in h])


def make(pooling: str) -> TransformerCore:
    torch.manual_seed(0)
    core = TransformerCore(OmegaConf.create({"d_model": 8, "heads": 2, "layers": 2, "ff_size": 12, "dropout": 0.0,
                                             "pooling": pooling})).eval()
    with torch.no_grad():  # LayerNorm gains and biases away from (1, 0), so that a dropped or moved LN shows
        for module in core.modules():
            if isinstance(module, nn.LayerNorm):
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.3, 0.3)
        core.cls.normal_()
    return core


def test_sinusoidal_positions_are_vaswani_s():
    for dim in (6, 7):
        torch.testing.assert_close(sinusoidal_positions(5, dim), sinusoid(5, dim), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_the_core_is_a_pre_ln_encoder_that_pools_the_real_steps(pooling: str):
    core = make(pooling)
    lengths = [5, 3, 1]
    x = torch.randn(3, 5, 8)
    x[1, 3:] = 40.0  # padding steps: large, so that any leak shows
    x[2, 1:] = -40.0
    mask = torch.arange(5)[None, :] < torch.tensor(lengths)[:, None]
    with torch.no_grad():
        out = core(x, mask)  # [B, d]
        for b, length in enumerate(lengths):
            h = encode(core, x[b, :length])  # [1 + length, d]
            want = h[0] if pooling == "cls" else h[1:].mean(dim=0)
            torch.testing.assert_close(out[b], want, rtol=1e-4, atol=1e-5)
