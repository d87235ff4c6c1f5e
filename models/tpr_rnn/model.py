"""TPR-RNN (Schlag & Schmidhuber, NeurIPS 2018): a recurrent tensor-product-representation memory for
bAbI, as its reference implementation computes it (ischlag/TPR-RNN, tpr_rnn_graph.py and lib.py; the
equations are the paper's §4, the initialisation its Appendix A).

Input module (paper §4, eq. 5; Appendix A)
    E [V, S] word embedding with S = V (embedding width = vocabulary size), U(-0.1, 0.1);
    P [W, S] position weights, stored as ones and read as P / W (the TF variable's scaling): the initial P is
    Appendix A's ones / W, and a Nadam step on the stored ones moves P by about lr / W, not lr;
    s_t = sum_w E[x_tw] * P_w      (padding id 0 is an ordinary row of E, as in the reference)

Update module (paper §4, eqs. 4-14), per statement t, five 2-layer tanh MLPs on s_t:
    e1, e2 in R^{d_e};  r1, r2, r3 in R^{d_r}
    F . (a, r) := sum_{e, r'} a_e r_r' F[e, r', :]          (unbinding)
    w^ = F_{t-1} . (e1, r1)   m^ = F_{t-1} . (e1, r2)   b^ = F_{t-1} . (e2, r3)      (eqs. 9, 11, 13)
    F_t = F_{t-1} + e1 (x) r1 (x) (e2 - w^) + e1 (x) r2 (x) (w^ - m^) + e2 (x) r3 (x) (e1 - b^)   (10, 12, 14)
    statements past the story's length do not update F (the reference's dynamic_rnn sequence_length).

Inference module (paper §4, eqs. 15-20), question MLPs q_e1 in R^{d_e}, q_r1..q_r3 in R^{d_r}:
    i1 = LN(F . (q_e1, q_r1));  i2 = LN(F . (i1, q_r2));  i3 = LN(F . (i2, q_r3))
    logits = (i1 + i2 + i3) Z,   Z [d_e, V] Glorot-uniform and trained (the PyTorch port froze it)
    LN: mean and biased variance over features, eps 1e-7, one scalar gain and one scalar bias per LN.

Three exact implementations of F (``model.memory``), the same function to float rounding (tests check it):
* ``dense`` keeps F as a [B, d_e, d_r, d_e] tensor, as the reference does, and steps through the story;
* ``factored`` keeps F as the sum of its rank-one updates, three (e, r, f) triples per statement, unbinds
  with F . (a, r) = sum_k (a . e_k)(r . r_k) f_k and steps through the story: O(T (2 d_e + d_r)) per read
  instead of O(d_e^2 d_r), but a few dozen small operations per statement;
* ``parallel`` (default) computes every statement's written values at once. The keys e_k, r_k of every write
  come from the statements alone (eqs. 7-8); only the values f_k depend on earlier writes, and linearly:
  with write k = 3s + j of statement s and G_a,r[s, k] = (a_s . e_k)(r_s . r_k) for k < 3s (0 otherwise),
      f_3s   = keep_s (e2_s - G_e1,r1[s] f)                     (eq. 10)
      f_3s+1 = keep_s (G_e1,r1[s] f - G_e1,r2[s] f)             (eq. 12)
      f_3s+2 = keep_s (e1_s - G_e2,r3[s] f)                     (eq. 14)
  i.e. (I + L) f = c with L strictly lower triangular: triangular solves replace the loop over statements
  (forward substitution is that loop), a few dozen operations per block of 64 statements instead of per
  statement, with no work spent on padding (bAbI task 3: up to 130 statements, 49 on average).

Deviations, all without effect on the function computed: one_hot(x) E is written as an embedding
lookup (same values and gradients); q_e2, computed but unused by the reference, is not built.

Sizes and training (``tpr_rnn.yaml``) are the reference code's all-tasks configuration (tpr_rnn_graph.py: d_e
90, d_r 20, d_h 40, batch 32, Nadam at its default hyper-parameters, as Appendix A trains the all-tasks model),
also for single-task runs. The paper's single-task model (Table 2) is smaller (Appendix A; §7: its e1 space has
15 dimensions on task 3), trained with batch 128 and Nadam hyper-parameters tuned by an evolution procedure, so
single-task runs here are not its configuration. Appendix A's restart from a fresh initialisation when a NaN
appears in the 50 warm-up steps is not done: such a run ends as diverged. The one-off learning-rate decay lasts
for the rest of training, as Appendix A says (``harness.optim.LearningRatePolicy``; the reference code's warm-up
branch resets the full rate on every later step, so there it lasts one step).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn


def glorot_uniform_(weight: torch.Tensor, fan_in: int, fan_out: int) -> torch.Tensor:
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    with torch.no_grad():
        return weight.uniform_(-limit, limit)


class MLPBank(nn.Module):
    """``n`` independent 2-layer MLPs ``tanh(W2 tanh(W1 x + b1) + b2)`` with the same output size,
    evaluated together. Weights Glorot-uniform (per MLP), biases zero (``MLP`` in ischlag/TPR-RNN, lib.py)."""

    def __init__(self, n: int, d_in: int, d_hidden: int, d_out: int) -> None:
        super().__init__()
        self.w1 = nn.Parameter(torch.empty(n, d_in, d_hidden))
        self.b1 = nn.Parameter(torch.zeros(n, d_hidden))
        self.w2 = nn.Parameter(torch.empty(n, d_hidden, d_out))
        self.b2 = nn.Parameter(torch.zeros(n, d_out))
        for i in range(n):
            glorot_uniform_(self.w1[i], d_in, d_hidden)
            glorot_uniform_(self.w2[i], d_hidden, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [..., d_in] -> [n, ..., d_out]"""
        hidden = torch.tanh(torch.einsum("...i,nih->n...h", x, self.w1) + _expand(self.b1, x.dim()))
        return torch.tanh(torch.einsum("n...h,nho->n...o", hidden, self.w2) + _expand(self.b2, x.dim()))


