"""A small actor-critic MLP for flat state observations (the RL ladder's control agent).

Two separate torsos, as RLlib's default model (``vf_share_layers=False``)::

    policy: obs [B, S] -> tanh(Linear(S, 64)) -> tanh(Linear(64, 64)) -> Linear(64, A)   logits [B, A]
    value:  obs [B, S] -> tanh(Linear(S, 64)) -> tanh(Linear(64, 64)) -> Linear(64, 1)   value  [B]

Sizes come from ``model.hidden``. With one shared torso CartPole's value loss (returns up to 500)
swamps the policy gradient and IMPALA and PPO stall near a return of 50.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


def _mlp(width: int, hidden: list[int], out: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    for size in hidden:
        layers += [nn.Linear(width, int(size)), nn.Tanh()]
        width = int(size)
    return nn.Sequential(*layers, nn.Linear(width, out))


class MLPAgent(nn.Module):
    """obs [B, S] -> (logits [B, A], value [B])."""

    def __init__(self, model_cfg: Any, agent_cfg: Any, observation_shape: tuple[int, ...], num_actions: int) -> None:
        super().__init__()
        width = int(torch.tensor(observation_shape).prod())
        self.policy = _mlp(width, list(model_cfg.hidden), num_actions)
        self.value = _mlp(width, list(model_cfg.hidden), 1)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        flat = obs.float().flatten(1)  # [B, S]
        return self.policy(flat), self.value(flat).squeeze(-1)
