"""The linear-logic RNN (Hu & Murfet, "Linear logic and recurrent neural networks", 2016, §2) as a sequence
core (``spec.core``): a ReLU RNN whose update also runs a *program* predicted from the state, a polynomial in
the input and the state with coefficients chosen at every step.

One step reads the input x [B, in_dim] and the previous state h [B, H] (sigma(X) = (X + |X|) / 2, the ReLU):

    p_i = sigma(P_i h)                       [B, n_Y^2], i = 1..m        (2.2)
    y   = E x (+) h                          [B, n_Y],  n_Y = n_E + H    (2.3)
    q_i = sum(p_i * F(y y^T))                [B] -> q [B, m]             (2.3, Example 2.2)
    h'  = sigma(V q + H h + U x)             [B, H]                      (2.4)

F reads a matrix's entries into a vector (row-major: F(y y^T)[a n_Y + b] = y_a y_b). The core returns the
state after the last real step of each sequence; padding steps (``mask`` False, always after the real ones)
leave the state unchanged.

Where the paper is not precise, these are the choices (``models/ll_rnn/README.md`` gives the reasons):

* **Time indices.** (2.4) is printed as h^(t+1) = sigma(V q^(t) + H h^(t) + U x^(t+1)) with q^(t) made from
  x^(t) and h^(t-1) by (2.2)-(2.3), a one-step lag. Example 2.4 (H = U = 0 and V q^(t) = (x^(t))^2 h^(t-1)
  building the product of all inputs) needs the program term to enter the state it is computed beside, so
  here q is made from the same x and h as the other two terms, as in (2.1).
* **q's rows.** The text calls "p_i (.) F(YY^T)" the i-th row of q; Example 2.2 shows each row is the sum of
  that vector's entries (q_1 = 2a^2 - ba + 3b^2), so q has m entries.
* **Degree** (``model.degree`` = d, default 2, the paper's case). "Easily generalised to polynomials of
  higher degree, by adding additional terms": degree d adds one program term per degree k = 2..d, each with
  its own P^(k)_i (n_Y^k outputs) and V^(k), on the monomials F(y^(x)k) of degree k:
  h' = sigma(sum_k V^(k) q^(k) + H h + U x). Degree 1 has no program term: the plain RNN (2.1).
* **No biases** (the equations have none); h_0 = 0, so the first step's program term is 0.
* **Initialisation and scale.** H = ``model.recurrent_init`` times the identity, 0.9 by default: below the
  identity of the IRNN initialisation of ReLU RNNs (Le, Jaitly & Hinton 2015, §2), so that at initialisation
  the state is a reflected AR(1) process of bounded size rather than a random walk whose norm grows as the
  square root of the length (at the ``cpu`` sizes, over bAbI task 2's 32 longest stories: largest |h| 9.9
  instead of 230, loss 4.0 instead of 26.8, and the first Adam step no longer gives a NaN loss). U, E
  PyTorch's ``nn.Linear`` default, U(-1/sqrt(fan_in), 1/sqrt(fan_in)); every V^(k) = 0, so training starts
  from the plain RNN (2.1) and grows the program term. Each P^(k) is stored as a weight W^(k) with that
  default initialisation and used as P^(k) = W^(k) / n_Y^k: the same family of functions, but the program
  term, a sum of n_Y^k monomials and of degree k + 1 in the state (p is linear in h), starts at O(1) instead
  of O(n_Y^k), and Adam's steps on W move P on that scale (unscaled, the degree-2 term of a bAbI story was
  ~10^4 after 70 words and the first Adam step gave a NaN loss).
* **sigma** (``model.state_activation``): ``relu``, the paper's, by default. With it the state is unbounded
  and the program term is a positive feedback of degree >= 3 in it, so a long sequence can diverge once
  training moves H and V: on bAbI task 2 (stories of up to 427 words) every ReLU setting tried gave a NaN
  loss within 60 Adam steps (``README.md``). ``tanh`` bounds the state, a deviation from (2.4) kept as an
  option (the sigma of (2.2) stays the ReLU); the bAbI pair file (``tasks/babi/pairs/ll_rnn.yaml``) uses it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

STATE_ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {"relu": torch.relu, "tanh": torch.tanh}


def monomials(y: torch.Tensor, degree: int) -> torch.Tensor:
    """y [B, n] -> F(y^(x)degree) [B, n^degree]: every product y_a y_b ... of ``degree`` entries, row-major."""
    out = y
    for _ in range(degree - 1):
        out = (out.unsqueeze(-1) * y.unsqueeze(-2)).flatten(1)
    return out


def run_programs(p: torch.Tensor, y: torch.Tensor, degree: int) -> torch.Tensor:
    """q [B, m]: q_i = sum(p_i * F(y^(x)degree)) for programs p [B, m, n^degree] on y [B, n] (Example 2.2)."""
    return torch.einsum("bmn,bn->bm", p, monomials(y, degree))


class LinearLogicCore(nn.Module):
    """(x [B, T, in_dim], mask [B, T] bool, real steps first) -> the state after the last real step [B, out_dim]."""

    def __init__(self, cfg: Any) -> None:
        super().__init__()
        self.in_dim, self.out_dim = int(cfg.embedding_size), int(cfg.hidden_size)
        self.programs, self.degree = int(cfg.programs), int(cfg.degree)
        if self.degree < 1:
            raise ValueError(f"model.degree must be 1 (the plain RNN) or more; got {self.degree}")
        self.n_y = int(cfg.program_input_size) + self.out_dim  # n_Y
        activation = str(cfg.state_activation)
        if activation not in STATE_ACTIVATIONS:
            raise ValueError(f"model.state_activation must be one of {sorted(STATE_ACTIVATIONS)}; got {activation!r}")
        self.sigma = STATE_ACTIVATIONS[activation]  # sigma of (2.4): the ReLU, or tanh (a bounded-state deviation)
        self.U = nn.Linear(self.in_dim, self.out_dim, bias=False)  # (2.4)
        self.H = nn.Linear(self.out_dim, self.out_dim, bias=False)  # (2.4)
        self.E = nn.Linear(self.in_dim, int(cfg.program_input_size), bias=False)  # (2.3)
        degrees = range(2, self.degree + 1)
        # W^(k): all m matrices P_i [n_Y^k, H] of (2.2) stacked, times n_Y^k; V^(k) [H, m] of (2.4)
        self.P = nn.ModuleList(nn.Linear(self.out_dim, self.programs * self.n_y ** k, bias=False) for k in degrees)
        self.V = nn.ModuleList(nn.Linear(self.programs, self.out_dim, bias=False) for _ in degrees)
        with torch.no_grad():
            self.H.weight.copy_(float(cfg.recurrent_init) * torch.eye(self.out_dim))
            for v in self.V:
                v.weight.zero_()

    def program_matrices(self, k: int) -> torch.Tensor:
        """P^(k) [m, n_Y^k, H]: the m matrices P_i of (2.2) for the program term of degree k."""
        return self.P[k - 2].weight.view(self.programs, -1, self.out_dim) * self.n_y ** -k

    def program_terms(self, x: torch.Tensor, h: torch.Tensor) -> list[torch.Tensor]:
        """q^(k) [B, m] for k = 2..degree, from one step's x [B, in_dim] and previous state h [B, H]."""
        y = torch.cat([self.E(x), h], dim=-1)  # (2.3) [B, n_Y]
        terms = []
        for k, program in enumerate(self.P, start=2):
            # (2.2): W^(k) (h / n_Y^k) = P^(k) h, scaling the [B, H] input, not the [B, m n_Y^k] output
            p = torch.relu(program(h * self.n_y ** -k)).view(h.shape[0], self.programs, -1)  # [B, m, n_Y^k]
            terms.append(run_programs(p, y, k))  # (2.3) [B, m]
        return terms

    def step(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """(2.4): x [B, in_dim], h [B, H] -> the next state [B, H]."""
        total = self.H(h) + self.U(x)
        for v, q in zip(self.V, self.program_terms(x, h), strict=True):
            total = total + v(q)
        return self.sigma(total)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = x.new_zeros(x.shape[0], self.out_dim)  # h_0 [B, H]
        for t in range(x.shape[1]):
            h = torch.where(mask[:, t].unsqueeze(-1), self.step(x[:, t], h), h)
        return h
