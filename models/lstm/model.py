"""A word-level LSTM reader, the recurrent baseline of the bAbI paper (Weston et al. 2015, §5: an LSTM
reads the story and then the question, and its last state predicts the answer word).

The story's statements are read in order as one stream of words (padding removed; each statement
ends with its own "." token), followed by the question's words:

    x = [story words ..., question words ...]        [B, L]
    h = LSTM(Embed(x))                              final hidden state [B, H]
    logits = Linear(h)                              [B, V]
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence


def flatten_story(story: torch.Tensor, query: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """story [B, T, W], query [B, W] -> tokens [B, T*W + W] with padding moved to the end, lengths [B]."""
    tokens = torch.cat([story.flatten(1), query], dim=1)  # [B, L]
    is_pad = (tokens == 0).to(torch.int8)
    order = torch.argsort(is_pad, dim=1, stable=True)  # real tokens first, in reading order
    return tokens.gather(1, order), (1 - is_pad).sum(dim=1)


class LSTMStoryReader(nn.Module):
    """(story [B, T, W], story_len [B], query [B, W]) -> logits [B, V]"""

    def __init__(self, cfg: Any, info: dict[str, Any]) -> None:
        super().__init__()
        vocab = int(info["vocab_size"])
        self.embed = nn.Embedding(vocab, int(cfg.embedding_size), padding_idx=0)
        self.lstm = nn.LSTM(int(cfg.embedding_size), int(cfg.hidden_size), num_layers=int(cfg.layers),
                            batch_first=True, dropout=float(cfg.dropout) if int(cfg.layers) > 1 else 0.0)
        self.out = nn.Linear(int(cfg.hidden_size), int(info["num_classes"]))

    def forward(self, story: torch.Tensor, story_len: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        tokens, lengths = flatten_story(story, query)
        longest = int(lengths.max())
        packed = pack_padded_sequence(self.embed(tokens[:, :longest]), lengths.clamp(min=1).cpu(),
                                      batch_first=True, enforce_sorted=False)
        _, (hidden, _) = self.lstm(packed)  # hidden [layers, B, H]
        return self.out(hidden[-1])
