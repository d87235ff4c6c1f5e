"""The RLlib face of a harness agent: a ``TorchRLModule`` around the model the registry names.

The agent itself (``models/agents/shell.py`` for grid worlds) is a plain ``nn.Module`` mapping
observations [B, ...] to ``(logits [B, A], value [B])`` and knows nothing of Ray. This module builds it
on every EnvRunner and Learner from ``model_config`` alone (plain, picklable data)::

    {"entry": "module:Class", "model": {...cfg.model...}, "agent": {...cfg.agent...}}

One forward pass serves both heads: ``_forward_train`` returns the value as the "embeddings", which
``compute_values`` hands back, so the learner does not run the network twice (the policy and value
share their torso, as in the reference agents).
"""

from __future__ import annotations

from typing import Any

import torch
from omegaconf import OmegaConf
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis import ValueFunctionAPI
from ray.rllib.core.rl_module.torch import TorchRLModule

from harness.registry import load_entry


class AgentRLModule(TorchRLModule, ValueFunctionAPI):
    """Policy logits and state values from one harness agent."""

    def setup(self) -> None:
        config = dict(self.model_config or {})
        agent_class = load_entry(config["entry"])
        model_cfg = OmegaConf.create(config.get("model") or {})
        agent_cfg = OmegaConf.create(config.get("agent") or {})
        observation_shape = tuple(int(d) for d in self.observation_space.shape)  # type: ignore[union-attr]
        num_actions = int(self.action_space.n)  # type: ignore[union-attr]
        self.agent = agent_class(model_cfg, agent_cfg, observation_shape, num_actions)

    def _heads(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        logits, value = self.agent(batch[Columns.OBS])  # [B, A], [B]
        return logits, value

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        logits, _ = self._heads(batch)
        return {Columns.ACTION_DIST_INPUTS: logits}

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        logits, value = self._heads(batch)
        return {Columns.ACTION_DIST_INPUTS: logits, Columns.EMBEDDINGS: value}

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        if embeddings is not None:
            return embeddings  # the value computed by the same forward pass, [B]
        return self._heads(batch)[1]
