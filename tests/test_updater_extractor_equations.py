"""The Updater-Extractor (Moskvichev & Liu 2021, §4.1 and Figure 1) and the Experiment 0 LSTMs (§7.1, Appendix B)
against a literal transcription of the layers the models/updater_extractor docstrings describe, written with
explicit per-head matrix products from the modules' parameters:

    decoder layer (pre-LN, Xiong et al. 2020):  x += SelfAttn(LN(x)) (Updater only); x += CrossAttn(LN(x), context);
                                                 x += FF(LN(x))
    attention (Vaswani et al. 2017, §3.2.2):     softmax_keys(Q K^T / sqrt(d_head)) V per head, heads concatenated
    Updater:     world tokens attend to themselves and to [no-instruction token; instructions], final LN
    Extractor:   queries attend to the world tokens only, final LN, then a linear layer to the answers
    positions:   ``state``: P added to the state where it is read; ``attention``: P added to the queries and keys
                 of the attentions that read world tokens (the Updater's self-attention and cross-attention
                 queries, the Extractor's keys), never to values or the residual stream
    sequence core: e = Linear(x) + sinusoidal PE; consecutive chunks of ``chunk_size`` update the state; one
                 learned class query is extracted
    LSTM (Hochreiter & Schmidhuber 1997, with a forget gate): the step's instructions' masked mean as input;
                 the linear extractor reads h, the query MLP reads [h; q]."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from torch import nn

from models.updater_extractor.core import UpdaterExtractorCore
from models.updater_extractor.embedding import FieldEmbedding
from models.updater_extractor.stream_lstm import StreamLSTM
from models.updater_extractor.updater_extractor import DecoderLayer, Extractor, Updater, UpdaterExtractor
from tests.test_updater_extractor import INFO, lstm_cfg, random_step, ue_cfg

Tensor = torch.Tensor


def layer_norm(norm: nn.LayerNorm, x: Tensor) -> Tensor:
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + norm.eps) * norm.weight + norm.bias


def attention(mha: nn.MultiheadAttention, query: Tensor, key: Tensor, value: Tensor,
              ignore: Tensor | None = None) -> Tensor:
    """Multi-head attention for one example: query [N, D], key and value [K, D], ignore [K] True = masked."""
    d, heads = mha.embed_dim, mha.num_heads
    w, b = mha.in_proj_weight, mha.in_proj_bias
    q, k, v = query @ w[:d].T + b[:d], key @ w[d:2 * d].T + b[d:2 * d], value @ w[2 * d:].T + b[2 * d:]
    size = d // heads
    outs = []
    for h in range(heads):
        part = slice(h * size, (h + 1) * size)
        scores = q[:, part] @ k[:, part].T / math.sqrt(size)  # [N, K]
        if ignore is not None:
            scores = scores.masked_fill(ignore, float("-inf"))
        outs.append(torch.softmax(scores, dim=-1) @ v[:, part])  # softmax over the keys
    return torch.cat(outs, dim=-1) @ mha.out_proj.weight.T + mha.out_proj.bias


def decoder_layer(layer: DecoderLayer, x: Tensor, context: Tensor, ignore: Tensor | None = None,
                  positions: Tensor | None = None, context_positions: Tensor | None = None) -> Tensor:
    def placed(t: Tensor, p: Tensor | None) -> Tensor:
        return t if p is None else t + p

    if layer.self_attn is not None and layer.norm_self is not None:
        h = layer_norm(layer.norm_self, x)
        x = x + attention(layer.self_attn, placed(h, positions), placed(h, positions), h)
    h = layer_norm(layer.norm_cross, x)
    x = x + attention(layer.cross_attn, placed(h, positions), placed(context, context_positions), context, ignore)
    hidden = torch.relu(layer_norm(layer.norm_ff, x) @ layer.ff[0].weight.T + layer.ff[0].bias)
    return x + hidden @ layer.ff[3].weight.T + layer.ff[3].bias


def updater(module: Updater, world: Tensor, instructions: Tensor, mask: Tensor,
            positions: Tensor | None) -> Tensor:
    """One example: world [S, D], instructions [I, D], mask [I] True = real -> w_t [S, D]."""
    context = torch.cat([module.no_instruction[0], instructions])  # [1 + I, D]
    ignore = torch.cat([torch.zeros(1, dtype=torch.bool), ~mask])
    x = world
    for layer in module.layers:
        x = decoder_layer(layer, x, context, ignore, positions=positions)
    return layer_norm(module.norm, x)


def extractor(module: Extractor, queries: Tensor, world: Tensor, world_positions: Tensor | None) -> Tensor:
    x = queries
    for layer in module.layers:
        x = decoder_layer(layer, x, world, context_positions=world_positions)
    return layer_norm(module.norm, x)


def fields(embed: FieldEmbedding, values: Tensor) -> Tensor:
    """[N, F] -> [N, D]: W [E_1(v_1); ...; E_F(v_F)] + b."""
    parts = [table.weight[values[:, i]] for i, table in enumerate(embed.tables)]
    return torch.cat(parts, dim=-1) @ embed.project.weight.T + embed.project.bias


def perturb(model: nn.Module) -> None:
    """LayerNorm gains and every bias away from their initial 1 and 0, so that each term shows."""
    g = torch.Generator().manual_seed(11)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or ".norm" in name or name.startswith("norm"):
                p.add_(0.3 * torch.randn(p.shape, generator=g))


def read(model: Any, state: Tensor) -> tuple[Tensor, Tensor | None]:
    """The world tokens as the attentions see them: (state + P, None) or (state, P) by ``model.positions``."""
    if model.world.mode == "attention":
        return state, model.world.positions
    return state + model.world.positions, None


@pytest.mark.parametrize("positions", ["state", "attention"])
def test_update_and_extract_are_the_decoder_equations(positions: str):
    torch.manual_seed(0)
    model = UpdaterExtractor(ue_cfg(positions=positions, updater_layers=2, extractor_layers=2), INFO).eval()
    perturb(model)
    g = torch.Generator().manual_seed(3)
    first, second = random_step(g), random_step(g)
    with torch.no_grad():
        state = model.update(model.initial_state(3), first)
        new = model.update(state, second)
        logits = model.extract(new, second)
        for b in range(3):
            for before, after, step in ((model.world.initial, state[b], first), (state[b], new[b], second)):
                world, world_positions = read(model, before)
                instructions = fields(model.embed_instructions, step.instructions[b])
                want = updater(model.updater, world, instructions, step.instruction_mask[b], world_positions)
                torch.testing.assert_close(after, want, rtol=1e-5, atol=1e-5)
            world, world_positions = read(model, new[b])
            out = extractor(model.extractor, fields(model.embed_queries, second.queries[b]), world, world_positions)
            want = out @ model.answer.weight.T + model.answer.bias
            torch.testing.assert_close(logits[b], want, rtol=1e-5, atol=1e-5)


def sinusoid(length: int, dim: int) -> Tensor:
    """Vaswani et al. 2017, §3.5: PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d))."""
    table = torch.zeros(length, dim)
    for pos in range(length):
        for i in range(dim):
            angle = pos / 10000 ** ((i - i % 2) / dim)
            table[pos, i] = math.sin(angle) if i % 2 == 0 else math.cos(angle)
    return table


@pytest.mark.parametrize("positions", ["state", "attention"])
def test_the_core_feeds_consecutive_chunks_with_sinusoidal_positions(positions: str):
    torch.manual_seed(0)
    core = UpdaterExtractorCore(ue_cfg(positions=positions, chunk_size=3)).eval()
    perturb(core)
    lengths = [8, 4]
    x = torch.randn(2, 8, 16)
    mask = torch.arange(8)[None, :] < torch.tensor(lengths)[:, None]
    with torch.no_grad():
        out = core(x, mask)
        for b, length in enumerate(lengths):
            e = x[b, :length] @ core.project.weight.T + core.project.bias + sinusoid(length, 16)
            state = core.world.initial
            for start in range(0, length, 3):
                chunk = e[start:start + 3]
                world, world_positions = read(core, state)
                state = updater(core.updater, world, chunk, torch.ones(len(chunk), dtype=torch.bool), world_positions)
            world, world_positions = read(core, state)
            want = extractor(core.extractor, core.class_query[0], world, world_positions)[0]
            torch.testing.assert_close(out[b], want, rtol=1e-5, atol=1e-5)


def lstm_cell(cell: nn.LSTMCell, x: Tensor, h: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
    gates = x @ cell.weight_ih.T + cell.bias_ih + h @ cell.weight_hh.T + cell.bias_hh
    i, f, g, o = gates.chunk(4)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


@pytest.mark.parametrize("kind", ["linear", "query_mlp"])
def test_the_stream_lstm_reads_the_mean_instruction_and_answers_from_h(kind: str):
    """Experiment 0: x_t the mean of the step's real instructions' embeddings (zeros for none); the linear
    extractor is "a single matrix, mapping the hidden state to the distribution over answers"; the query MLP
    reads [h; q]."""
    torch.manual_seed(0)
    model = StreamLSTM(lstm_cfg(kind), INFO)
    g = torch.Generator().manual_seed(5)
    mask = torch.tensor([[True, False, True, True, False], [False] * 5, [True] * 5])
    first, second = random_step(g, instruction_mask=mask), random_step(g)
    with torch.no_grad():
        state = model.update(model.initial_state(3), first)
        state = model.update(state, second)
        logits = model.extract(state, second)
        for b in range(3):
            h = c = torch.zeros(16)
            for step in (first, second):
                embedded = fields(model.embed_instructions, step.instructions[b])[step.instruction_mask[b]]
                x = embedded.mean(dim=0) if len(embedded) else torch.zeros(12)
                h, c = lstm_cell(model.cell, x, h, c)
            torch.testing.assert_close(state[0][b], h, rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(state[1][b], c, rtol=1e-5, atol=1e-6)
            if kind == "linear":
                want = (h @ model.readout.weight.T + model.readout.bias).expand(logits.shape[1], -1)
            else:
                q = fields(model.embed_queries, second.queries[b])  # [Q, E]
                joined = torch.cat([h.expand(len(q), -1), q], dim=-1)
                hidden = torch.relu(joined @ model.readout[0].weight.T + model.readout[0].bias)
                want = hidden @ model.readout[2].weight.T + model.readout[2].bias
            torch.testing.assert_close(logits[b], want, rtol=1e-5, atol=1e-6)
