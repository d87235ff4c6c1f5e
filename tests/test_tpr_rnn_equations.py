"""TPR-RNN (Schlag & Schmidhuber, NeurIPS 2018, §4, eqs. 4-20; Appendix A) against a literal transcription of the
paper's equations, written with explicit loops over the story and the words from the model's parameters only.

The other TPR-RNN tests compare the three memory implementations with one another; these check the function
they all compute: the input module (eq. 5, P read as the stored ones / W), the MLPs (eqs. 7-8 and 15-16,
2-layer tanh), the update (eqs. 9-14), the three chained reads with their LayerNorms (eqs. 17-19) and the output
projection (eq. 20)."""

from __future__ import annotations

import pytest
import torch
from omegaconf import OmegaConf

from models.tpr_rnn.core import TPRCore
from models.tpr_rnn.model import TPRRNN, MLPBank, ScalarLayerNorm
from tests.test_tpr_rnn import INFO, batch, make


def mlp(bank: MLPBank, index: int, x: torch.Tensor) -> torch.Tensor:
    """One 2-layer MLP of a bank: tanh(W2 tanh(W1 x + b1) + b2) on a single vector x [d_in]."""
    hidden = torch.tanh(x @ bank.w1[index] + bank.b1[index])
    return torch.tanh(hidden @ bank.w2[index] + bank.b2[index])


def layer_norm(norm: ScalarLayerNorm, x: torch.Tensor) -> torch.Tensor:
    """Ba et al.'s LayerNorm over one vector with the reference's eps 1e-7 and a scalar gain and bias."""
    mean = sum(x.tolist()) / len(x)
    var = sum((v - mean) ** 2 for v in x.tolist()) / len(x)  # biased
    return (x - mean) / (var + 1e-7) ** 0.5 * norm.gain + norm.bias


