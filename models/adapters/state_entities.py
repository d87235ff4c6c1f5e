"""A central module acts on a flat state (CartPole's 4 numbers): each state variable is one entity.

    e_i    = x_i * W_i + b_i                     variable i's value times a learned vector, plus its own
                                                 learned vector (so entities know which variable they are)
    z      = central([e_1 .. e_D])               [B, out_dim]
    h      = torso(z)                            ReLU layers shared by policy and value (agent.torso)
    logits = Dense_A(h),  value = Dense_1(h)

The shell around the central module is the one of the grid agent (``models.agents.shell``, Clift et al.
2020, §4.1) with the conv encoder replaced by this per-variable embedding; the central module keeps its
paper's initialisation, the rest Keras defaults. Not from any paper: the harness's route for putting the
relational modules on the RL ladder's first rung.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from models.adapters.torso import policy_value_torso
from models.agents.shell import AGENT_DEFAULTS
from models.relational.central import build_central
from models.relational.init import paper_init_
from models.relational.transformer import cfg_value, keras_init_


class StateEntityAgent(nn.Module):
    """obs [B, D] float -> (logits [B, num_actions], value [B])."""

    def __init__(self, model_cfg: Any, agent_cfg: Any, observation_shape: tuple[int, ...], num_actions: int) -> None:
        super().__init__()
        if len(observation_shape) != 1:
            raise ValueError(f"a state agent reads flat observations [D]; got shape {list(observation_shape)}")
        agent_cfg = agent_cfg if agent_cfg is not None else {}
        variables = int(observation_shape[0])
        dim = int(cfg_value(agent_cfg, "entity_dim", AGENT_DEFAULTS["entity_dim"]))
        self.scale = nn.Parameter(torch.empty(variables, dim))  # W_i
        self.offset = nn.Parameter(torch.empty(variables, dim))  # b_i
        nn.init.xavier_uniform_(self.scale)
        nn.init.xavier_uniform_(self.offset)
        self.central = build_central(str(model_cfg.central), variables, dim, model_cfg)
        paper_init_(self.central)
        self.torso, self.policy, self.value = policy_value_torso(
            self.central.out_dim, list(cfg_value(agent_cfg, "torso", AGENT_DEFAULTS["torso"])), int(num_actions))
        for part in (self.torso, self.policy, self.value):
            keras_init_(part)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        entities = obs.float().unsqueeze(-1) * self.scale + self.offset  # [B, D, dim]
        features = self.torso(self.central(entities))
        return self.policy(features), self.value(features).squeeze(-1)  # [B, A], [B]
