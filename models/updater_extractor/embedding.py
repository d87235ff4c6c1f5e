"""Embeddings of instructions and queries: tuples of categorical fields -> one vector each.

Moskvichev & Liu 2021, §4.1 ("Representing queries and instructions"): every instruction and query is a
fixed-size vector built in a task-dependent way; for knowledge-graph-like data "concatenate the embeddings of
the source and target entities, together with a relation embedding". Here every field (e.g. x, y, value) has
its own embedding table, the field embeddings are concatenated and linearly projected to the model width:

    e = W [E_1(v_1); E_2(v_2); ...; E_F(v_F)] + b        v [B, N, F] int64 -> e [B, N, d_model]

The final projection is our choice (the paper does not say how the concatenation reaches the model width).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn


class FieldEmbedding(nn.Module):
    """int64 [B, N, F] field values -> [B, N, d_model]: one table per field, concatenated, projected."""

    def __init__(self, field_sizes: Sequence[int], field_size: int, d_model: int) -> None:
        super().__init__()
        sizes = [int(size) for size in field_sizes]
        if not sizes or min(sizes) < 1:
            raise ValueError(f"every field needs at least one value; got field sizes {sizes}")
        self.field_sizes = sizes
        self.tables = nn.ModuleList(nn.Embedding(size, int(field_size)) for size in sizes)
        self.project = nn.Linear(len(sizes) * int(field_size), int(d_model))

    def forward(self, values: torch.Tensor) -> torch.Tensor:
        if values.shape[-1] != len(self.tables):
            raise ValueError(f"expected {len(self.tables)} fields per entry, got {values.shape[-1]}")
        parts = [table(values[..., i]) for i, table in enumerate(self.tables)]  # F x [B, N, field_size]
        return self.project(torch.cat(parts, dim=-1))  # [B, N, d_model]
