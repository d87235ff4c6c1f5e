"""What a supervised task hands to the runner: in-memory splits of named tensors, and a sampler whose
order depends only on (seed, epoch), so a resumed run sees exactly the batches an uninterrupted run
would have seen.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils.data import Dataset, Sampler

TARGET = "target"


class TensorDictDataset(Dataset):
    """Examples stored as aligned tensors ``{name: [N, ...]}``; one of them is the ``target``.

    ``__getitems__`` returns a whole batch at once (the DataLoader uses it when present), which avoids
    collating examples one by one.
    """

    def __init__(self, tensors: Mapping[str, torch.Tensor]) -> None:
        sizes = {name: t.shape[0] for name, t in tensors.items()}
        if len(set(sizes.values())) != 1:
            raise ValueError(f"tensors disagree on the number of examples: {sizes}")
        if TARGET not in tensors:
            raise ValueError(f"a supervised split needs a '{TARGET}' tensor; got {sorted(tensors)}")
        self.tensors = dict(tensors)

    def __len__(self) -> int:
        return next(iter(self.tensors.values())).shape[0]

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return {name: t[index] for name, t in self.tensors.items()}

    def __getitems__(self, indices: list[int]) -> dict[str, torch.Tensor]:
        idx = torch.as_tensor(indices, dtype=torch.long)
        return {name: t.index_select(0, idx) for name, t in self.tensors.items()}


def identity_collate(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The dataset already returns a collated batch."""
    return batch


class EpochShuffleSampler(Sampler[int]):
    """A random permutation drawn from ``seed + epoch``: the same on a resumed run as on a fresh one.

    Lightning calls :meth:`set_epoch` at the start of every training epoch.
    """

    def __init__(self, size: int, seed: int) -> None:
        self.size, self.seed, self.epoch = size, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        generator = torch.Generator().manual_seed(self.seed * 100_003 + self.epoch)
        return iter(torch.randperm(self.size, generator=generator).tolist())

    def __len__(self) -> int:
        return self.size


@dataclass
class TaskData:
    """The splits of a supervised task, what models need to know about them, and where they came from.

    ``info`` is what a model is built from (vocabulary size, number of classes, sequence lengths...).
    ``extra_test`` holds additional named test splits (e.g. held-out object sets), reported as
    ``test_<name>/<metric>``.
    """

    train: TensorDictDataset
    val: TensorDictDataset
    test: TensorDictDataset
    info: dict[str, Any]
    source: str
    extra_test: dict[str, TensorDictDataset] = field(default_factory=dict)
