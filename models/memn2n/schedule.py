"""MemN2N's training schedule (Sukhbaatar et al. 2015, §4.2), driven from inside the model.

The paper trains with plain SGD (no momentum, no weight decay):

* the cost is summed over a batch of 32, not averaged;
* a gradient whose L2 norm exceeds 40 is rescaled to norm 40;
* the learning rate (0.01) is halved every 25 epochs, for 100 epochs;
* linear start (LS): the softmax of every memory layer is left out at first, and put back (training then
  continuing) once the validation loss stops falling; with LS the learning rate starts at 0.005.

The harness's supervised runner averages the cost over the batch, clips with a fixed threshold and keeps the
learning rate constant (its ``LearningRatePolicy`` knows warm-up and one validation-loss-triggered decay). So the
model applies the rest itself, to its own gradients, once the last of its parameters has received its gradient
in a backward pass (``register_post_accumulate_grad_hook``), before the optimiser steps:

    g <- f(epoch) * clip(B g, max_norm)        B: the batch's size (``batch_cost: sum``), clip: the global L2 norm

With SGD at ``optim.lr`` = eta this is exactly the paper's update eta f(epoch) clip(sum-of-costs gradient, 40);
with any other optimiser the factor f is not a learning rate (Adam, for one, is invariant to it). The harness's own
clipping (``optim.grad_clip``) must stay off, or it would clip the averaged gradient first.

Epochs are counted by the model itself: an epoch ends with the runner's validation pass, so each switch from
evaluation back to training forward passes is one completed epoch. The count is part of the model's state
(``get_extra_state``), so it survives checkpoints and a resumed run continues the schedule where it stopped.

Deviation (the harness gives a model no validation loss: its batches carry no targets): linear start ends after a
fixed number of epochs, as in the authors' code (facebookarchive/MemNN, MemN2N-babi-matlab/config_babi.m:
``ls_nepochs = 20`` at lr 0.005 with no decay, then the full schedule from the start), not when the validation loss
stops falling. After it the learning-rate halving restarts from epoch 0 of the softmax phase, as there.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

BATCH_COSTS = ("sum", "mean")


class PaperSchedule:
    """Linear start, the step decay and the summed, clipped gradient of §4.2, for the given parameters."""

    def __init__(self, parameters: Iterable[nn.Parameter], *, linear_start_epochs: int, halve_lr_every: int,
                 batch_cost: str, grad_clip: float) -> None:
        if batch_cost not in BATCH_COSTS:
            raise ValueError(f"model.batch_cost must be one of {', '.join(BATCH_COSTS)}, got {batch_cost!r}")
        self.parameters = list(parameters)
        self.linear_start_epochs = int(linear_start_epochs)
        self.halve_lr_every = int(halve_lr_every)
        self.batch_cost = batch_cost
        self.grad_clip = float(grad_clip)
        self.epochs = 0  # completed epochs (training, then validation)
        self.after_eval = False  # the latest forward pass was an evaluation
        self._waiting: set[int] = set()  # parameters whose gradient this backward pass has not delivered yet
        self._batch = 1
        if self.transforms_gradient:
            for parameter in self.parameters:
                parameter.register_post_accumulate_grad_hook(self._accumulated)

    @property
    def transforms_gradient(self) -> bool:
        return self.batch_cost == "sum" or self.grad_clip > 0 or self.halve_lr_every > 0

    @property
    def linear(self) -> bool:
        """Whether the memory layers run without their softmax (linear start)."""
        return self.epochs < self.linear_start_epochs

    def lr_factor(self) -> float:
        """f(epoch): 1 during linear start, then halved every ``halve_lr_every`` epochs (0: never)."""
        if self.linear or self.halve_lr_every <= 0:
            return 1.0
        return 0.5 ** ((self.epochs - self.linear_start_epochs) // self.halve_lr_every)

    def observe_forward(self, training: bool, batch: int) -> None:
        """Called by every forward pass: counts epochs and arms the gradient transform for a training step."""
        if not training:
            self.after_eval = True
            return
        if self.after_eval:
            self.epochs += 1
            self.after_eval = False
        if self.transforms_gradient and torch.is_grad_enabled():
            self._waiting = {id(p) for p in self.parameters if p.requires_grad}
            self._batch = batch

    def _accumulated(self, parameter: torch.Tensor) -> None:
        if id(parameter) not in self._waiting:
            return
        self._waiting.discard(id(parameter))
        if not self._waiting:
            self._transform()

    @torch.no_grad()
    def _transform(self) -> None:
        grads = [p.grad for p in self.parameters if p.grad is not None]
        scale = float(self._batch) if self.batch_cost == "sum" else 1.0
        factor = torch.tensor(scale * self.lr_factor(), device=grads[0].device)
        if self.grad_clip > 0:
            norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])) * scale
            factor = factor * (self.grad_clip / (norm + 1e-6)).clamp(max=1.0)
        for grad in grads:
            grad.mul_(factor)

    def state_dict(self) -> dict[str, Any]:
        return {"epochs": self.epochs, "after_eval": self.after_eval}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.epochs = int(state.get("epochs", 0))
        self.after_eval = bool(state.get("after_eval", False))
