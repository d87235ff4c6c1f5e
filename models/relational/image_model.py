"""Relations Game models for the ``image`` interface: conv encoder -> central module -> output MLP
(Shanahan et al., ICML 2020, §4 and Fig. 3; the notebook google-deepmind/deepmind-research, PrediNet/PrediNet.ipynb).

    L      = encoder(image)                 [B, H, W, C] uint8 -> [B, 25, 34]   (models.relational.encoder)
    R*     = central(L)                     [B, 640]  PrediNet | MLP1 | MLP2 | RN | MHA (model.central)
    logits = head(R*, onehot(task_id))      [B, num_classes]                    (models.relational.head)

Every parameter starts from the reference's init (truncated normal stddev 0.1, biases 0.1;
models.relational.init). For the curriculum protocol (paper Fig. 3 and the notebook's multi-task experiment:
pre-train; freeze input and central, re-initialise the output MLP; or freeze the input only and re-initialise
central and output)
the three parts are the attributes ``encoder``, ``central`` and ``head``, and ``reinit_head`` /
``reinit_central`` re-apply the paper init to one part.

Task one-hot: appended when the head serves more than one task (``info["num_tasks"] > 1``). The
notebook always appends a fixed-width one-hot (NUM_TASKS = 5), so that the head keeps its shape when
a curriculum moves from a 1-task to a 3-task data set; ``model.task_slots: 5`` reproduces that
(null: the data's own ``num_tasks``). Without it, ``reinit_head(num_tasks=...)`` rebuilds the head
for the next stage's task count.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from models.relational.central import build_central
from models.relational.encoder import ConvEntityEncoder
from models.relational.head import ClassifierHead
from models.relational.init import paper_init_


class ImageRelationalModel(nn.Module):
    """(image [B, H, W, C] uint8, task_id [B] long) -> logits [B, num_classes]."""

    def __init__(self, cfg: Any, info: dict[str, Any]) -> None:
        super().__init__()
        height, width, in_channels = (int(v) for v in info["image_shape"])
        self.num_classes = int(info["num_classes"])
        self.output_hidden = int(cfg.output_hidden)
        self.encoder = ConvEntityEncoder(in_channels, int(cfg.conv_channels), int(cfg.conv_kernel),
                                         int(cfg.conv_stride), image_hw=(height, width))
        self.central = build_central(str(cfg.central), self.encoder.n_entities, self.encoder.d_entity, cfg)
        slots = cfg.get("task_slots")
        num_tasks = int(info.get("num_tasks", 1))
        if slots is not None and int(slots) < num_tasks:
            raise ValueError(f"model.task_slots ({slots}) is smaller than the data's num_tasks ({num_tasks})")
        self.head = self._make_head(int(slots) if slots is not None else num_tasks)
        paper_init_(self)

    def _make_head(self, num_tasks: int) -> ClassifierHead:
        return ClassifierHead(self.central.out_dim, self.num_classes, num_tasks, hidden=self.output_hidden)

    def forward(self, image: torch.Tensor, task_id: torch.Tensor | None = None) -> torch.Tensor:
        entities = self.encoder(image)  # [B, N, D]
        return self.head(self.central(entities), task_id)  # [B, num_classes]

    def reinit_head(self, num_tasks: int | None = None) -> None:
        """Re-initialise the output MLP (paper init); with ``num_tasks`` differing from the head's, rebuild it
        for that many tasks (a new parameter set: give the optimizer the new parameters)."""
        if num_tasks is not None and int(num_tasks) != self.head.num_tasks:
            device, dtype = self.head.output.weight.device, self.head.output.weight.dtype
            self.head = self._make_head(int(num_tasks)).to(device=device, dtype=dtype)
        paper_init_(self.head)

    def reinit_central(self) -> None:
        """Re-initialise the central module (paper init)."""
        paper_init_(self.central)

    def reinit_encoder(self) -> None:
        """Re-initialise the input conv (paper init)."""
        paper_init_(self.encoder)