def _expand(bias: torch.Tensor, x_dim: int) -> torch.Tensor:
    """bias [n, d] -> [n, 1, ..., 1, d] to broadcast over the batch dimensions of x."""
    return bias.view(bias.shape[0], *([1] * (x_dim - 1)), bias.shape[1])


class ScalarLayerNorm(nn.Module):
    """LayerNorm with one scalar gain and one scalar bias, eps 1e-7 (the reference's ``lib.norm``)."""

    def __init__(self, eps: float = 1e-7) -> None:
        super().__init__()
        self.gain = nn.Parameter(torch.ones(()))
        self.bias = nn.Parameter(torch.zeros(()))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True, unbiased=False)
        return (x - mean) / torch.sqrt(var + self.eps) * self.gain + self.bias


class DenseTPR:
    """F as a dense [B, d_e, d_r, d_e] tensor (the reference's representation)."""

    def __init__(self, batch: int, d_e: int, d_r: int, like: torch.Tensor) -> None:
        self.F = like.new_zeros(batch, d_e, d_r, d_e)  # [B, e, r, f]

    def read(self, a: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        """F . (a, r): a [B, d_e], r [B, d_r] -> [B, d_e]"""
        return torch.einsum("be,br,berf->bf", a, r, self.F)

    def write(self, e: torch.Tensor, r: torch.Tensor, f: torch.Tensor) -> None:
        """F += sum_i e_i (x) r_i (x) f_i; e, f [B, n, d_e], r [B, n, d_r]"""
        self.F = self.F + torch.einsum("bne,bnr,bnf->berf", e, r, f)


class FactoredTPR:
    """F as the list of its rank-one updates e_k (x) r_k (x) f_k (exactly equal to the dense sum)."""

    def __init__(self, batch: int, d_e: int, d_r: int, like: torch.Tensor) -> None:
        self.e = like.new_zeros(batch, 0, d_e)  # [B, K, d_e]
        self.r = like.new_zeros(batch, 0, d_r)  # [B, K, d_r]
        self.f = like.new_zeros(batch, 0, d_e)  # [B, K, d_e]

    def read(self, a: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        """F . (a, r) = sum_k (a . e_k)(r . r_k) f_k: a [B, d_e], r [B, d_r] -> [B, d_e]"""
        weight = torch.einsum("bke,be->bk", self.e, a) * torch.einsum("bkr,br->bk", self.r, r)  # [B, K]
        return torch.einsum("bk,bkf->bf", weight, self.f)

    def write(self, e: torch.Tensor, r: torch.Tensor, f: torch.Tensor) -> None:
        """Append the triples; e, f [B, n, d_e], r [B, n, d_r]"""
        self.e = torch.cat([self.e, e], dim=1)
        self.r = torch.cat([self.r, r], dim=1)
        self.f = torch.cat([self.f, f], dim=1)


SOLVE_BLOCK = 64  # statements per triangular solve of the ``parallel`` memory


def story_reach(keep: torch.Tensor) -> torch.Tensor:
    """keep [B, T] -> [B]: how many statements each story spans (its last real statement's position)."""
    positions = torch.arange(1, keep.shape[1] + 1, device=keep.device, dtype=keep.dtype)
    return (keep * positions).amax(dim=1) if keep.shape[1] else keep.new_zeros(keep.shape[0])


def solve_writes(e1: torch.Tensor, e2: torch.Tensor, r1: torch.Tensor, r2: torch.Tensor, r3: torch.Tensor,
                 keep: torch.Tensor, block: int | None = None) -> FactoredTPR:
    """Every statement's three writes without stepping through the story (the ``parallel`` memory):
    e1, e2 [B, T, d_e], r1..r3 [B, T, d_r], keep [B, T] (1 = a real statement) -> the factored F after all T
    statements (eqs. 9-14 as one lower triangular system; see the module docstring).

    The system is solved ``block`` statements at a time: a block's reads of earlier blocks' writes are one
    matrix product, its reads of its own earlier writes one triangular solve. A block is solved only for the
    stories that reach it, which are the first ones when the batch is ordered longest first (as
    :meth:`TPRReasoning.reason` orders it); any order is correct, that one just skips the padding."""
    block = block or SOLVE_BLOCK
    batch, steps, d_e = e1.shape
    reach = story_reach(keep).tolist()  # one host read per batch
    keep = keep[:, :, None]  # [B, T, 1]
    local = torch.arange(3 * block, device=e1.device) < 3 * torch.arange(block, device=e1.device)[:, None]
    local = local.to(e1.dtype).repeat_interleave(3, dim=0)  # [3C, 3C]: write k before the statement of row i

    keys_e: list[torch.Tensor] = []  # per block [B, 3c, d_e]: write 3s + j of the block's statements
    keys_r: list[torch.Tensor] = []  # per block [B, 3c, d_r]
    values: list[torch.Tensor] = []  # per block [B, 3c, d_e], zero for stories that end before it
    pieces = zip(*(x.split(block, dim=1) for x in (e1, e2, r1, r2, r3, keep)), strict=True)
    for index, (b_e1, b_e2, b_r1, b_r2, b_r3, b_keep) in enumerate(pieces):
        start, size = index * block, b_e1.shape[1]
        active = [i for i, length in enumerate(reach) if length > start]
        if not active:  # no story reaches this block, nor any later one
            break
        keys_e.append(torch.stack([b_e1, b_e1, b_e2], dim=2).flatten(1, 2))
        keys_r.append(torch.stack([b_r1, b_r2, b_r3], dim=2).flatten(1, 2))
        rows = slice(0, len(active)) if active[-1] == len(active) - 1 else torch.tensor(active, device=e1.device)
        upto_e = torch.cat(keys_e, dim=1)[rows]  # [n, 3 stop, d_e]
        upto_r = torch.cat(keys_r, dim=1)[rows]  # [n, 3 stop, d_r]
        dots_e1 = b_e1[rows] @ upto_e.mT  # [n, c, 3 stop]: e1_s . e_k
        dots_e2 = b_e2[rows] @ upto_e.mT
        g_w = dots_e1 * (b_r1[rows] @ upto_r.mT)  # eq. 9's read weights
        g_m = dots_e1 * (b_r2[rows] @ upto_r.mT)  # eq. 11's
        g_b = dots_e2 * (b_r3[rows] @ upto_r.mT)  # eq. 13's
        keep3 = b_keep[rows].repeat_interleave(3, dim=1)  # [n, 3c, 1]
        lower = torch.stack([g_w, g_m - g_w, g_b], dim=2).flatten(1, 2) * keep3  # [n, 3c, 3 stop]
        rhs = torch.stack([b_e2, torch.zeros_like(b_e2), b_e1], dim=2).flatten(1, 2)[rows] * keep3  # [n, 3c, d_e]
        if values:
            rhs = rhs - lower[:, :, : 3 * start] @ torch.cat(values, dim=1)[rows]
        own = lower[:, :, 3 * start:] * local[: 3 * size, : 3 * size]  # strictly earlier writes of the block
        # (I + own) f = rhs; unitriangular: the solver takes the diagonal as ones and never reads it
        solved = torch.linalg.solve_triangular(own, rhs, upper=False, unitriangular=True)  # [n, 3c, d_e]
        if isinstance(rows, slice):
            values.append(nn.functional.pad(solved, (0, 0, 0, 0, 0, batch - len(active))))
        else:
            values.append(solved.new_zeros(batch, 3 * size, d_e).index_copy(0, rows, solved))
    memory = FactoredTPR(batch, d_e, r1.shape[-1], e1)
    if values:
        memory.write(torch.cat(keys_e, dim=1), torch.cat(keys_r, dim=1), torch.cat(values, dim=1))
    return memory


MEMORIES = {"dense": DenseTPR, "factored": FactoredTPR, "parallel": FactoredTPR}


class TPRReasoning(nn.Module):
    """The update and inference modules (paper §4, eqs. 4-19) over sentence vectors of width ``symbol``: the part
    of TPR-RNN that does not depend on words, shared by :class:`TPRRNN` and the sequence core
    (``models.tpr_rnn.core``). A subclass builds its own input first, then calls :meth:`build_reasoning`
    (parameters are created, and so randomly initialised, in a fixed order: input, update and query MLP banks,
    LayerNorms, then Z in :class:`TPRRNN`; the reference creates Z before the MLPs and draws with TensorFlow's
    generator, so no seed reproduces its initial weights)."""

    def build_reasoning(self, symbol: int, cfg: Any) -> None:
        d_e, d_r, d_h = int(cfg.entity_size), int(cfg.role_size), int(cfg.hidden_size)
        if cfg.memory not in MEMORIES:
            raise ValueError(f"model.memory must be one of {sorted(MEMORIES)}, got {cfg.memory!r}")
        self.memory_cls, self.parallel = MEMORIES[cfg.memory], cfg.memory == "parallel"
        self.d_e, self.d_r = d_e, d_r
        self.update_entities = MLPBank(2, symbol, d_h, d_e)  # e1, e2
        self.update_roles = MLPBank(3, symbol, d_h, d_r)  # r1, r2, r3
        self.query_entity = MLPBank(1, symbol, d_h, d_e)  # q_e1
        self.query_roles = MLPBank(3, symbol, d_h, d_r)  # q_r1, q_r2, q_r3
        self.norms = nn.ModuleList([ScalarLayerNorm() for _ in range(3)])

    def reason(self, sentences: torch.Tensor, mask: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """sentences [B, T, S], mask [B, T] (1 = a real statement), question q [B, S] -> i1 + i2 + i3 [B, d_e].
        The ``parallel`` memory reasons over the batch ordered longest story first (see :func:`solve_writes`)
        and returns the answers in the batch's own order."""
        mask = mask.to(sentences.dtype)
        if not self.parallel:
            return self._reason(sentences, mask, q)
        order = torch.argsort(story_reach(mask), descending=True, stable=True)  # [B]
        out = self._reason(sentences[order], mask[order], q[order])
        return out.new_empty(out.shape).index_copy(0, order, out)

    def _reason(self, sentences: torch.Tensor, mask: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        e1, e2 = self.update_entities(sentences)  # each [B, T, d_e]
        r1, r2, r3 = self.update_roles(sentences)  # each [B, T, d_r]
        if self.parallel:
            memory = solve_writes(e1, e2, r1, r2, r3, mask)
        else:
            memory = self._step_through(e1, e2, r1, r2, r3, mask)
        return self.infer(memory, q)

    def infer(self, memory: DenseTPR | FactoredTPR, q: torch.Tensor) -> torch.Tensor:
        """The inference module (eqs. 15-19): question q [B, S] -> i1 + i2 + i3 [B, d_e]."""
        (q_e1,) = self.query_entity(q)  # [B, d_e]
        q_r1, q_r2, q_r3 = self.query_roles(q)  # each [B, d_r]
        i1 = self.norms[0](memory.read(q_e1, q_r1))  # eq. 17
        i2 = self.norms[1](memory.read(i1, q_r2))  # eq. 18
        i3 = self.norms[2](memory.read(i2, q_r3))  # eq. 19
        return i1 + i2 + i3

    def _step_through(self, e1: torch.Tensor, e2: torch.Tensor, r1: torch.Tensor, r2: torch.Tensor,
                      r3: torch.Tensor, mask: torch.Tensor) -> DenseTPR | FactoredTPR:
        """The reference's loop over statements (``dense`` and ``factored``): F after all of them."""
        batch, steps, _ = e1.shape
        memory = self.memory_cls(batch, self.d_e, self.d_r, e1)
        for t in range(steps):
            a1, a2, b1, b2, b3 = e1[:, t], e2[:, t], r1[:, t], r2[:, t], r3[:, t]
            w_hat = memory.read(a1, b1)  # eq. 9
            m_hat = memory.read(a1, b2)  # eq. 11
            b_hat = memory.read(a2, b3)  # eq. 13
            keep = mask[:, t, None]  # [B, 1]: padded statements write nothing
            memory.write(
                torch.stack([a1, a1, a2], dim=1),  # [B, 3, d_e]
                torch.stack([b1, b2, b3], dim=1),  # [B, 3, d_r]
                torch.stack([a2 - w_hat, w_hat - m_hat, a1 - b_hat], dim=1) * keep[:, :, None],  # eqs. 10, 12, 14
            )
        return memory


class TPRRNN(TPRReasoning):
    """TPR-RNN for the ``story`` interface: (story [B, T, W], story_len [B], query [B, W]) -> logits [B, V]."""

    def __init__(self, cfg: Any, info: dict[str, Any]) -> None:
        super().__init__()
        vocab, words = int(info["vocab_size"]), int(info["max_sent_len"])
        symbol = vocab  # S = V (paper Appendix A; ``c.symbol_size = c.vocab_size`` in tpr_rnn_graph.py)
        self.embedding = nn.Parameter(torch.empty(vocab, symbol).uniform_(-cfg.init_limit, cfg.init_limit))
        self.position_raw = nn.Parameter(torch.ones(words, symbol))  # read as P / W
        self.words = words
        self.build_reasoning(symbol, cfg)
        self.Z = nn.Parameter(glorot_uniform_(torch.empty(self.d_e, vocab), self.d_e, vocab))

    def encode(self, tokens: torch.Tensor) -> torch.Tensor:
        """s = sum_w E[x_w] * P_w / W:  tokens [..., W] -> [..., S]"""
        embedded = self.embedding[tokens]  # [..., W, S]
        return (embedded * (self.position_raw / self.words)).sum(dim=-2)

    def forward(self, story: torch.Tensor, story_len: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
        mask = torch.arange(story.shape[1], device=story.device) < story_len[:, None]  # [B, T]
        return self.reason(self.encode(story), mask, self.encode(query)) @ self.Z  # eq. 20, [B, V]
