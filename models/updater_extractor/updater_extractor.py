"""The Updater-Extractor model (Moskvichev & Liu 2021, §4, §4.1 and Figure 1) on the harness's ``stream``
interface, and its building blocks (reused by the sequence core in ``core.py``).

    w_0 = W0                                    a learned [S, D] table, expanded over the batch
    u_t = FieldEmbedding(I_t)                   instructions [B, I, F] -> [B, I, D]          (§4.1)
    w_t = Updater(w_{t-1} + P, [u_t; n])        S world tokens: self-attention among them, cross-attention
                                                to the instructions and a "no instruction" token n   (§4.1)
    q   = FieldEmbedding(Q_t)                   queries [B, Q, G] -> [B, Q, D]
    y   = Linear(Extractor(q, w_t + P))         cross-attention to the world state, no self-attention
                                                between queries (§4.1); a final linear layer to the answers
                                                (Appendix B: "an additional fully-connected layer on top")

The world state is ``model.tokens`` tokens of width ``model.d_model`` with learned positional embeddings P,
added where the Updater and the Extractor read it (§4.1: "a sequence of tokens with positional embeddings").
Training (Algorithm 1, §6) lives in the stepwise runner: it detaches the state between steps.

Choices the paper leaves open (also in the README):

* Appendix B gives one "query/key/value dimension" per experiment; we read it as d_model, the width of the
  tokens (and split it over ``model.heads`` heads).
* Pre-LayerNorm layers (Xiong et al., ICML 2020) with ReLU feed-forward blocks as in Vaswani et al. 2017; the
  paper says "vanilla transformer layers" and does not say where the norms go.
* The Updater's output goes through a final LayerNorm: w_t is the normalised output, which keeps the state
  bounded when it is rolled forward for 10,000 steps (§7.2). The Extractor also ends with a LayerNorm before
  its linear layer, as every pre-LN stack does.
* w_0 is a learned parameter (§3.1 only asks that w_0 "come from some fixed distribution"; Appendix A allows a
  constant). The stepwise runner applies STOP_GRADIENT to w_{t-1} only from t = 2 on, so w_0 is trained.
* An instruction set may be empty (a step with nothing to tell). Cross-attention over an all-masked set is
  undefined (a softmax over nothing), so one learned "no instruction" token is appended to every step's
  instructions and is always attendable. With no real instruction the Updater still runs: the world evolves
  by its own dynamics (the Game of Life without interventions).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from harness.streams import StreamStep
from models.updater_extractor.embedding import FieldEmbedding


def check_heads(d_model: int, heads: int) -> None:
    """Multi-head attention splits d_model over the heads."""
    if heads < 1 or d_model % heads:
        raise ValueError(f"model.d_model ({d_model}) must be a multiple of model.heads ({heads})")


class DecoderLayer(nn.Module):
    """One pre-LN transformer decoder layer; ``self_attention=False`` drops the self-attention sublayer
    (the Extractor's layers, §4.1).

        x = x + SelfAttn(LN(x))                    (if self_attention)
        x = x + CrossAttn(LN(x), context)          context [B, K, D], padding [B, K] True = ignore
        x = x + FF(LN(x))                          Linear(D, ff) -> ReLU -> Linear(ff, D)

    ``positions`` [N, D] (of x's tokens) and ``context_positions`` [K, D], when given, are added to the
    attention's queries and keys only, never to its values or the residual stream (``model.positions:
    attention``, see :class:`WorldTokens`).
    """

    def __init__(self, d_model: int, heads: int, ff_size: int, dropout: float, self_attention: bool) -> None:
        super().__init__()
        check_heads(d_model, heads)
        self.self_attn = nn.MultiheadAttention(d_model, heads, dropout=dropout, batch_first=True) \
            if self_attention else None
        self.norm_self = nn.LayerNorm(d_model) if self_attention else None
        self.cross_attn = nn.MultiheadAttention(d_model, heads, dropout=dropout, batch_first=True)
        self.norm_cross = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, ff_size), nn.ReLU(), nn.Dropout(dropout),
                                nn.Linear(ff_size, d_model))
        self.norm_ff = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, context: torch.Tensor, padding: torch.Tensor | None = None,
                positions: torch.Tensor | None = None, context_positions: torch.Tensor | None = None) -> torch.Tensor:
        if self.self_attn is not None and self.norm_self is not None:
            h = self.norm_self(x)  # [B, N, D]
            located = h if positions is None else h + positions
            x = x + self.dropout(self.self_attn(located, located, h, need_weights=False)[0])
        h = self.norm_cross(x)
        query = h if positions is None else h + positions
        keys = context if context_positions is None else context + context_positions
        x = x + self.dropout(self.cross_attn(query, keys, context, key_padding_mask=padding, need_weights=False)[0])
        return x + self.dropout(self.ff(self.norm_ff(x)))  # [B, N, D]


POSITIONS = ("state", "attention")


class WorldTokens(nn.Module):
    """The world state's learned initial value w_0 and the positional embeddings P of its tokens.

    ``model.positions`` says where P enters (§4.1 only says the state is "a sequence of tokens with positional
    embeddings"):

    * ``state``: P is added to the state wherever it is read, so the Updater's residual stream carries it and
      it is normalised into w_t with everything else; a state rolled forward then holds P once more after each
      step, which shifts it from step to step.
    * ``attention``: P is added to the queries and keys of every attention that reads the world tokens (their
      self-attention and cross-attention queries in the Updater, the Extractor's keys), as in DETR (Carion et
      al. 2020, §3.2); the state itself holds content only, so step t + 1 reads w_t in the same form as step t
      read w_{t-1}.
    """

    def __init__(self, tokens: int, d_model: int, positions: str = "state") -> None:
        super().__init__()
        if positions not in POSITIONS:
            raise ValueError(f"model.positions must be one of {', '.join(POSITIONS)}, not {positions!r}")
        self.mode = positions
        self.initial = nn.Parameter(torch.randn(tokens, d_model) * 0.02)  # w_0 [S, D]
        self.positions = nn.Parameter(torch.randn(tokens, d_model) * 0.02)  # P [S, D]

    def start(self, batch_size: int) -> torch.Tensor:
        return self.initial.unsqueeze(0).expand(batch_size, -1, -1)  # [B, S, D]

    def read(self, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The state as the Updater and the Extractor see it, and the positions their attentions add to it:
        (state + P, None) or (state, P)."""
        if self.mode == "attention":
            return state, self.positions  # [B, S, D], [S, D]
        return state + self.positions, None  # [B, S, D]


class Updater(nn.Module):
    """f_delta (§4.1): (world tokens with positions [B, S, D], instructions [B, I, D], mask [B, I]) -> w_t
    [B, S, D]. The instructions get one always-attendable learned "no instruction" token, so a step with an
    empty instruction set is well defined; the output is layer-normalised."""

    def __init__(self, d_model: int, heads: int, layers: int, ff_size: int, dropout: float) -> None:
        super().__init__()
        self.no_instruction = nn.Parameter(torch.randn(1, 1, d_model) * 0.02)  # [1, 1, D]
        self.layers = nn.ModuleList(DecoderLayer(d_model, heads, ff_size, dropout, self_attention=True)
                                    for _ in range(layers))
        self.norm = nn.LayerNorm(d_model)

    def forward(self, world: torch.Tensor, instructions: torch.Tensor, mask: torch.Tensor,
                positions: torch.Tensor | None = None) -> torch.Tensor:
        batch = world.shape[0]
        context = torch.cat([self.no_instruction.expand(batch, 1, -1).to(instructions.dtype), instructions],
                            dim=1)  # [B, 1 + I, D]
        always = torch.ones(batch, 1, dtype=torch.bool, device=mask.device)
        padding = ~torch.cat([always, mask.bool()], dim=1)  # [B, 1 + I] True = ignore
        x = world
        for layer in self.layers:
            x = layer(x, context, padding, positions=positions)
        return self.norm(x)  # [B, S, D]


class Extractor(nn.Module):
    """f_epsilon without its output layer (§4.1): (queries [B, Q, D], world tokens with positions [B, S, D])
    -> [B, Q, D]. No self-attention: each query's output depends on that query and the world state only."""

    def __init__(self, d_model: int, heads: int, layers: int, ff_size: int, dropout: float) -> None:
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(d_model, heads, ff_size, dropout, self_attention=False)
                                    for _ in range(layers))
        self.norm = nn.LayerNorm(d_model)

    def forward(self, queries: torch.Tensor, world: torch.Tensor,
                world_positions: torch.Tensor | None = None) -> torch.Tensor:
        x = queries
        for layer in self.layers:
            x = layer(x, world, context_positions=world_positions)
        return self.norm(x)  # [B, Q, D]


def blocks_from_config(cfg: Any) -> tuple[WorldTokens, Updater, Extractor]:
    """The world tokens, Updater and Extractor that ``model.*`` describes (shared by the stream model and the
    sequence core)."""
    d_model, heads = int(cfg.d_model), int(cfg.heads)
    check_heads(d_model, heads)
    ff_size, dropout = int(cfg.ff_size), float(cfg.dropout)
    return (WorldTokens(int(cfg.tokens), d_model, str(cfg.get("positions", "state"))),
            Updater(d_model, heads, int(cfg.updater_layers), ff_size, dropout),
            Extractor(d_model, heads, int(cfg.extractor_layers), ff_size, dropout))


def used_instructions(instructions: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The instruction slots up to the last one that some world of the batch uses: ([B, I', F], [B, I']).

    A task pads every step's instruction set to ``max_instructions`` (World of Numbers: 500, for its first
    step; the Game of Life: 64, for its first step), while most steps tell far fewer (0..75; nothing at all).
    Padding slots are masked out of the Updater's cross-attention, so they get zero attention weight and
    dropping them changes nothing but the cost: a 10,000-step rollout no longer embeds and attends to
    hundreds of empty slots at every step.
    """
    used = mask.any(dim=0).nonzero()  # [n, 1] slots real in at least one world
    width = int(used.max()) + 1 if used.numel() else 0
    return instructions[:, :width], mask[:, :width]


class UpdaterExtractor(nn.Module):
    """The stream model: initial_state(B) -> [B, S, D]; update(w, step) -> [B, S, D];
    extract(w, step) -> logits [B, Q, num_answers]."""

    def __init__(self, cfg: Any, info: dict[str, Any]) -> None:
        super().__init__()
        d_model, field_size = int(cfg.d_model), int(cfg.field_size)
        self.world, self.updater, self.extractor = blocks_from_config(cfg)
        self.embed_instructions = FieldEmbedding(info["instruction_fields"], field_size, d_model)
        self.embed_queries = FieldEmbedding(info["query_fields"], field_size, d_model)
        self.answer = nn.Linear(d_model, int(info["num_answers"]))

    def initial_state(self, batch_size: int) -> torch.Tensor:
        return self.world.start(batch_size)  # w_0 [B, S, D]

    def update(self, state: torch.Tensor, step: StreamStep) -> torch.Tensor:
        told, mask = used_instructions(step.instructions, step.instruction_mask)  # [B, I', F], [B, I']
        instructions = self.embed_instructions(told)  # [B, I', D]
        world, positions = self.world.read(state)
        return self.updater(world, instructions, mask, positions)  # w_t [B, S, D]

    def extract(self, state: torch.Tensor, step: StreamStep) -> torch.Tensor:
        queries = self.embed_queries(step.queries)  # [B, Q, D]
        world, positions = self.world.read(state)
        return self.answer(self.extractor(queries, world, positions))  # [B, Q, num_answers]