def unbind(state: torch.Tensor, a: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """F . (a, r) = sum_{e, r'} a_e r_r' F[e, r', :] as a double loop."""
    out = torch.zeros(state.shape[2], dtype=state.dtype)
    for e in range(state.shape[0]):
        for rr in range(state.shape[1]):
            out = out + a[e] * r[rr] * state[e, rr]
    return out


def outer3(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    return a[:, None, None] * b[None, :, None] * c[None, None, :]


def reason(model, sentences: torch.Tensor, length: int, q: torch.Tensor, unit: bool = False) -> torch.Tensor:
    """Eqs. 4, 6-19 for one story: sentences [T, S], q [S] -> i1 + i2 + i3 [d_e]. ``unit`` L2-normalises every
    entity and role vector (the sequence core's declared deviation)."""
    def key(bank: MLPBank, index: int, x: torch.Tensor) -> torch.Tensor:
        out = mlp(bank, index, x)
        return out / out.norm() if unit else out

    state = torch.zeros(model.d_e, model.d_r, model.d_e, dtype=sentences.dtype)  # F_0 = 0
    for t in range(length):
        s = sentences[t]
        e1, e2 = key(model.update_entities, 0, s), key(model.update_entities, 1, s)  # eq. 7
        r1, r2, r3 = (key(model.update_roles, j, s) for j in range(3))  # eq. 8
        w_hat, m_hat, b_hat = unbind(state, e1, r1), unbind(state, e1, r2), unbind(state, e2, r3)  # eqs. 9, 11, 13
        write = outer3(e1, r1, e2) - outer3(e1, r1, w_hat)  # eq. 10
        move = outer3(e1, r2, w_hat) - outer3(e1, r2, m_hat)  # eq. 12
        backlink = outer3(e2, r3, e1) - outer3(e2, r3, b_hat)  # eq. 14
        state = state + write + move + backlink  # eqs. 4, 6
    q_e1 = key(model.query_entity, 0, q)  # eq. 15
    q_r1, q_r2, q_r3 = (key(model.query_roles, j, q) for j in range(3))  # eq. 16
    i1 = layer_norm(model.norms[0], unbind(state, q_e1, q_r1))  # eq. 17
    i2 = layer_norm(model.norms[1], unbind(state, i1, q_r2))  # eq. 18
    i3 = layer_norm(model.norms[2], unbind(state, i2, q_r3))  # eq. 19
    return i1 + i2 + i3


def encode(model: TPRRNN, words: torch.Tensor) -> torch.Tensor:
    """Eq. 5, s = sum_w E[x_w] (.) P_w, with Appendix A's P = ones / W (the stored ones divided by W)."""
    out = torch.zeros(model.embedding.shape[1], dtype=model.embedding.dtype)
    for w, word in enumerate(words.tolist()):
        out = out + model.embedding[word] * model.position_raw[w] / len(words)
    return out


def perturb(model: torch.nn.Module, seed: int) -> None:
    """Non-zero biases, LayerNorm gains and biases and stored positions, so that every term shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.startswith(("norms", "position_raw")) or name.endswith(("b1", "b2")):
                p.add_(0.3 * torch.randn(p.shape, generator=g, dtype=p.dtype))


@pytest.mark.parametrize("memory", ["dense", "factored", "parallel"])
def test_the_model_computes_the_papers_equations(memory):
    """Logits (eq. 20) = (i1 + i2 + i3) Z, with everything before computed by the literal transcription."""
    model = make(memory)
    perturb(model, 7)
    x = batch()
    out = model(**x)
    for b in range(out.shape[0]):
        sentences = torch.stack([encode(model, words) for words in x["story"][b]])
        want = reason(model, sentences, int(x["story_len"][b]), encode(model, x["query"][b])) @ model.Z
        torch.testing.assert_close(out[b], want, rtol=1e-9, atol=1e-10)


def test_the_position_vectors_start_at_one_over_w():
    """Appendix A: P is initialised to ones / W; a sentence of one repeated word is that word's embedding."""
    model = make("dense")
    words = torch.full((INFO["max_sent_len"],), 3)
    torch.testing.assert_close(model.encode(words), model.embedding[3])


def test_layer_norm_uses_the_biased_variance_and_a_small_epsilon():
    """Eqs. 17-19's LN on a hand-computed case: x = (0, 0.01, 0.02), mean 0.01, biased variance 2e-4 / 3;
    gain 2 and bias 0.5 give 0.5 + 2 (x - 0.01) / sqrt(2e-4 / 3 + 1e-7)."""
    norm = ScalarLayerNorm().double()
    with torch.no_grad():
        norm.gain.fill_(2.0)
        norm.bias.fill_(0.5)
    x = torch.tensor([0.0, 0.01, 0.02], dtype=torch.float64)
    scale = 2.0 / (2e-4 / 3 + 1e-7) ** 0.5
    want = torch.tensor([0.5 - 0.01 * scale, 0.5, 0.5 + 0.01 * scale], dtype=torch.float64)
    torch.testing.assert_close(norm(x), want, rtol=1e-12, atol=1e-12)


def test_the_sequence_core_uses_unit_keys_in_the_papers_equations():
    """The sequence core (``models.tpr_rnn.core``): eqs. 4-19 with every entity and role vector of unit length,
    the learned question as q, and statements past the mask writing nothing."""
    torch.manual_seed(0)
    cfg = OmegaConf.create({"entity_size": 6, "role_size": 3, "hidden_size": 5, "init_limit": 0.1,
                            "memory": "parallel"})
    core = TPRCore(cfg).double()
    perturb(core, 3)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(3, 5, 6, generator=g, dtype=torch.float64)
    lengths = [5, 2, 4]
    mask = torch.arange(5)[None, :] < torch.tensor(lengths)[:, None]
    out = core(x, mask)
    for b, length in enumerate(lengths):
        want = reason(core, x[b], length, core.question, unit=True)
        torch.testing.assert_close(out[b], want, rtol=1e-9, atol=1e-10)
