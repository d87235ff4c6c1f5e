"""MemN2N's sentence representation, position encoding (Sukhbaatar et al. 2015, §4.1 "Sentence Representation"):

    m_i = sum_j l_j * A x_ij,    l_kj = (1 - j/J) - (k/d)(1 - 2j/J)

with j = 1..J the word's place in the sentence, J the number of words *in that sentence* and k = 1..d the
embedding dimension (the paper's 1-based indices). The same representation serves questions, memory inputs
and memory outputs. Because J is the sentence's own length, padding words after it change nothing.

Computed as the paper writes it, with one-hot words: l_kj = a_j + (k/d) b_j where a_j = 1 - j/J and
b_j = 2j/J - 1, so a sentence is

    m = a^T X A + (k/d) * b^T X A      X [J, V] the sentence's one-hot words

and two "bags" (sum_j a_j x_j and sum_j b_j x_j, each [V]) times the stacked tables of every hop give all of a
statement's representations in two matrix products, instead of gathering a [W, d] weight grid per word and table.
"""

from __future__ import annotations

import torch


def position_coefficients(tokens: torch.Tensor,
                          dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """(a_j, b_j) with l_kj = a_j + (k/d) b_j: word ids [..., W] (0 = padding, real words first) -> two [..., W],
    zero past each sentence's J words."""
    real = tokens != 0  # [..., W]
    length = real.sum(dim=-1, keepdim=True).clamp(min=1).to(dtype)  # [..., 1] J
    j = torch.arange(1, tokens.shape[-1] + 1, device=tokens.device, dtype=dtype)  # [W]
    return (1 - j / length) * real, (2 * j / length - 1) * real


def position_bags(tokens: torch.Tensor, vocab: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """sum_j a_j x_j and sum_j b_j x_j: word ids [..., W] -> [..., 2, vocab]."""
    a, b = position_coefficients(tokens, dtype)
    coefficients = torch.stack([a, b], dim=-2)  # [..., 2, W]
    index = tokens.unsqueeze(-2).expand(coefficients.shape)  # [..., 2, W]
    bags = coefficients.new_zeros(*tokens.shape[:-1], 2, vocab)
    return bags.scatter_add_(-1, index, coefficients)


def encode(tokens: torch.Tensor, tables: torch.Tensor) -> torch.Tensor:
    """Each sentence's PE representation under each of n tables: word ids [..., W], tables [n, V, d] (null row zero)
    -> [..., n, d]."""
    count, vocab, dim = tables.shape
    bags = position_bags(tokens, vocab, tables.dtype)  # [..., 2, V]
    stacked = tables.permute(1, 0, 2).reshape(vocab, count * dim)  # [V, n * d]
    summed = (bags @ stacked).unflatten(-1, (count, dim))  # [..., 2, n, d]
    k_over_d = torch.arange(1, dim + 1, device=tables.device, dtype=tables.dtype) / dim  # [d]
    return summed[..., 0, :, :] + k_over_d * summed[..., 1, :, :]
