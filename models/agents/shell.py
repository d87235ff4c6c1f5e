"""The agent shell of Clift et al., ICLR 2020, §4.1 (dmurfet/2simplicialtransformer, agent/agent_relational.py and
agent/agent_simplicial.py), around any registered central module:

    e      = encoder(obs)                         [B, H, W, 3] -> [B, N, 64]      (models.agents.encoder)
    z      = central(e)                           [B, out_dim]   relational | simplicial | mha | predinet | ...
    h      = ReLU(Dense_256(...ReLU(Dense_256(z))))   4 layers (agent.torso)         [B, 256]
    logits = Dense_A(h),  value = Dense_1(h)      the policy and value share the torso   [B, A], [B]

The central module is built by name from :data:`models.relational.central.CENTRAL_MODULES`
(``model.central``) with the model's own config node, so every Relations Game central module plugs in
unchanged. It keeps its own paper's initialisation, as in the Relations Game (``paper_init_``: the
PrediNet paper's truncated normal for predinet / mha / mlp / relation_net, the Keras defaults for
relational / simplicial). The shell's layers (convs, entity projection, torso, policy and value) get the
Keras defaults of the reference agent: Glorot uniform weights, zero biases.
Independent of any RL library: the RL runner wraps it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from models.agents.encoder import GridEntityEncoder
from models.relational.central import build_central
from models.relational.init import paper_init_
from models.relational.transformer import cfg_value, keras_init_

AGENT_DEFAULTS: dict[str, Any] = {
    "conv_channels": [12, 24],  # two 2x2 VALID convolutions with ReLU
    "conv_kernel": 2,
    "entity_dim": 64,  # conv features projected to entity_dim - 2, then (row, column) appended
    "torso": [256, 256, 256, 256],  # ReLU layers shared by policy and value
}


class AgentShell(nn.Module):
    """obs [B, H, W, 3] (uint8 or float on 0..255) -> (logits [B, num_actions], value [B])."""

    def __init__(self, model_cfg: Any, agent_cfg: Any, observation_shape: tuple[int, int, int],
                 num_actions: int) -> None:
        super().__init__()
        agent_cfg = agent_cfg if agent_cfg is not None else {}
        conv_channels = list(cfg_value(agent_cfg, "conv_channels", AGENT_DEFAULTS["conv_channels"]))
        conv_kernel = int(cfg_value(agent_cfg, "conv_kernel", AGENT_DEFAULTS["conv_kernel"]))
        entity_dim = int(cfg_value(agent_cfg, "entity_dim", AGENT_DEFAULTS["entity_dim"]))
        torso: Sequence[int] = list(cfg_value(agent_cfg, "torso", AGENT_DEFAULTS["torso"]))
        self.num_actions = int(num_actions)
        self.encoder = GridEntityEncoder(observation_shape, conv_channels, conv_kernel, entity_dim)
        self.central = build_central(str(model_cfg.central), self.encoder.n_entities, entity_dim, model_cfg)
        layers: list[nn.Module] = []
        width = self.central.out_dim
        for hidden in torso:
            layers += [nn.Linear(width, int(hidden)), nn.ReLU()]
            width = int(hidden)
        self.torso = nn.Sequential(*layers)
        self.policy = nn.Linear(width, self.num_actions)
        self.value = nn.Linear(width, 1)
        for part in (self.encoder, self.torso, self.policy, self.value):
            keras_init_(part)
        paper_init_(self.central)  # the central module's own paper's init

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.torso(self.central(self.encoder(obs)))  # [B, 256]
        return self.policy(features), self.value(features).squeeze(-1)  # [B, A], [B]


def build_agent(cfg: Any, observation_shape: tuple[int, int, int], num_actions: int) -> AgentShell:
    """The agent for a run's full config: ``cfg.model`` (with ``central``) and ``cfg.agent`` (optional;
    missing fields take :data:`AGENT_DEFAULTS`)."""
    agent_cfg = cfg.get("agent") if hasattr(cfg, "get") else getattr(cfg, "agent", None)
    return AgentShell(cfg.model, agent_cfg, observation_shape, num_actions)
