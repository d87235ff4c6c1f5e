"""Rules of harness/runners/stacked_optim.py checked on tiny hand-made stacks: each member is clipped by the
global 2-norm of its own gradients (``torch.nn.utils.clip_grad_norm_``, as Lightning's ``gradient_clip_val``
clips a solo run), and a member that carries on after others left keeps its optimiser state and its
learning-rate policy."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch
from omegaconf import OmegaConf

from harness.optim import LearningRatePolicy
from harness.runners.stacked_optim import OptimStackedTrainer, member_views, step_member


class TinyStack:
    """What the trainer reads of a stack: ``parameters()`` [K, ...] and ``select(keep)``."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor) -> None:
        self.weight, self.bias = weight.requires_grad_(), bias.requires_grad_()

    def parameters(self) -> list[torch.Tensor]:
        return [self.weight, self.bias]

    def select(self, keep: list[int]) -> TinyStack:
        index = torch.tensor(keep)
        return TinyStack(self.weight.detach().index_select(0, index), self.bias.detach().index_select(0, index))


def _sgd_optimizer(params: list[torch.Tensor], lr: float = 1.0) -> torch.optim.Optimizer:
    return torch.optim.SGD(params, lr=lr)


def test_each_member_is_clipped_by_the_global_norm_of_its_own_gradients() -> None:
    """Member 0's gradients (0.3, 0.4 | 0) have norm 0.5 and stay; member 1's (3, 4 | 0) have norm 5 and are
    scaled by 1/5 as a whole (not clipped value by value, not by the norm of the whole stack)."""
    weight, bias = torch.zeros(2, 2), torch.zeros(2, 1)
    stack = TinyStack(weight, bias)
    weight.grad = torch.tensor([[0.3, 0.4], [3.0, 4.0]])
    bias.grad = torch.zeros(2, 1)
    for index in (0, 1):
        step_member(_sgd_optimizer(member_views(stack, index)), stack.parameters(), index, grad_clip=1.0)
    torch.testing.assert_close(weight.detach(), torch.tensor([[-0.3, -0.4], [-0.6, -0.8]]))
    torch.testing.assert_close(bias.detach(), torch.zeros(2, 1))


@pytest.mark.parametrize("grad_clip", [0.0, None])
def test_no_clipping_when_grad_clip_is_off(grad_clip: float | None) -> None:
    weight = torch.zeros(1, 2)
    stack = TinyStack(weight, torch.zeros(1, 1))
    weight.grad = torch.tensor([[3.0, 4.0]])
    step_member(_sgd_optimizer(member_views(stack, 0)), stack.parameters(), 0, grad_clip)
    torch.testing.assert_close(weight.detach(), torch.tensor([[-3.0, -4.0]]))


def _member(lr: float, warmup_steps: int) -> SimpleNamespace:
    optim = {"name": "sgd", "lr": lr, "betas": [0.9, 0.999], "eps": 1e-8, "momentum": 0.5, "decay": 0.9,
             "weight_decay": 0.0, "grad_clip": 0.0, "warmup_steps": warmup_steps, "warmup_factor": 0.1,
             "decay_below_val_loss": None, "decay_factor": 1.0}
    return SimpleNamespace(cfg=OmegaConf.create({"optim": optim}))


def test_members_that_carry_on_keep_their_optimiser_state_and_policy() -> None:
    """Three SGD members with momentum 0.5; after one step member 0 leaves. Member 1 (now position 0) must go
    on with its own momentum buffer and its own learning rate, as its solo run would: its second update is
    lr * (0.5 * g1 + g2)."""
    members = [_member(0.1, 0), _member(0.2, 0), _member(0.3, 5)]
    trainer: Any = SimpleNamespace(stack=TinyStack(torch.zeros(3, 1), torch.zeros(3, 1)), active=members)
    trainer._optimizers = lambda active: OptimStackedTrainer._optimizers(trainer, active)
    trainer.optimizers = trainer._optimizers(members)
    trainer.policies = [LearningRatePolicy(member.cfg.optim) for member in members]

    def step(grads: list[float]) -> None:
        for optimizer, policy in zip(trainer.optimizers, trainer.policies, strict=True):
            optimizer.param_groups[0]["lr"] = policy.lr_at(1)
        for p in trainer.stack.parameters():
            p.grad = torch.tensor(grads).view(-1, 1)
        for k, optimizer in enumerate(trainer.optimizers):
            step_member(optimizer, trainer.stack.parameters(), k, None)

    step([1.0, 1.0, 1.0])  # member 1: -0.2 (lr 0.2); member 2 in warm-up: -0.03
    OptimStackedTrainer._drop(trainer, [1, 2])
    assert [policy.base_lr for policy in trainer.policies] == [0.2, 0.3]
    step([2.0, 2.0])  # member 1: -0.2 - 0.2 * (0.5 * 1 + 2); member 2: -0.03 - 0.03 * (0.5 * 1 + 2)
    torch.testing.assert_close(trainer.stack.weight.detach(), torch.tensor([[-0.7], [-0.105]]))


def test_a_resumed_member_gets_back_its_policy_and_optimiser_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checkpoint of each member holds its optimiser state and its policy's one-off decay; resuming restores
    both into that member's own optimiser and policy."""
    from harness.runners.stacked_data import MixedStackedTrainer

    monkeypatch.setattr(MixedStackedTrainer, "resume", lambda self, checkpoints: None)
    members = [_member(0.1, 0), _member(0.2, 0)]
    trainer = object.__new__(OptimStackedTrainer)
    trainer.stack = TinyStack(torch.zeros(2, 1), torch.zeros(2, 1))  # type: ignore[assignment]
    trainer.optimizers = OptimStackedTrainer._optimizers(trainer, members)  # type: ignore[arg-type]
    trainer.policies = [LearningRatePolicy(member.cfg.optim) for member in members]
    saved = torch.optim.SGD([torch.zeros(1, requires_grad=True), torch.zeros(1, requires_grad=True)], lr=0.2,
                            momentum=0.5)
    saved.state[saved.param_groups[0]["params"][0]]["momentum_buffer"] = torch.tensor([7.0])
    checkpoints = [{"optimizer_states": [torch.optim.SGD([torch.zeros(1)], lr=0.1).state_dict()],
                    "harness": {"lr_policy": {"decayed": False}}},
                   {"optimizer_states": [saved.state_dict()], "harness": {"lr_policy": {"decayed": True}}}]
    checkpoints[0]["optimizer_states"][0]["param_groups"][0]["params"] = [0, 1]
    OptimStackedTrainer.resume(trainer, checkpoints)  # type: ignore[arg-type]
    assert [policy.decayed for policy in trainer.policies] == [False, True]
    buffer = trainer.optimizers[1].state[trainer.optimizers[1].param_groups[0]["params"][0]]["momentum_buffer"]
    torch.testing.assert_close(buffer, torch.tensor([7.0]))
