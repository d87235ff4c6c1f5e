"""End-To-End Memory Network (MemN2N) for bAbI: Sukhbaatar, Szlam, Weston & Fergus, NeurIPS 2015
(arXiv:1503.08895), with the paper's bAbI choices (§4.1, §4.2): K = 3 hops, position encoding (PE), temporal
encoding, random noise (RN), adjacent weight tying, linear start (LS).

One hop k = 1..K (§2.1, eqs. 1-3; §2.2), over the memory slots i (the most recent statements, newest first):

    m_i = sum_j l_j * A^k x_ij + T_A^k(i)        [B, M, d]   (§4.1: PE and temporal encoding)
    c_i = sum_j l_j * C^k x_ij + T_C^k(i)        [B, M, d]
    p   = Softmax(u^k . m_i)                     [B, M]      (eq. 1; without the softmax during linear start)
    o^k = sum_i p_i c_i                          [B, d]      (eq. 2)
    u^{k+1} = u^k + o^k,   u^1 = sum_j l_j * B q_j
    logits = W u^{K+1}                           [B, V]      (eq. 3, the softmax is the loss's)

Adjacent weight tying (§2.2): A^{k+1} = C^k, W^T = C^K, B = A^1, and the temporal tables likewise
(T_A^{k+1} = T_C^k; §4.1 ties them as A and C are tied). So the model holds K + 1 word
tables E^0..E^K and K + 1 temporal tables: A^k = E^{k-1}, C^k = E^k. Every table is drawn from N(0, 0.1^2)
(§4.2); row 0, the null symbol that pads words, is zero and stays zero (§4.2 constrains the null symbol's
embedding to zero), also in W.

Choices where the paper is silent or the harness differs (each also in the README):

* Padded memory slots (stories shorter than the memory) are left out of the softmax and of the linear
  attention, so padding changes nothing. The authors' code (facebookarchive/MemNN, MemN2N-babi-matlab) fills
  them with null words, which still take softmax mass at score 0.
* J in PE is the sentence's own number of words, as §4.1 defines it; the authors' code uses the padded width
  (and a variant of the formula). The temporal vector is added unweighted, as written in §4.1 (the authors' code
  stores it as an extra "time word" that PE weights like the last word).
* The memory holds the last ``memory_size`` (50) of the statements the bAbI task hands over (it keeps up to 70,
  130 for task 3).
* Tokens are the task's: "." and "?" are words, as they are for the other bAbI models here.
* The answer layer covers the whole vocabulary (W^T = C^K makes it V x d); the paper's list answers are single
  words of the vocabulary here too.
* The schedule (summed cost, clipping at 40, lr halving, linear start) is applied by ``PaperSchedule``
  (``models/memn2n/schedule.py``), where linear start lasts a fixed number of epochs: see its docstring.
* One run per seed: the paper repeated each training 10 times and kept the lowest training error.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from models.memn2n.encoding import encode
from models.memn2n.memory import recent_memories, time_index
from models.memn2n.schedule import PaperSchedule


class MemN2N(nn.Module):
    """(story [B, T, W], story_len [B], query [B, W]) -> logits [B, V]."""

    def __init__(self, cfg: Any, info: dict[str, Any]) -> None:
        super().__init__()
        vocab, classes = int(info["vocab_size"]), int(info["num_classes"])
        if classes != vocab:
            raise ValueError(f"MemN2N answers with its output embedding (W^T = C^K), so the task's classes must be "
                             f"its vocabulary; got num_classes={classes}, vocab_size={vocab}")
        self.hops, self.dim = int(cfg.hops), int(cfg.embedding_size)
        self.memory_size = int(cfg.memory_size)
        self.random_noise = float(cfg.random_noise)
        std = float(cfg.init_std)
        self.words = nn.ParameterList(
            [nn.Parameter(torch.randn(vocab, self.dim) * std) for _ in range(self.hops + 1)])  # E^0..E^K [V, d]
        self.times = nn.ParameterList(
            [nn.Parameter(torch.randn(self.memory_size, self.dim) * std) for _ in range(self.hops + 1)]
            if cfg.temporal_encoding else [])  # [M, d] each
        keep = torch.ones(vocab, 1)
        keep[0] = 0.0
        self.register_buffer("not_null", keep, persistent=False)  # [V, 1]
        with torch.no_grad():
            for table in self.words:
                table.mul_(keep)
        self.schedule = PaperSchedule(self.parameters(), linear_start_epochs=int(cfg.linear_start_epochs),
                                      halve_lr_every=int(cfg.halve_lr_every), batch_cost=str(cfg.batch_cost),
                                      grad_clip=float(cfg.grad_clip))

    # the tied tables (§2.2, adjacent) --------------------------------------------------------------------------
    @property
    def A(self) -> list[nn.Parameter]:  # noqa: N802 (the paper's names)
        return list(self.words[: self.hops])

    @property
    def C(self) -> list[nn.Parameter]:  # noqa: N802
        return list(self.words[1:])

    @property
    def B(self) -> nn.Parameter:  # noqa: N802
        return self.words[0]

    @property
    def T_A(self) -> list[nn.Parameter]:  # noqa: N802
        return list(self.times[: self.hops])

    @property
    def T_C(self) -> list[nn.Parameter]:  # noqa: N802
        return list(self.times[1:])

    @property
    def W(self) -> nn.Parameter:  # noqa: N802 (stored as W^T = C^K [V, d])
        return self.words[self.hops]

    # forward ---------------------------------------------------------------------------------------------------
    def forward(self, story: torch.Tensor, story_len: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        self.schedule.observe_forward(self.training, batch=query.shape[0])
        tables = torch.stack(list(self.words)) * self.not_null  # [K+1, V, d]; the null row zero, no gradient to it
        tokens, real = recent_memories(story, story_len, self.memory_size)  # [B, M, W], [B, M]
        memories = encode(tokens, tables)  # [B, M, K+1, d]: sum_j l_j E^k x_ij for every table
        if len(self.times):
            slots = time_index(real, self.random_noise, self.memory_size, self.training)  # [B, M]
            memories = memories + torch.stack(list(self.times), dim=1)[slots]  # + T^k(i): [rows, K+1, d] picked by slot
        u = encode(query, tables[:1])[:, 0]  # [B, d], B = A^1
        for k in range(self.hops):
            scores = torch.einsum("bmd,bd->bm", memories[:, :, k], u)  # u . m_i with A^{k+1} = E^k
            p = attend(scores, real, linear=self.schedule.linear)  # [B, M]
            u = u + torch.einsum("bm,bmd->bd", p, memories[:, :, k + 1])  # + o^k, c_i with C^{k+1} = E^{k+1}
        return u @ tables[self.hops].T  # [B, V], W = (C^K)^T

    # the schedule's epoch count travels with the weights --------------------------------------------------------
    def get_extra_state(self) -> dict[str, Any]:
        return self.schedule.state_dict()

    def set_extra_state(self, state: dict[str, Any]) -> None:
        self.schedule.load_state_dict(state)


def attend(scores: torch.Tensor, real: torch.Tensor, linear: bool) -> torch.Tensor:
    """Attention over the real slots: softmax (eq. 1), or the raw scores during linear start. [B, M] -> [B, M]"""
    if linear:
        return scores * real
    masked = scores.masked_fill(~real, torch.finfo(scores.dtype).min)
    return torch.softmax(masked, dim=-1) * real  # a story with no statement attends to nothing
