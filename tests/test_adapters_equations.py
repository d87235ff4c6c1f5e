"""The adapters of models/adapters against literal, loop-by-loop transcriptions of the rules their docstrings
state, computed from the modules' own parameters on tiny inputs; the central module or sequence core is treated
as a black box and only what it is fed (captured with a forward hook) is checked.

    story entities   End-To-End Memory Networks (Sukhbaatar et al., NeurIPS 2015, §4.1 "position encoding"):
                     s_t = sum_j l_j * E[w_tj] + T[t] for real statements t (0 for padding slots), then
                     q = sum_j l_j * E[q_j] + Q last, l_kj = (1 - j/J) - (k/d)(1 - 2j/J), 1-based j and k
    sequence entities u_n = W [e_{nc+1}; ...; e_{nc+c}] + P[n] for a chunk with a real token, else 0; consecutive
                     chunks of c = ceil(L / max_entities) tokens (cf. Moskvichev & Liu 2021, §7.3, chunked input)
    sequence readers story: the statements' words in order, then the question's; sequence: the tokens; image:
                     raster-order p x p patches of pixels / 255, each flattened (row, column, channel), linearly
                     projected, a learned task token first in a multi-task set; env: grid cells in raster order,
                     channels / 255 projected; state_env: x_i times a learned vector plus a bias; the mask is
                     True exactly on the first ``length`` steps
    state entities   e_i = x_i W_i + b_i
    torso            h = ReLU(Dense(...ReLU(Dense(z)))), logits = Dense_A(h), value = Dense_1(h) (Clift et al.,
                     ICLR 2020, §4.1), Keras defaults (Glorot uniform weights, zero biases) where the shell has them
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from omegaconf import OmegaConf
from torch import nn

from harness.config import compose
from models.adapters.sequence_entities import SequenceEntityModel, chunking
from models.adapters.sequence_readers import (
    ImageSequenceModel,
    SequenceAgent,
    StorySequenceModel,
    TokenSequenceModel,
    real_steps,
)
from models.adapters.state_entities import StateEntityAgent
from models.adapters.story_entities import StoryEntityModel, position_encoding

Tensor = torch.Tensor


def model_cfg(task: str, model: str, **extra: Any) -> Any:
    plain = OmegaConf.to_container(compose(task, model, "smoke").cfg.model, resolve=True)
    return OmegaConf.create({**plain, **extra})


class Capture:
    """Records the positional inputs of a module's forward calls."""

    def __init__(self, module: nn.Module) -> None:
        self.inputs: list[tuple[Tensor, ...]] = []
        module.register_forward_hook(lambda _m, args, _out: self.inputs.append(tuple(a.detach() for a in args)))


def relu_torso(torso: nn.Sequential, policy: nn.Linear, value: nn.Linear, z: Tensor) -> tuple[Tensor, Tensor]:
    """z [d] -> (logits [A], value []) with every Dense written as a sum over its inputs, ReLU after each."""
    h = z
    for layer in torso:
        if isinstance(layer, nn.Linear):
            h = torch.stack([sum(layer.weight[o, i] * h[i] for i in range(len(h))) + layer.bias[o]
                             for o in range(layer.out_features)])
            h = torch.where(h > 0, h, torch.zeros_like(h))
    logits = torch.stack([sum(policy.weight[a, i] * h[i] for i in range(len(h))) + policy.bias[a]
                          for a in range(policy.out_features)])
    return logits, sum(value.weight[0, i] * h[i] for i in range(len(h))) + value.bias[0]


# the MemN2N position encoding and the story entities ----------------------------------------------------------
def test_position_encoding_is_the_papers_formula_at_every_word_and_dimension():
    words, dim = 5, 7
    table = position_encoding(words, dim)  # [W, d]
    for j in range(1, words + 1):
        for k in range(1, dim + 1):
            want = (1 - j / words) - (k / dim) * (1 - 2 * j / words)
            assert table[j - 1, k - 1].item() == pytest.approx(want, abs=1e-6), (j, k)


STORY_INFO = {"vocab_size": 13, "num_classes": 13, "max_story_len": 4, "max_sent_len": 3}


