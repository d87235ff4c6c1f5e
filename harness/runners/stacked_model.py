"""K copies of one classifier trained as one computation: stacked parameters, ``vmap`` over the members.

Members share an architecture and differ in their parameters (their seeds). With
``torch.func.stack_module_state`` every parameter becomes one leaf tensor [K, ...]; ``torch.func.functional_call``
under ``torch.func.vmap`` runs the K forward passes as one batched computation, each member on its own batch:

    inputs   {name: [K, B, ...]}                  member k reads inputs[name][k]
    logits   [K, B, C]
    loss     sum_k mean_b CE(logits[k, b], target[k, b])

The gradient of the summed loss with respect to member k's slice of a stacked parameter is the gradient of
member k's own mean loss (the other terms do not depend on it), so one backward pass gives each member its own
gradient. Any elementwise optimiser (SGD, Adam, the TF1 kernels of :mod:`harness.optim`) over the stacked
tensors is then exactly K independent optimisers. Global-norm gradient clipping is not elementwise: it is
applied per member (:func:`clip_per_member`), the norm taken over that member's slices only.

With K = 1 the forward runs the plain module on the single member's parameters, without ``vmap``: the same
operations, in the same order, as the unstacked model.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

CLIP_EPS = 1e-6  # torch.nn.utils.clip_grad_norm_'s: coef = max_norm / (total_norm + 1e-6)


def model_mismatch(models: Sequence[nn.Module]) -> str | None:
    """Why ``models`` cannot be stacked into tensors [K, ...], or None: other classes, or the first parameter whose
    shape differs between members (a mixed stack whose task.* settings size the model differently: another number
    of classes, of input features)."""
    if len({type(model) for model in models}) > 1:
        return "its members' models are of different classes"
    shapes = [{name: tuple(p.shape) for name, p in model.named_parameters()} for model in models]
    for name in shapes[0]:
        seen = list(dict.fromkeys(str(list(each.get(name, ()))) for each in shapes))
        if len(seen) > 1:
            return f"its members' models differ in shape: {name} is {' or '.join(seen)}"
    if any(set(each) != set(shapes[0]) for each in shapes):
        return "its members' models have different parameters"
    return None


class StackedClassifier:
    """``models`` (same class and shapes) as stacked parameters; ``logits(inputs)`` -> [K, B, C]."""

    def __init__(self, models: Sequence[nn.Module], vmap_one: bool = False) -> None:
        if not models:
            raise ValueError("a stack needs at least one model")
        mismatch = model_mismatch(models)
        if mismatch:
            raise ValueError(f"stacked models must share their class and parameter shapes: {mismatch}")
        self.k = len(models)
        self.vmap_one = vmap_one  # K = 1 through vmap too (benchmarks); by default K = 1 runs the plain module
        self.template = copy.deepcopy(models[0])  # the module whose forward is called on the members' tensors
        params, buffers = stack_module_state(list(models))  # {name: [K, ...]}, parameters are fresh leaves
        self.params: dict[str, torch.Tensor] = params
        self.buffers: dict[str, torch.Tensor] = buffers

    def parameters(self) -> list[torch.Tensor]:
        return list(self.params.values())

    def _member_logits(self, params: dict[str, torch.Tensor], buffers: dict[str, torch.Tensor],
                       inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        return functional_call(self.template, (params, buffers), kwargs=inputs)

    def logits(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        """inputs {name: [K, B, ...]} -> logits [K, B, C]."""
        if self.k == 1 and not self.vmap_one:
            first = {name: t[0] for name, t in self.params.items()}
            buffers = {name: t[0] for name, t in self.buffers.items()}
            return self._member_logits(first, buffers, {n: t[0] for n, t in inputs.items()}).unsqueeze(0)
        return vmap(self._member_logits, randomness="different")(self.params, self.buffers, inputs)

    def shared_logits(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        """inputs {name: [B, ...]} read by every member (validation, test) -> logits [K, B, C]."""
        if self.k == 1 and not self.vmap_one:
            return self.logits({name: t.unsqueeze(0) for name, t in inputs.items()})
        return vmap(self._member_logits, in_dims=(0, 0, None), randomness="different")(
            self.params, self.buffers, inputs)

    def select(self, keep: Sequence[int]) -> StackedClassifier:
        """A stack of the members at positions ``keep`` (copies of their tensors, fresh leaves)."""
        index = torch.as_tensor(list(keep), dtype=torch.long, device=next(iter(self.params.values())).device)
        smaller = copy.copy(self)
        smaller.k = len(index)
        smaller.params = {name: p.detach().index_select(0, index).requires_grad_(p.requires_grad)
                          for name, p in self.params.items()}
        smaller.buffers = {name: b.index_select(0, index) for name, b in self.buffers.items()}
        return smaller

    def member_state_dict(self, index: int) -> dict[str, torch.Tensor]:
        """Member ``index``'s parameters and persistent buffers, named as the unstacked model's ``state_dict``."""
        persistent = set(self.template.state_dict())
        tensors = {**self.params, **self.buffers}
        return {name: tensors[name][index].detach().clone() for name in tensors if name in persistent}

    def load_member_state_dict(self, index: int, state: dict[str, torch.Tensor]) -> None:
        """Overwrite member ``index``'s slices with an unstacked ``state_dict`` (a resumed run's checkpoint)."""
        with torch.no_grad():
            for name, tensor in {**self.params, **self.buffers}.items():
                if name in state:
                    tensor[index].copy_(state[name])

    def member_module(self, index: int) -> nn.Module:
        """A plain copy of member ``index`` (for testing and analysis)."""
        module = copy.deepcopy(self.template)
        module.load_state_dict(self.member_state_dict(index), strict=False)
        return module


def member_losses(logits: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """logits [K, B, C], target [K, B] -> (mean cross-entropy [K], accuracy [K]) of each member."""
    k, batch, classes = logits.shape
    acc = (logits.argmax(dim=-1) == target).float().mean(dim=1)  # [K]
    if k == 1:  # the unstacked model's own loss expression
        return F.cross_entropy(logits[0], target[0]).unsqueeze(0), acc
    loss = F.cross_entropy(logits.reshape(k * batch, classes), target.reshape(k * batch),
                           reduction="none").view(k, batch).mean(dim=1)  # [K]
    return loss, acc


def clip_per_member(params: Sequence[torch.Tensor], max_norm: float) -> torch.Tensor:
    """Scale each member's gradients so that their global 2-norm is at most ``max_norm`` (as
    ``torch.nn.utils.clip_grad_norm_`` does for one model); returns the members' norms before clipping [K]."""
    grads = [p.grad for p in params if p.grad is not None]  # each [K, ...]
    k = grads[0].shape[0]
    norms = torch.stack([g.reshape(k, -1).norm(dim=1) for g in grads], dim=1).norm(dim=1)  # [K]
    coef = (max_norm / (norms + CLIP_EPS)).clamp(max=1.0)  # [K]
    for grad in grads:
        grad.mul_(coef.view(k, *([1] * (grad.dim() - 1))))
    return norms
