"""A stepwise model on a GPU, seen by the stepwise runner as if it were on the CPU.

The stepwise runner (:mod:`harness.runners.stepwise`, Algorithm 1 of Moskvichev & Liu 2021) and the stream tasks
work on the CPU: a task draws its worlds with a CPU ``torch.Generator`` (so the worlds of a cycle are a pure function
of the seed and the cycle on any machine), and the runner scores the Extractor's answers against the step's answers.
:class:`OnDevice` puts the model itself on another device: each step's tensors go to it before the Updater and the
Extractor see them, the world state stays on it from step to step, and the Extractor's logits come back to the CPU,
where the runner takes the loss (the copy back is differentiable, so the gradients reach the model on the device).

Checkpoints keep the bare model's format: ``state_dict`` returns the inner model's entries, copied to the CPU, and
``load_state_dict`` loads them into it, so a run checkpointed on a GPU resumes, is tested or rolled out on the CPU and
the other way round. The launcher wraps a stepwise model only when CUDA is available (:func:`on_accelerator`): on
the CPU the runner trains the model itself, bit for bit as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from harness.streams import StreamStep


def accelerator() -> torch.device | None:
    """The device a stepwise model trains on when it is not the CPU: the first CUDA GPU, or None."""
    return torch.device("cuda") if torch.cuda.is_available() else None


def on_accelerator(model: nn.Module) -> nn.Module:
    """The model on the GPU behind an :class:`OnDevice`, or the model itself where there is no GPU."""
    device = accelerator()
    return model if device is None else OnDevice(model, device)


def to_device(value: Any, device: torch.device) -> Any:
    """A world state (a tensor or a nested tuple or list of tensors) on ``device``."""
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (tuple, list)):
        return type(value)(to_device(part, device) for part in value)
    raise TypeError(f"a world state must be a tensor or a tuple of tensors, not {type(value).__name__}")


class OnDevice(nn.Module):
    """A stream model (``initial_state``, ``update``, ``extract``) on ``device`` behind the CPU interface."""

    def __init__(self, model: nn.Module, device: torch.device) -> None:
        super().__init__()
        self.inner = model.to(device)
        self.device = device

    def initial_state(self, batch_size: int) -> Any:
        return to_device(self.inner.initial_state(batch_size), self.device)  # w_0 on the device

    def update(self, state: Any, step: StreamStep) -> Any:
        return self.inner.update(state, step.to(self.device))  # w_t stays on the device

    def extract(self, state: Any, step: StreamStep) -> torch.Tensor:
        return self.inner.extract(state, step.to(self.device)).cpu()  # logits [B, Q, A] on the CPU

    def state_dict(self, *args: Any, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        """The inner model's entries on the CPU: a checkpoint reads the same wherever it was written."""
        return {name: tensor.cpu() for name, tensor in self.inner.state_dict().items()}

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,  # type: ignore[override]
                        assign: bool = False) -> Any:
        return self.inner.load_state_dict(state_dict, strict=strict, assign=assign)
