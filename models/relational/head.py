"""Output MLP adapter (``output_hidden`` and ``output`` of ``PrediNet4MultiTask`` in
google-deepmind/deepmind-research, PrediNet/PrediNet.ipynb; paper Table S2 "Output MLP"):

    logits = W_2 ReLU(W_1 [R*, onehot(task)] + b_1) + b_2,   hidden 8, biases in both layers.

The one-hot task id is appended only when the head serves more than one task. The notebook always
appends a one-hot of width NUM_TASKS = 5 ("max number of possible tasks"), single-task runs included;
:class:`~models.relational.image_model.ImageRelationalModel` reproduces that with ``task_slots: 5``.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class ClassifierHead(nn.Module):
    """(central output [B, d_in], task id [B]) -> logits [B, num_classes]."""

    def __init__(self, d_in: int, num_classes: int, num_tasks: int, hidden: int = 8) -> None:
        super().__init__()
        self.num_tasks = int(num_tasks)
        self.task_dim = self.num_tasks if self.num_tasks > 1 else 0  # width of the appended one-hot
        self.hidden = nn.Linear(d_in + self.task_dim, hidden)
        self.output = nn.Linear(hidden, num_classes)

    def forward(self, x: torch.Tensor, task_id: torch.Tensor | None = None) -> torch.Tensor:
        if self.task_dim:
            if task_id is None:
                raise ValueError(f"this head serves {self.num_tasks} tasks: task_id is required")
            task = F.one_hot(task_id.long().reshape(-1), self.num_tasks).to(x.dtype)  # [B, T]
            x = torch.cat([x, task], dim=-1)  # [B, d_in + T]
        return self.output(torch.relu(self.hidden(x)))  # [B, num_classes]
