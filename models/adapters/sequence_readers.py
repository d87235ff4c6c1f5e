"""The adapters of sequence cores (``shape: recurrent`` models with a ``spec.core``): each turns one interface
into a sequence of vectors [B, T, in_dim] with a mask of real steps, runs the model's core, and puts the
interface's output layer on top. The core is any module ``core(x [B, T, in_dim], mask [B, T]) -> [B, out_dim]``
with attributes ``in_dim`` and ``out_dim`` (``models.lstm.core``, ``models.transformer.core``).

    story     words of the statements in order, then the question's (the LSTM baseline's reading order,
              ``models.lstm.model.flatten_story``), embedded              -> classifier
    sequence  tokens, embedded                                              -> classifier
    image     raster-order p x p patches (``model.patch_size``), pixels / 255, linearly projected; in a
              multi-task set a learned task token comes first (as the image models' task one-hot)
                                                                            -> classifier
    env       grid cells in raster order, each cell's 3 channels projected  -> policy/value torso
    state_env one step per state variable: its value times a learned vector -> policy/value torso

The agents' torso is the grid agent's (``agent.torso``, Clift et al. 2020 §4.1) in its layers, but
:class:`SequenceAgent` leaves them (the input projection, torso, policy and value) at PyTorch's default
initialisation, where ``models.agents.shell`` and ``models.adapters.state_entities`` apply the reference agent's
Keras defaults (Glorot uniform weights, zero biases); the shipped RL runs of sequence cores (CartPole and
BoxWorld with ``lstm``, ``transformer``, ``ll_rnn``) were trained so. Not from any paper: the harness's routes
that let every sequence model meet every task.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from harness.registry import REGISTRY, load_entry
from models.adapters.torso import policy_value_torso
from models.agents.shell import AGENT_DEFAULTS
from models.lstm.model import flatten_story
from models.relational.transformer import cfg_value


def build_core(cfg: Any) -> nn.Module:
    """The sequence core of the model named ``cfg.name`` (its ``spec.core``), built from its config."""
    return load_entry(REGISTRY.model(str(cfg.name)).core)(cfg)


def real_steps(lengths: torch.Tensor, steps: int) -> torch.Tensor:
    """mask [B, steps]: True for the first ``lengths[b]`` steps."""
    return torch.arange(steps, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)


class TokenSequenceModel(nn.Module):
    """(tokens [B, L], length [B]) -> logits [B, num_classes]."""

    def __init__(self, cfg: Any, info: dict[str, Any]) -> None:
        super().__init__()
        self.core = build_core(cfg)
        self.embed = nn.Embedding(int(info["vocab_size"]), self.core.in_dim, padding_idx=0)
        self.out = nn.Linear(self.core.out_dim, int(info["num_classes"]))

    def read(self, tokens: torch.Tensor, length: torch.Tensor) -> torch.Tensor:
        longest = max(int(length.max()), 1)
        return self.out(self.core(self.embed(tokens[:, :longest]), real_steps(length, longest)))

    def forward(self, tokens: torch.Tensor, length: torch.Tensor) -> torch.Tensor:
        return self.read(tokens, length)


class StorySequenceModel(TokenSequenceModel):
    """(story [B, T, W], story_len [B], query [B, W]) -> logits [B, num_classes]."""

    def forward(self, story: torch.Tensor, story_len: torch.Tensor, query: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return self.read(*flatten_story(story, query))


class ImageSequenceModel(nn.Module):
    """(image [B, H, W, C] uint8, task_id [B]) -> logits [B, num_classes]."""

    def __init__(self, cfg: Any, info: dict[str, Any]) -> None:
        super().__init__()
        height, width, channels = (int(v) for v in info["image_shape"])
        self.patch = int(cfg.patch_size)
        if height % self.patch or width % self.patch:
            raise ValueError(f"model.patch_size ({self.patch}) must divide the {height}x{width} image")
        self.core = build_core(cfg)
        self.project = nn.Linear(self.patch * self.patch * channels, self.core.in_dim)
        self.num_tasks = int(info.get("num_tasks", 1))
        self.task_token = nn.Embedding(self.num_tasks, self.core.in_dim) if self.num_tasks > 1 else None
        self.out = nn.Linear(self.core.out_dim, int(info["num_classes"]))

    def patches(self, image: torch.Tensor) -> torch.Tensor:
        """[B, H, W, C] -> [B, (H/p)(W/p), p*p*C], raster order, pixels scaled to [0, 1]."""
        b, h, w, c = image.shape
        p = self.patch
        x = image.float().div(255.0).reshape(b, h // p, p, w // p, p, c).permute(0, 1, 3, 2, 4, 5)
        return x.reshape(b, (h // p) * (w // p), p * p * c)

    def forward(self, image: torch.Tensor, task_id: torch.Tensor | None = None) -> torch.Tensor:
        x = self.project(self.patches(image))  # [B, T, in_dim]
        if self.task_token is not None:
            if task_id is None:
                raise ValueError(f"this model serves {self.num_tasks} tasks: task_id is required")
            x = torch.cat([self.task_token(task_id.long()).unsqueeze(1), x], dim=1)
        mask = torch.ones(x.shape[:2], dtype=torch.bool, device=x.device)
        return self.out(self.core(x, mask))


class SequenceAgent(nn.Module):
    """obs [B, H, W, C] (grid) or [B, D] (state) -> (logits [B, num_actions], value [B])."""

    def __init__(self, model_cfg: Any, agent_cfg: Any, observation_shape: tuple[int, ...], num_actions: int) -> None:
        super().__init__()
        if len(observation_shape) not in (1, 3):
            raise ValueError(f"a sequence agent reads grids [H, W, C] or states [D]; got {list(observation_shape)}")
        agent_cfg = agent_cfg if agent_cfg is not None else {}
        self.core = build_core(model_cfg)
        self.grid = len(observation_shape) == 3
        self.project = nn.Linear(int(observation_shape[-1]) if self.grid else 1, self.core.in_dim)
        self.torso, self.policy, self.value = policy_value_torso(
            self.core.out_dim, list(cfg_value(agent_cfg, "torso", AGENT_DEFAULTS["torso"])), int(num_actions))

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = obs.float()
        steps = x.flatten(1, 2) / 255.0 if self.grid else x.unsqueeze(-1)  # [B, T, C] or [B, D, 1]
        h = self.project(steps)
        features = self.torso(self.core(h, torch.ones(h.shape[:2], dtype=torch.bool, device=h.device)))
        return self.policy(features), self.value(features).squeeze(-1)
