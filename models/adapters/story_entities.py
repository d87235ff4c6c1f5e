"""A central module reads a bAbI story as a set of entities: one per statement, plus one for the question.

Each sentence becomes one vector as in End-To-End Memory Networks (Sukhbaatar et al., NeurIPS 2015, §4.1,
"position encoding"): the sum of its word embeddings, each weighted elementwise by

    l_kj = (1 - j/J) - (k/d) (1 - 2j/J)          word j of J, embedding dimension k of d (1-based)

so word order inside a sentence counts. Deviation: J here is the padded sentence width of the data set
(``info["max_sent_len"]``, for every statement and the question alike, as ``sentence_size`` in the public
domluna/memn2n, memn2n/memn2n.py), not the number of words in that sentence as in the paper and in
``models.memn2n.encoding``; a sentence's weights therefore depend on the longest sentence of the data set.

Statement t then gets a learned slot vector (the paper's temporal encoding, ordered from the story's start), the
question a learned "question" vector of its own:

    s_t = sum_j l_j * E[w_tj] + T[t]     for each real statement t      [B, T, d]  (padding slots: 0)
    q   = sum_j l_j * E[q_j]  + Q                                        [B, 1, d]
    R*  = central([s_1 .. s_T, q])                                       [B, out_dim]
    logits = output MLP(R*)                                              [B, num_classes]

The central module is built by name exactly as for images (``models.relational.central``) and keeps its
paper's initialisation; the output MLP is the Relations Game head (``model.output_hidden`` units). Not from
any paper: this is the harness's route for running the relational modules on bAbI, so that the task x model
matrix compares like with like. Padding statements are zero entities; the central modules see them (they
take no mask), as they see the empty cells of an image.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from models.relational.central import build_central
from models.relational.head import ClassifierHead
from models.relational.init import paper_init_


def position_encoding(words: int, dim: int) -> torch.Tensor:
    """MemN2N's position weights l [W, d] (Sukhbaatar et al. 2015, §4.1)."""
    j = torch.arange(1, words + 1, dtype=torch.float32).unsqueeze(1)  # [W, 1]
    k = torch.arange(1, dim + 1, dtype=torch.float32).unsqueeze(0)  # [1, d]
    return (1 - j / words) - (k / dim) * (1 - 2 * j / words)


class StoryEntityModel(nn.Module):
    """(story [B, T, W], story_len [B], query [B, W]) -> logits [B, num_classes]."""

    def __init__(self, cfg: Any, info: dict[str, Any]) -> None:
        super().__init__()
        dim = int(cfg.word_size)
        self.slots, words = int(info["max_story_len"]), int(info["max_sent_len"])
        self.embed = nn.Embedding(int(info["vocab_size"]), dim, padding_idx=0)
        self.register_buffer("position", position_encoding(words, dim), persistent=False)  # [W, d]
        self.slot = nn.Parameter(torch.randn(self.slots, dim) * 0.1)  # T[t]
        self.question = nn.Parameter(torch.randn(dim) * 0.1)  # Q
        self.central = build_central(str(cfg.central), self.slots + 1, dim, cfg)
        paper_init_(self.central)
        self.head = ClassifierHead(self.central.out_dim, int(info["num_classes"]), 1, hidden=int(cfg.output_hidden))

    def encode(self, words: torch.Tensor) -> torch.Tensor:
        """Word ids [..., W] -> sentence vectors [..., d]."""
        return (self.embed(words) * self.position).sum(dim=-2)

    def forward(self, story: torch.Tensor, story_len: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        real = (torch.arange(story.shape[1], device=story.device) < story_len.unsqueeze(1)).unsqueeze(-1)  # [B, T, 1]
        statements = (self.encode(story) + self.slot[: story.shape[1]]) * real  # [B, T, d]
        question = (self.encode(query) + self.question).unsqueeze(1)  # [B, 1, d]
        return self.head(self.central(torch.cat([statements, question], dim=1)))  # [B, num_classes]