def test_story_entities_are_position_encoded_statements_with_slots_then_the_question():
    torch.manual_seed(0)
    model = StoryEntityModel(model_cfg("babi", "mlp1"), STORY_INFO).eval()
    seen = Capture(model.central)
    story = torch.randint(1, 13, (2, 4, 3))  # every word real, so J = 3 for every sentence
    story[0, 2:] = 0  # story 0 has 2 statements; story 1 has 4
    story_len = torch.tensor([2, 4])
    query = torch.randint(1, 13, (2, 3))
    with torch.no_grad():
        model(story, story_len, query)
    entities = seen.inputs[0][0]  # [B, T + 1, d]
    emb, slot, question = model.embed.weight.detach(), model.slot.detach(), model.question.detach()
    d, big_j = emb.shape[1], 3

    def sentence(words: list[int]) -> Tensor:
        out = torch.zeros(d)
        for j, word in enumerate(words, start=1):
            for k in range(1, d + 1):
                out[k - 1] += ((1 - j / big_j) - (k / d) * (1 - 2 * j / big_j)) * emb[word, k - 1]
        return out

    assert entities.shape == (2, 5, d)
    for b in range(2):
        for t in range(4):
            want = sentence(story[b, t].tolist()) + slot[t] if t < story_len[b] else torch.zeros(d)
            torch.testing.assert_close(entities[b, t], want, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(entities[b, 4], sentence(query[b].tolist()) + question, rtol=1e-5, atol=1e-6)


# the chunked sequence entities -------------------------------------------------------------------------------
def test_sequence_entities_are_projected_consecutive_chunks_plus_positions_and_zero_padding_chunks():
    torch.manual_seed(0)
    info = {"vocab_size": 9, "num_classes": 3, "max_len": 10}
    model = SequenceEntityModel(model_cfg("babi", "mlp1", token_size=4, max_entities=4), info).eval()
    c, n = model.chunk, model.entities
    assert (c, n) == (3, 4) == chunking(10, 4)  # c = ceil(10 / 4), N = ceil(10 / 3)
    tokens = torch.randint(1, 9, (3, 10))
    length = torch.tensor([10, 6, 7])  # 6: chunks 0, 1 real, chunk 2 (tokens 6..8) empty
    with torch.no_grad():
        got = model.entities_of(tokens, length)  # [B, N, d]
    emb, weight, bias = model.embed.weight.detach(), model.project.weight.detach(), model.project.bias.detach()
    position = model.position.detach()
    d = emb.shape[1]
    for b in range(3):
        for chunk in range(n):
            concat = []  # [e_{nc+1}; ...; e_{nc+c}], token-major
            for i in range(chunk * c, chunk * c + c):
                word = int(tokens[b, i]) if i < length[b] else 0
                concat += emb[word].tolist()
            if chunk * c < length[b]:
                want = torch.tensor([sum(weight[o, i] * concat[i] for i in range(c * d)) + bias[o]
                                     for o in range(d)]) + position[chunk]
            else:
                want = torch.zeros(d)
            torch.testing.assert_close(got[b, chunk], want, rtol=1e-5, atol=1e-6)


# the sequence readers ------------------------------------------------------------------------------------------
def test_real_steps_are_exactly_the_first_length_steps():
    lengths = torch.tensor([0, 1, 3, 4])
    mask = real_steps(lengths, 4)
    for b, length in enumerate(lengths.tolist()):
        assert mask[b].tolist() == [t < length for t in range(4)]


def test_the_token_reader_feeds_the_core_the_embedded_tokens_and_a_mask_of_real_steps():
    torch.manual_seed(0)
    model = TokenSequenceModel(model_cfg("babi", "transformer"), {"vocab_size": 9, "num_classes": 4}).eval()
    seen = Capture(model.core)
    tokens = torch.randint(1, 9, (3, 6))
    length = torch.tensor([4, 2, 1])
    with torch.no_grad():
        logits = model(tokens, length)
    x, mask = seen.inputs[0]
    assert x.shape[1] == mask.shape[1] == 4  # cut to the longest example
    for b in range(3):
        assert mask[b].tolist() == [t < length[b] for t in range(4)]
        for t in range(int(length[b])):
            torch.testing.assert_close(x[b, t], model.embed.weight[tokens[b, t]].detach())
    core_out = model.core(x, mask).detach()
    torch.testing.assert_close(logits, core_out @ model.out.weight.detach().T + model.out.bias.detach())


def test_the_story_reader_reads_the_statements_words_in_order_then_the_question():
    torch.manual_seed(0)
    model = StorySequenceModel(model_cfg("babi", "lstm"), {"vocab_size": 13, "num_classes": 13}).eval()
    seen = Capture(model.core)
    story = torch.tensor([[[3, 4, 0], [5, 0, 0], [0, 0, 0]],
                          [[6, 7, 8], [9, 10, 0], [11, 0, 0]]])  # [B, T, W]
    query = torch.tensor([[12, 1, 0], [2, 0, 0]])
    with torch.no_grad():
        model(story, torch.tensor([2, 3]), query)
    x, mask = seen.inputs[0]
    for b in range(2):
        words = [w for t in range(3) for w in story[b, t].tolist() if w] + [w for w in query[b].tolist() if w]
        assert mask[b].tolist() == [t < len(words) for t in range(x.shape[1])]
        for t, word in enumerate(words):
            torch.testing.assert_close(x[b, t], model.embed.weight[word].detach())


def test_the_image_reader_feeds_raster_order_patches_scaled_to_one_after_the_task_token():
    torch.manual_seed(0)
    info = {"image_shape": [4, 6, 2], "num_classes": 2, "num_tasks": 3}
    model = ImageSequenceModel(model_cfg("relations_game", "lstm", patch_size=2), info).eval()
    seen = Capture(model.core)
    image = torch.randint(0, 256, (2, 4, 6, 2), dtype=torch.uint8)
    task_id = torch.tensor([2, 0])
    with torch.no_grad():
        model(image, task_id)
    x, mask = seen.inputs[0]
    weight, bias = model.project.weight.detach(), model.project.bias.detach()
    assert x.shape == (2, 1 + 2 * 3, model.core.in_dim) and bool(mask.all())
    for b in range(2):
        torch.testing.assert_close(x[b, 0], model.task_token.weight[task_id[b]].detach())
        for r in range(2):
            for col in range(3):
                pixels = [image[b, 2 * r + dy, 2 * col + dx, ch].item() / 255
                          for dy in range(2) for dx in range(2) for ch in range(2)]  # (row, column, channel)
                want = torch.tensor([sum(weight[o, i] * pixels[i] for i in range(8)) + bias[o]
                                     for o in range(weight.shape[0])])
                torch.testing.assert_close(x[b, 1 + r * 3 + col], want, rtol=1e-5, atol=1e-6)


def test_the_grid_agent_reads_cells_in_raster_order_and_its_torso_is_relu_layers():
    torch.manual_seed(0)
    agent = SequenceAgent(model_cfg("babi", "lstm"), {"torso": [5, 4]}, (2, 3, 3), 3).eval()
    seen = Capture(agent.core)
    obs = torch.randint(0, 256, (2, 2, 3, 3)).float()
    with torch.no_grad():
        logits, value = agent(obs)
    x, mask = seen.inputs[0]
    weight, bias = agent.project.weight.detach(), agent.project.bias.detach()
    assert x.shape[1] == 6 and bool(mask.all())
    for b in range(2):
        for r in range(2):
            for col in range(3):
                cell = [obs[b, r, col, ch].item() / 255 for ch in range(3)]
                want = torch.tensor([sum(weight[o, i] * cell[i] for i in range(3)) + bias[o]
                                     for o in range(weight.shape[0])])
                torch.testing.assert_close(x[b, r * 3 + col], want, rtol=1e-5, atol=1e-6)
        with torch.no_grad():
            want_logits, want_value = relu_torso(agent.torso, agent.policy, agent.value, agent.core(x, mask)[b])
        torch.testing.assert_close(logits[b], want_logits, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(value[b], want_value, rtol=1e-5, atol=1e-6)


def test_the_state_agent_gives_each_variable_its_value_times_a_learned_vector_plus_a_bias():
    torch.manual_seed(0)
    agent = SequenceAgent(model_cfg("babi", "lstm"), None, (3,), 2).eval()
    seen = Capture(agent.core)
    obs = torch.randn(2, 3)
    with torch.no_grad():
        agent(obs)
    x, mask = seen.inputs[0]
    assert x.shape[1] == 3 and bool(mask.all())
    for b in range(2):
        for i in range(3):
            torch.testing.assert_close(x[b, i], obs[b, i] * agent.project.weight[:, 0].detach()
                                       + agent.project.bias.detach())


# the state entities -------------------------------------------------------------------------------------------
def test_state_entities_are_value_times_scale_plus_offset_under_a_relu_torso_with_keras_init():
    torch.manual_seed(0)
    agent = StateEntityAgent(model_cfg("cartpole", "mlp1"), {"torso": [6, 5], "entity_dim": 4}, (3,), 2).eval()
    for part in (agent.torso, agent.policy, agent.value):
        for name, param in part.named_parameters():
            if name.endswith("bias"):
                assert not param.any(), name
            else:
                fan_out, fan_in = param.shape
                assert param.abs().max() <= math.sqrt(6 / (fan_in + fan_out)) + 1e-7, name  # Glorot uniform
    for part in (agent.torso, agent.policy, agent.value):  # non-zero biases, so that every term shows
        for name, param in part.named_parameters():
            if name.endswith("bias"):
                param.data.uniform_(-0.5, 0.5)
    seen = Capture(agent.central)
    obs = torch.randn(2, 3)
    with torch.no_grad():
        logits, value = agent(obs)
    entities = seen.inputs[0][0]  # [B, D, dim]
    for b in range(2):
        for i in range(3):
            scale, offset = agent.scale.detach(), agent.offset.detach()
            want = torch.tensor([obs[b, i] * scale[i, k] + offset[i, k] for k in range(4)])
            torch.testing.assert_close(entities[b, i], want)
        with torch.no_grad():
            want_logits, want_value = relu_torso(agent.torso, agent.policy, agent.value, agent.central(entities)[b])
        torch.testing.assert_close(logits[b], want_logits, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(value[b], want_value, rtol=1e-5, atol=1e-6)
