"""The single-layer LSTM of Experiment 0 (Moskvichev & Liu 2021, §7.1 and Appendix B, "Experiment 0 (LSTM
recall)") on the harness's ``stream`` interface: the Updater is the LSTM's state update, the Extractor one of

* ``linear`` (the failure case): "a single matrix, mapping the hidden state to the distribution over
  answers"; every query of a step gets the same logits, the query itself is ignored;
* ``query_mlp`` (the success case): the hidden state concatenated with the query's embedding, through "an
  MLP with one hidden layer (width 64)".

    x_t        = masked mean of FieldEmbedding(I_t) over the step's instructions   [B, E]; zeros if none
    (h_t, c_t) = LSTMCell(x_t, (h_{t-1}, c_{t-1}))                                  state, zeros at t = 0
    linear:     y = W h_t                                                           [B, Q, A] (same for every q)
    query_mlp:  y = MLP([h_t; FieldEmbedding(q)])                                   [B, Q, A]

Choices the paper leaves open: the input embedding (one table per field, concatenated and projected to
``model.embedding_size``, as the Updater-Extractor's), the mean over a step's instructions (Experiment 0 has
exactly one instruction per step, the token), a ReLU in the MLP's hidden layer, and a zero initial state.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from harness.streams import StreamStep
from models.updater_extractor.embedding import FieldEmbedding

EXTRACTORS = ("linear", "query_mlp")


class StreamLSTM(nn.Module):
    """The stream model: initial_state(B) -> (h, c) each [B, H]; update(state, step) -> (h, c);
    extract(state, step) -> logits [B, Q, num_answers]."""

    def __init__(self, cfg: Any, info: dict[str, Any]) -> None:
        super().__init__()
        self.kind = str(cfg.extractor)
        if self.kind not in EXTRACTORS:
            raise ValueError(f"model.extractor must be one of {', '.join(EXTRACTORS)}, got '{self.kind}'")
        hidden, embedding, field_size = int(cfg.hidden_size), int(cfg.embedding_size), int(cfg.field_size)
        answers = int(info["num_answers"])
        self.hidden_size = hidden
        self.embed_instructions = FieldEmbedding(info["instruction_fields"], field_size, embedding)
        self.cell = nn.LSTMCell(embedding, hidden)
        if self.kind == "linear":
            self.readout: nn.Module = nn.Linear(hidden, answers)
            self.embed_queries: FieldEmbedding | None = None
        else:
            self.embed_queries = FieldEmbedding(info["query_fields"], field_size, embedding)
            self.readout = nn.Sequential(nn.Linear(hidden + embedding, int(cfg.mlp_hidden)), nn.ReLU(),
                                         nn.Linear(int(cfg.mlp_hidden), answers))

    def initial_state(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        zeros = self.cell.weight_hh.new_zeros(batch_size, self.hidden_size)  # [B, H]
        return zeros, zeros.clone()

    def update(self, state: tuple[torch.Tensor, torch.Tensor], step: StreamStep) -> tuple[torch.Tensor, torch.Tensor]:
        embedded = self.embed_instructions(step.instructions)  # [B, I, E]
        weights = step.instruction_mask.unsqueeze(-1).to(embedded.dtype)  # [B, I, 1]
        x = (embedded * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)  # [B, E]; zeros for an empty set
        h, c = self.cell(x, state)
        return h, c

    def extract(self, state: tuple[torch.Tensor, torch.Tensor], step: StreamStep) -> torch.Tensor:
        h = state[0]  # [B, H]
        queries = step.queries.shape[1]
        if self.embed_queries is None:  # linear: the query is not read
            return self.readout(h).unsqueeze(1).expand(-1, queries, -1)  # [B, Q, A]
        q = self.embed_queries(step.queries)  # [B, Q, E]
        return self.readout(torch.cat([h.unsqueeze(1).expand(-1, queries, -1), q], dim=-1))  # [B, Q, A]
