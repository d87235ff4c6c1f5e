"""The LSTM core and the bAbI LSTM reader (Weston et al. 2015, §5: the LSTM reads the story, then the question, and
its last state predicts the answer) against a literal LSTM (Hochreiter & Schmidhuber 1997, with the forget gate of
Gers, Schmidhuber & Cummins 2000), stacked, run one example at a time over its real steps only:

    i, f, g, o = sigma(.), sigma(.), tanh(.), sigma(.) of W_i x_t + b_i + W_h h_{t-1} + b_h
    c_t = f c_{t-1} + i g,   h_t = o tanh(c_t);   layer l + 1 reads layer l's h_t; the output is the top h_T."""

from __future__ import annotations

import torch
from omegaconf import OmegaConf
from torch import nn

from models.lstm.core import LSTMCore
from models.lstm.model import LSTMStoryReader

CFG = {"embedding_size": 5, "hidden_size": 4, "layers": 2, "dropout": 0.0}


def literal_lstm(lstm: nn.LSTM, xs: torch.Tensor) -> torch.Tensor:
    """xs [T, in] (real steps only) -> the top layer's last hidden state [H]."""
    inputs = list(xs)
    for layer in range(lstm.num_layers):
        w_i, w_h = getattr(lstm, f"weight_ih_l{layer}"), getattr(lstm, f"weight_hh_l{layer}")
        b_i, b_h = getattr(lstm, f"bias_ih_l{layer}"), getattr(lstm, f"bias_hh_l{layer}")
        h = c = torch.zeros(lstm.hidden_size, dtype=xs.dtype)
        outputs = []
        for x in inputs:
            i, f, g, o = (w_i @ x + b_i + w_h @ h + b_h).chunk(4)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outputs.append(h)
        inputs = outputs
    return inputs[-1]


def test_the_core_returns_the_top_layers_hidden_state_after_the_last_real_step():
    torch.manual_seed(0)
    core = LSTMCore(OmegaConf.create(CFG)).double()
    x = torch.randn(3, 6, 5, dtype=torch.float64)
    lengths = [6, 2, 4]
    mask = torch.arange(6)[None, :] < torch.tensor(lengths)[:, None]
    out = core(x, mask)
    for b, length in enumerate(lengths):
        torch.testing.assert_close(out[b], literal_lstm(core.lstm, x[b, :length]), rtol=1e-10, atol=1e-12)


def test_the_reader_reads_the_real_words_then_the_question():
    torch.manual_seed(0)
    model = LSTMStoryReader(OmegaConf.create(CFG), {"vocab_size": 9, "num_classes": 9}).double()
    story = torch.tensor([[[3, 4, 0], [5, 0, 0], [0, 0, 0]],
                          [[6, 7, 8], [2, 3, 0], [4, 4, 1]]])  # [B, T, W]: story 0 has 2 statements, 3 words
    query = torch.tensor([[1, 2, 0], [8, 0, 0]])
    logits = model(story, torch.tensor([2, 3]), query)
    for b in range(2):
        words = [w for w in story[b].flatten().tolist() + query[b].tolist() if w]
        h = literal_lstm(model.lstm, model.embed.weight[words])
        torch.testing.assert_close(logits[b], model.out.weight @ h + model.out.bias, rtol=1e-10, atol=1e-12)
