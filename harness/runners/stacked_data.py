"""Mixed stacks: runs of one model that read different data of one shape, trained as one computation.

:class:`harness.runners.stacked.StackedTrainer` trains members that share one dataset (the seeds of one config).
The members of a *mixed* stack may also differ in their task's data keys (``task.*``): the PrediNet paper's
Table 1 trains each model on five relations (``task.tasks``) with several seeds each (Shanahan et al. 2020, §4),
fifteen runs of one model that fit one stack. Each member

* reads its own training set, batch by batch in the order its solo run reads it (its ``EpochShuffleSampler``):
  :class:`MemberSplits` puts the members' training sets side by side and each member's sampler is offset to its
  own (:class:`OffsetSampler`), so the stacked trainer's loop runs unchanged;
* is validated on its own validation set (:func:`evaluate_members`: one stacked batch holds a batch of each
  member's set, reduced as the shared-data trainer reduces it);
* is tested on its own test splits (the launcher tests the members of each dataset as a stack of their own).

Their training sets must have the same size and the same example shapes, as must their validation sets: one
stacked batch [K, B, ...] holds a batch of each. The model and the training settings are one config, as for any
stack (:func:`harness.runners.stacked_launch.check_stackable`); members whose optimiser settings differ too train
with :class:`harness.runners.stacked_optim.OptimStackedTrainer`, a subclass of this one.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import torch
from omegaconf import DictConfig
from torch import nn

from harness.data import TARGET, TaskData, TensorDictDataset
from harness.errors import UserError
from harness.runners.stacked import (
    Member,
    StackedTrainer,
    WeightedMean,
    _inputs,
    _stack_batch,
    _to,
    limited,
)
from harness.runners.stacked_model import StackedClassifier, member_losses


class MemberSplits:
    """The members' datasets of one split side by side: member k's example i at index ``k * size + i``.

    ``len()`` is one member's size (the stacked trainer counts an epoch's batches from it); a call of
    ``__getitems__`` asks for one member's batch, as the stacked trainer does."""

    def __init__(self, datasets: Sequence[TensorDictDataset]) -> None:
        self.datasets = list(datasets)
        self.size = len(self.datasets[0])

    def __len__(self) -> int:
        return self.size

    def __getitems__(self, indices: list[int]) -> dict[str, torch.Tensor]:
        member = indices[0] // self.size
        return self.datasets[member].__getitems__([index - member * self.size for index in indices])


class OffsetSampler:
    """A member's sampler (its solo run's order), shifted to the member's place in :class:`MemberSplits`."""

    def __init__(self, sampler: Any, offset: int) -> None:
        self.sampler, self.offset = getattr(sampler, "sampler", sampler), offset  # never offset twice

    def set_epoch(self, epoch: int) -> None:
        self.sampler.set_epoch(epoch)

    def __iter__(self) -> Iterator[int]:
        return (self.offset + index for index in self.sampler)

    def __len__(self) -> int:
        return len(self.sampler)


def shape_mismatch(datas: Sequence[TaskData]) -> str | None:
    """Why these members' data cannot share stacked batches (training or validation sets of different sizes or
    example shapes), or None."""
    for split in ("train", "val"):
        sets = [getattr(data, split) for data in datas]
        sizes = sorted({len(s) for s in sets})
        if len(sizes) > 1:
            return f"their {split} sets hold different numbers of examples ({', '.join(map(str, sizes))})"
        shapes = {tuple((name, tuple(t.shape[1:]), str(t.dtype)) for name, t in sorted(s.tensors.items()))
                  for s in sets}
        if len(shapes) > 1:
            return f"their {split} examples differ in shape or type ({' vs '.join(map(_shapes, sorted(shapes)))})"
    return None


def _shapes(spec: tuple[tuple[str, tuple[int, ...], str], ...]) -> str:
    return ", ".join(f"{name} {list(shape)} {dtype.removeprefix('torch.')}" for name, shape, dtype in spec)


def check_same_shapes(datas: Sequence[TaskData]) -> None:
    """A one-line error when the members' data cannot share stacked batches."""
    problem = shape_mismatch(datas)
    if problem:
        raise UserError(f"these runs read data that cannot share one stack: {problem}; stack only runs whose "
                        "data have the same shapes")


@torch.no_grad()
def evaluate_members(stack: StackedClassifier, datasets: Sequence[TensorDictDataset], batch_size: int,
                     limit: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss [K], accuracy [K]) of member k on ``datasets[k]`` (all of one size), reduced as
    :func:`harness.runners.stacked.evaluate` reduces the shared validation set (batch-size-weighted means)."""
    stack.template.eval()
    device = stack.parameters()[0].device
    splits = MemberSplits(datasets)
    loss_mean, acc_mean = WeightedMean(stack.k), WeightedMean(stack.k)
    n = len(splits)
    for start in range(0, limited(math.ceil(n / batch_size), limit) * batch_size, batch_size):
        rows = list(range(start, min(start + batch_size, n)))
        batch = _to(_stack_batch(splits, [[k * n + row for row in rows] for k in range(stack.k)]), device)
        loss, acc = member_losses(stack.logits(_inputs(batch)), batch[TARGET])  # [K], [K]
        loss_mean.add(loss, len(rows))
        acc_mean.add(acc, len(rows))
    stack.template.train()
    return loss_mean.mean(), acc_mean.mean()


class MixedStackedTrainer(StackedTrainer):
    """A :class:`StackedTrainer` whose member k trains on ``datas[k]`` and is validated on its validation set."""

    def __init__(self, cfg: DictConfig, datas: Sequence[TaskData], members: list[Member],
                 models: list[nn.Module]) -> None:
        check_same_shapes(datas)
        train = MemberSplits([data.train for data in datas])
        for k, member in enumerate(members):
            member.sampler = OffsetSampler(member.sampler, k * len(train))  # type: ignore[assignment]
        self.val_sets = {id(member): data.val for member, data in zip(members, datas, strict=True)}
        super().__init__(cfg, replace(datas[0], train=train), members, models)  # type: ignore[arg-type]

    def _validate(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Each active member's validation loss and accuracy on its own validation set."""
        return evaluate_members(self.stack, [self.val_sets[id(m)] for m in self.active],
                                int(self.train_cfg.eval_batch_size), self.train_cfg.limit_eval_batches)
