"""Stacks whose members differ in their optimiser settings (``optim.*``: learning rate, momentum, betas, weight
decay, clipping, even the optimiser) as well as their seed and data.

The shared-settings trainer (:class:`harness.runners.stacked.StackedTrainer`) runs one optimiser over the stacked
parameters [K, ...], which is K optimisers only while they share their settings. Here each member keeps its own
optimiser, built from its own ``optim`` config by :func:`harness.optim.build_optimizer` exactly as its solo run
builds it, over *views* of its slices of the stacked parameters (:func:`member_views`): detached views share the
stack's storage, so the member's optimiser updates the stack in place, and its state is the solo optimiser's
state, parameter for parameter. Each step:

* every member's learning rate from its own policy (:class:`harness.optim.LearningRatePolicy`: its lr, warm-up);
* one forward and backward of the whole stack (:class:`harness.runners.stacked_model.StackedClassifier`: the
  gradient of member k's slice is the gradient of member k's own loss);
* per member: its slices of the stacked gradients handed to its views, its own gradient clipping
  (``torch.nn.utils.clip_grad_norm_`` with its ``optim.grad_clip``, as Lightning clips a solo run), its
  optimiser's step.

Members may read different data as well (this trainer is a :class:`~harness.runners.stacked_data.MixedStackedTrainer`;
members of one dataset simply read the same one). The cost against a shared optimiser: K optimiser steps a step
instead of one, which matters where the step is bound by Python overhead (small models at small batches).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from omegaconf import DictConfig
from torch import nn
from torch.optim import Optimizer

from harness.data import TARGET, TaskData
from harness.optim import LearningRatePolicy, build_optimizer
from harness.runners.stacked import Member, _cpu, _inputs
from harness.runners.stacked_data import MixedStackedTrainer
from harness.runners.stacked_model import StackedClassifier, member_losses

NO_STATE: dict[str, Any] = {"state": {}, "param_groups": []}  # what the shared optimiser's slot holds here


def member_views(stack: StackedClassifier, index: int) -> list[torch.Tensor]:
    """Member ``index``'s slices of the stack's parameters, in the model's parameter order: detached views, so an
    optimiser takes them as leaves, and an update through them is an update of the stack."""
    return [p.detach()[index] for p in stack.parameters()]


def step_member(optimizer: Optimizer, params: Sequence[torch.Tensor], index: int, grad_clip: float | None) -> None:
    """Member ``index``'s update after the stack's backward pass: its slices of the stacked gradients ``params``
    (the stack's parameters, in the order of the optimiser's views) handed to its views, its clipping
    (``torch.nn.utils.clip_grad_norm_``, as Lightning clips a solo run; none when ``grad_clip`` is 0 or None),
    its optimiser's step."""
    views = [view for group in optimizer.param_groups for view in group["params"]]
    for view, p in zip(views, params, strict=True):
        view.grad = None if p.grad is None else p.grad[index]
    if grad_clip:
        torch.nn.utils.clip_grad_norm_(views, float(grad_clip))
    optimizer.step()


class _Unused:
    """Holds the shared optimiser's place in the base trainer (this trainer builds none): nothing to save, load or
    step."""

    param_groups: list[dict[str, Any]] = []

    def state_dict(self) -> dict[str, Any]:
        return NO_STATE

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass


class OptimStackedTrainer(MixedStackedTrainer):
    """A stacked trainer with one optimiser and one learning-rate policy per member, each from its own config."""

    def __init__(self, cfg: DictConfig, datas: Sequence[TaskData], members: list[Member],
                 models: list[nn.Module]) -> None:
        super().__init__(cfg, datas, members, models)
        self.optimizers = self._optimizers(members)
        self.policies = [LearningRatePolicy(member.cfg.optim) for member in members]

    def _shared_optimizer(self) -> Optimizer:
        return _Unused()  # type: ignore[return-value]

    def _optimizers(self, members: list[Member]) -> list[Optimizer]:
        return [build_optimizer(member_views(self.stack, k), member.cfg.optim) for k, member in enumerate(members)]

    def _checkpoint(self, member: Member, index: int) -> dict[str, Any]:
        checkpoint = super()._checkpoint(member, index)
        checkpoint["optimizer_states"] = [_cpu(self.optimizers[index].state_dict())]
        checkpoint["harness"]["lr_policy"] = self.policies[index].state_dict()
        return checkpoint

    def resume(self, checkpoints: list[dict[str, Any]]) -> None:
        super().resume([{**checkpoint, "optimizer_states": [NO_STATE]} for checkpoint in checkpoints])
        for optimizer, policy, checkpoint in zip(self.optimizers, self.policies, checkpoints, strict=True):
            optimizer.load_state_dict(checkpoint["optimizer_states"][0])
            policy.load_state_dict(checkpoint["harness"].get("lr_policy", {}))

    def _train_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        """The base trainer's step, each member with its own learning rate, clipping and optimiser."""
        lrs = [policy.lr_at(self.step) for policy in self.policies]
        for optimizer, lr in zip(self.optimizers, lrs, strict=True):
            for group in optimizer.param_groups:
                group["lr"] = lr
        params = self.stack.parameters()
        for p in params:
            p.grad = None
        loss, acc = member_losses(self.stack.logits(_inputs(batch)), batch[TARGET])  # [K], [K]
        loss.sum().backward()
        for k, (optimizer, member) in enumerate(zip(self.optimizers, self.active, strict=True)):
            step_member(optimizer, params, k, member.cfg.optim.grad_clip)
        self.step += 1
        self._record_step(loss, acc, lrs, batch, batch_idx)

    def _drop(self, keep: list[int]) -> None:
        """Carry on with the members at positions ``keep`` only, each with its optimiser's state and policy."""
        if keep:
            states = [self.optimizers[i].state_dict() for i in keep]
            self.stack = self.stack.select(keep)
            self.active = [self.active[i] for i in keep]
            self.optimizers = self._optimizers(self.active)
            for optimizer, state in zip(self.optimizers, states, strict=True):
                optimizer.load_state_dict(state)
            self.policies = [self.policies[i] for i in keep]
        else:
            self.active = []
