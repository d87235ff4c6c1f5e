"""A central module reads a token sequence (the ``sequence`` interface) as a set of entities.

A short sequence is one entity per token; a long one (more than ``model.max_entities`` tokens, e.g. ListOps'
2,000) is cut into N = ceil(L / c) chunks of c = ceil(L / max_entities) consecutive tokens, and each chunk is
one entity, much as the Updater-Extractor feeds a long input chunk by chunk ("Updater-Extractor Architecture
for Inductive World State Representations", §7.3):

    e_l  = E[x_l]                                     token l's embedding            [B, L, d]   (padding: 0)
    u_n  = W [e_{nc+1}; ...; e_{nc+c}] + P[n]         chunk n: its c embeddings concatenated, projected,
                                                      plus chunk n's learned position vector   [B, N, d]
    u_n  = 0 for a chunk with no real token           (padding entities, as the empty cells of an image)
    R*   = central([u_1 .. u_N])                                                     [B, out_dim]
    logits = output MLP(R*)                                                          [B, num_classes]

Concatenating the chunk's embeddings keeps the order of its tokens (a sum would lose it); P[n] gives the order
of the chunks. With c = 1 an entity is W E[x_l] + P[l], the token's embedding plus its position. The chunk size
is fixed by the data's ``max_len`` (``info``), so every example of a task is read with the same c.

The central module is built by name exactly as for images (``models.relational.central``) and keeps its
paper's initialisation; the output MLP is the Relations Game head (``model.output_hidden`` units). Not from
any paper: the harness's route for running the relational modules on sequence tasks (ListOps, Pathfinder as
pixel tokens), so that the task x model matrix compares like with like.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from models.relational.central import build_central
from models.relational.head import ClassifierHead
from models.relational.init import paper_init_


def chunking(max_len: int, max_entities: int) -> tuple[int, int]:
    """(chunk size c, entity count N) for sequences of up to ``max_len`` tokens and at most ``max_entities``
    entities: c = ceil(max_len / max_entities), N = ceil(max_len / c)."""
    size = max(1, math.ceil(max_len / max_entities))
    return size, max(1, math.ceil(max_len / size))


class SequenceEntityModel(nn.Module):
    """(tokens [B, L], length [B]) -> logits [B, num_classes]."""

    def __init__(self, cfg: Any, info: dict[str, Any]) -> None:
        super().__init__()
        dim = int(cfg.token_size)
        self.max_len = int(info["max_len"])
        self.chunk, self.entities = chunking(self.max_len, int(cfg.max_entities))
        self.embed = nn.Embedding(int(info["vocab_size"]), dim, padding_idx=0)
        self.project = nn.Linear(self.chunk * dim, dim)  # W
        self.position = nn.Parameter(torch.randn(self.entities, dim) * 0.1)  # P[n]
        self.central = build_central(str(cfg.central), self.entities, dim, cfg)
        paper_init_(self.central)
        self.head = ClassifierHead(self.central.out_dim, int(info["num_classes"]), 1, hidden=int(cfg.output_hidden))

    def entities_of(self, tokens: torch.Tensor, length: torch.Tensor) -> torch.Tensor:
        """tokens [B, L], length [B] -> entities [B, N, d] (padding chunks are zero)."""
        b, steps = tokens.shape
        if steps > self.max_len:
            raise ValueError(f"a sequence of {steps} tokens is longer than the {self.max_len} this model was built for")
        real = torch.arange(steps, device=tokens.device).unsqueeze(0) < length.unsqueeze(1)  # [B, L]
        tokens = F.pad(tokens * real, (0, self.chunk * self.entities - steps))  # [B, N*c], 0 = padding
        chunks = self.embed(tokens).reshape(b, self.entities, -1)  # [B, N, c*d]
        filled = (torch.arange(self.entities, device=tokens.device) * self.chunk).unsqueeze(0) < length.unsqueeze(1)
        return (self.project(chunks) + self.position) * filled.unsqueeze(-1)  # [B, N, d]

    def forward(self, tokens: torch.Tensor, length: torch.Tensor) -> torch.Tensor:
        return self.head(self.central(self.entities_of(tokens, length)))  # [B, num_classes]
