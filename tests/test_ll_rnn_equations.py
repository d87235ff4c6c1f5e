"""Gradients of the linear-logic RNN (Hu & Murfet 2016, §2, eqs. (2.2)-(2.4)): backpropagation through time
must see every path by which the state enters the next one (H h, the programs p_i = sigma(P_i h) of (2.2), and h
as part of y = E x (+) h in (2.3)), so the batched core's gradients equal those of the literal per-example update
of tests/test_ll_rnn.py."""

from __future__ import annotations

import pytest
import torch

from tests.test_ll_rnn import literal_state, make_core, relu


@pytest.mark.parametrize("degree", [2, 3])
def test_gradients_equal_those_of_the_literal_update(degree: int):
    core = make_core(degree)
    g = torch.Generator().manual_seed(4)
    x = torch.rand(2, 5, 6, generator=g, dtype=torch.float64, requires_grad=True)
    mask = torch.arange(5).unsqueeze(0) < torch.tensor([[5], [3]])
    weights = torch.randn(2, core.out_dim, generator=g, dtype=torch.float64)
    params = [x, *core.parameters()]
    got = torch.autograd.grad((core(x, mask) * weights).sum(), params, allow_unused=True)
    literal = sum((literal_state(core, x[b, :length], relu) * weights[b]).sum() for b, length in enumerate((5, 3)))
    want = torch.autograd.grad(literal, params, allow_unused=True)
    assert want[0].abs().sum() > 0
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12)
