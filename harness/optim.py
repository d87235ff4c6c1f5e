"""Optimisers, including the TF1 semantics the reference implementations trained with, and the
learning-rate policy (warm-up, one-off decay on a validation-loss threshold).

``tf1_nadam`` is ``tf.contrib.opt.NadamOptimizer`` as TF1 computes it, the optimiser of ischlag/TPR-RNN
(tpr_rnn_graph.py): the Adam kernel with ``use_nesterov=True`` (tensorflow/tensorflow,
tensorflow/contrib/opt/python/training/nadam_optimizer.py)::

    m_t  = b1 m + (1 - b1) g
    v_t  = b2 v + (1 - b2) g^2
    lr_t = lr sqrt(1 - b2^t) / (1 - b1^t)
    theta <- theta - lr_t (b1 m_t + (1 - b1) g) / (sqrt(v_t) + eps)

It is not ``torch.optim.NAdam``, which follows Dozat's momentum schedule
``mu_t = b1 (1 - 0.5 * 0.96^(0.004 t))`` and does not reduce to the above for any setting.

``tf1_rmsprop`` is ``tf.train.RMSPropOptimizer`` (uncentered; tensorflow/tensorflow,
tensorflow/python/training/rmsprop.py), which the 2-simplicial Transformer's IMPALA agents trained with
(Clift et al., ICLR 2020, §5 and Table 1: decay 0.99, momentum 0, epsilon 0.1; Appendix E on the large epsilon)::

    ms    = 1 at the start                      (TF1 initialises the mean square to ones, ``_create_slots``)
    ms    = decay ms + (1 - decay) g^2
    mom   = momentum mom + lr g / sqrt(ms + eps)   (epsilon inside the root)
    theta <- theta - mom

``torch.optim.RMSprop`` starts ``ms`` at zero and adds epsilon outside the root; with epsilon = 0.1
the two differ by orders of magnitude in step size early on and for small gradients.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch.optim import Optimizer

from harness.errors import UserError


class _PerParameterOptimizer(Optimizer):
    """The loop every hand-written kernel here shares: each parameter with a gradient, its state
    created on first use; subclasses write ``_init_state`` and ``_update`` (the TF1 kernel)."""

    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for param in group["params"]:
                if param.grad is None:
                    continue
                state = self.state[param]
                if not state:
                    self._init_state(state, param)
                self._update(param, param.grad, state, group)
        return loss

    def _init_state(self, state: dict[str, Any], param: torch.Tensor) -> None:
        raise NotImplementedError

    def _update(self, param: torch.Tensor, grad: torch.Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        raise NotImplementedError


class TF1Nadam(_PerParameterOptimizer):
    """Adam with TF1's Nesterov update (``tf.contrib.opt.NadamOptimizer``), epsilon outside the sqrt."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8) -> None:
        if lr < 0 or eps < 0 or not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
            raise ValueError(f"invalid TF1Nadam hyperparameters lr={lr} betas={betas} eps={eps}")
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps})

    def _init_state(self, state: dict[str, Any], param: torch.Tensor) -> None:
        state["step"] = 0
        state["m"] = torch.zeros_like(param)
        state["v"] = torch.zeros_like(param)

    def _update(self, param: torch.Tensor, grad: torch.Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        beta1, beta2 = group["betas"]
        state["step"] += 1
        t = state["step"]
        m, v = state["m"], state["v"]
        m.mul_(beta1).add_(grad, alpha=1 - beta1)
        v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        lr_t = group["lr"] * (1 - beta2**t) ** 0.5 / (1 - beta1**t)
        nesterov = m.mul(beta1).add_(grad, alpha=1 - beta1)
        param.addcdiv_(nesterov, v.sqrt().add_(group["eps"]), value=-lr_t)


class TF1RMSProp(_PerParameterOptimizer):
    """``tf.train.RMSPropOptimizer`` (uncentered): mean square initialised to 1, epsilon inside the sqrt."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, decay: float = 0.9, momentum: float = 0.0,
                 eps: float = 1e-10) -> None:
        if lr < 0 or eps < 0 or not 0 <= decay < 1 or momentum < 0:
            raise ValueError(f"invalid TF1RMSProp hyperparameters lr={lr} decay={decay} momentum={momentum} eps={eps}")
        super().__init__(params, {"lr": lr, "decay": decay, "momentum": momentum, "eps": eps})

    def _init_state(self, state: dict[str, Any], param: torch.Tensor) -> None:
        state["ms"] = torch.ones_like(param)
        state["mom"] = torch.zeros_like(param)

    def _update(self, param: torch.Tensor, grad: torch.Tensor, state: dict[str, Any], group: dict[str, Any]) -> None:
        ms, mom = state["ms"], state["mom"]
        ms.mul_(group["decay"]).addcmul_(grad, grad, value=1 - group["decay"])
        mom.mul_(group["momentum"]).addcdiv_(grad, ms.add(group["eps"]).sqrt_(), value=group["lr"])
        param.sub_(mom)


OPTIMIZERS = ("adam", "adamw", "tf1_nadam", "tf1_rmsprop", "sgd")


def build_optimizer(params: Iterable[Any], cfg: Any) -> Optimizer:
    """The optimiser named by ``cfg.name`` (``optim`` section of the run config)."""
    betas = tuple(cfg.betas)
    if cfg.name == "tf1_nadam":
        return TF1Nadam(params, lr=cfg.lr, betas=betas, eps=cfg.eps)  # type: ignore[arg-type]
    if cfg.name == "tf1_rmsprop":
        return TF1RMSProp(params, lr=cfg.lr, decay=cfg.decay, momentum=cfg.momentum, eps=cfg.eps)
    if cfg.name == "adam":
        return torch.optim.Adam(params, lr=cfg.lr, betas=betas, eps=cfg.eps, weight_decay=cfg.weight_decay)
    if cfg.name == "adamw":
        return torch.optim.AdamW(params, lr=cfg.lr, betas=betas, eps=cfg.eps, weight_decay=cfg.weight_decay)
    if cfg.name == "sgd":
        return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    raise UserError(f"unknown optimiser 'optim.name={cfg.name}'; known: {', '.join(OPTIMIZERS)}")


class LearningRatePolicy:
    """The reference TPR-RNN schedule, generalised (ischlag/TPR-RNN, tpr_rnn_graph.py: ``warm_up_steps`` 50,
    ``warm_up_factor`` 0.1, ``decay_thresh`` 0.1, ``decay_factor`` 0.5).

    * warm-up: steps ``0..warmup_steps`` inclusive run at ``lr * warmup_factor`` (TF code: full lr
      only once ``i > 50``);
    * decay: the first time ``val/loss`` falls below ``decay_below_val_loss``, lr is multiplied by
      ``decay_factor`` for the rest of training (once), as Schlag & Schmidhuber 2018, Appendix A, describe it.
      The reference code does not keep it: its warm-up branch assigns the full lr at the start of every step
      after step 50, so its decay lasts the one step on which it is assigned.

    Like the TF variable it replaces, changing lr keeps the optimiser's moment estimates. Not reproduced: the
    reference's (and Appendix A's) restart from a fresh initialisation when the loss is NaN during warm-up,
    and its replacement of a NaN global gradient norm by the clipping threshold.
    """

    def __init__(self, cfg: Any) -> None:
        self.base_lr = float(cfg.lr)
        self.warmup_steps = int(cfg.warmup_steps)
        self.warmup_factor = float(cfg.warmup_factor)
        self.decay_below = cfg.decay_below_val_loss
        self.decay_factor = float(cfg.decay_factor)
        self.decayed = False

    def lr_at(self, step: int) -> float:
        lr = self.base_lr
        if self.warmup_steps > 0 and step <= self.warmup_steps:
            lr *= self.warmup_factor
        if self.decayed:
            lr *= self.decay_factor
        return lr

    def observe_val_loss(self, val_loss: float) -> bool:
        """Record a validation loss; True when this call triggered the one-off decay."""
        if self.decay_below is not None and not self.decayed and val_loss < float(self.decay_below):
            self.decayed = True
            return True
        return False

    def state_dict(self) -> dict[str, Any]:
        return {"decayed": self.decayed}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.decayed = bool(state.get("decayed", False))
