"""The policy/value head of the agents (Clift et al., ICLR 2020, §4.1; as in ``models.agents.shell``):
ReLU layers shared by the policy and the value, then Dense_A (logits) and Dense_1 (value)."""

from __future__ import annotations

from collections.abc import Sequence

from torch import nn


def policy_value_torso(width: int, hidden: Sequence[int], num_actions: int) -> tuple[nn.Sequential, nn.Linear,
                                                                                     nn.Linear]:
    """(torso [B, width] -> [B, hidden[-1]], policy -> [B, num_actions], value -> [B, 1])."""
    layers: list[nn.Module] = []
    for size in hidden:
        layers += [nn.Linear(width, int(size)), nn.ReLU()]
        width = int(size)
    return nn.Sequential(*layers), nn.Linear(width, int(num_actions)), nn.Linear(width, 1)
