"""The batch contract of every interface: what a task hands a model, tensor by tensor.

A supervised task's splits hold one tensor per name below (plus ``target``, the class index, int64 [N]);
a model built for the interface receives exactly these tensors as keyword arguments, batched
(``model(**batch) -> logits [B, num_classes]``). An RL task's observation space has the interface's
observation shape. Dimensions are named after the ``info`` keys that give their size; ``*`` is any size.

========== ================================================================================================
interface  tensors (one example; the batch adds a leading B)
========== ================================================================================================
image      ``image`` uint8 [H, W, C] (``info["image_shape"]``), ``task_id`` int64 [] (which task of a
           multi-task set)
story      ``story`` int64 [T, W] word ids, 0 = padding (T = ``max_story_len``, W = ``max_sent_len``),
           ``story_len`` int64 [] real statements, ``query`` int64 [W] the question's word ids
sequence   ``tokens`` int64 [L] token ids, 0 = padding, ``length`` int64 [] real tokens
stream     not a batch of examples but worlds advanced step by step: each step's instructions, queries and
           answers (:class:`harness.streams.StreamStep`; the contract and its checks are in harness/streams.py)
env        observation uint8 or float [H, W, 3]: a grid as an image (BoxWorld); checked by the agent
state_env  observation float [D]: a flat state vector (CartPole); checked by the agent
========== ================================================================================================

A supervised task's ``info`` gives the keys of :data:`INFO_KEYS` for its interface (what the readers of
models/adapters.yaml build from). :func:`check_task_data` runs when a run's data is built (before its directory
exists); a mismatch (a tensor, the target, a missing ``info`` key) is a one-line error naming the task and what
the contract expects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.data import TARGET, TaskData
from harness.errors import UserError


@dataclass(frozen=True)
class TensorContract:
    """One tensor of an interface: its dtypes and its per-example shape (names of ``info`` keys, ints or ``*``)."""

    dtypes: tuple[str, ...]
    shape: tuple[str | int, ...]
    optional: bool = False

    def describe(self) -> str:
        return f"{'/'.join(self.dtypes)} [{', '.join(map(str, self.shape))}]"


BATCH_CONTRACTS: dict[str, dict[str, TensorContract]] = {
    "image": {"image": TensorContract(("uint8",), ("image_shape",)),
              "task_id": TensorContract(("int64",), ())},
    "story": {"story": TensorContract(("int64",), ("max_story_len", "max_sent_len")),
              "story_len": TensorContract(("int64",), ()),
              "query": TensorContract(("int64",), ("max_sent_len",))},
    "sequence": {"tokens": TensorContract(("int64",), ("max_len",)),
                 "length": TensorContract(("int64",), ())},
}


# The ``info`` keys a supervised task of each interface gives: the sizes its tensors are named after, and what the
# readers of models/adapters.yaml build from (a task that left one out would run with some models only).
INFO_KEYS: dict[str, tuple[str, ...]] = {
    "image": ("image_shape", "num_classes"),
    "story": ("max_story_len", "max_sent_len", "vocab_size", "num_classes"),
    "sequence": ("max_len", "vocab_size", "num_classes"),
}


def _expected_shape(contract: TensorContract, info: dict[str, Any]) -> list[int | None]:
    """Per-example sizes (None: any); ``image_shape`` stands for the three dimensions it holds."""
    sizes: list[int | None] = []
    for dim in contract.shape:
        if dim == "*":
            sizes.append(None)
        elif isinstance(dim, int):
            sizes.append(dim)
        elif dim == "image_shape":
            sizes.extend(int(v) for v in info[dim])
        else:
            sizes.append(int(info[dim]) if dim in info else None)
    return sizes


def check_split(task: str, interface: str, split_name: str, tensors: dict[str, Any], info: dict[str, Any]) -> None:
    """One split of a supervised task against its interface's contract (a UserError on the first mismatch)."""
    contract = BATCH_CONTRACTS.get(interface)
    if contract is None:
        raise UserError(f"task {task}: interface '{interface}' has no batch contract (harness/interfaces.py)")
    extra = sorted(set(tensors) - set(contract) - {TARGET})
    if extra:
        raise UserError(f"task {task}, {split_name} split: tensor(s) {', '.join(extra)} are not in the "
                        f"'{interface}' contract ({', '.join(contract)}, target)")
    for name, expected in contract.items():
        if name not in tensors and not expected.optional:
            raise UserError(f"task {task}, {split_name} split: no '{name}' tensor; the '{interface}' contract "
                            f"needs {name} {expected.describe()}")
    missing = [key for key in INFO_KEYS.get(interface, ()) if key not in info]
    if missing:
        raise UserError(f"task {task}: its info has no {', '.join(missing)} (it gives "
                        f"{', '.join(map(str, info)) or 'none'}); the info of a '{interface}' task gives "
                        f"{', '.join(INFO_KEYS[interface])} (harness/interfaces.py)")
    target = tensors.get(TARGET)
    if target is not None and (str(target.dtype) != "torch.int64" or target.dim() != 1):
        got = f"{str(target.dtype).removeprefix('torch.')} {list(target.shape[1:])}"
        raise UserError(f"task {task}, {split_name} split: '{TARGET}' is {got} per example; the target of a "
                        f"supervised task is int64 [] per example (int64 [N], the class index)")
    for name, expected in contract.items():
        if name not in tensors:  # an optional one (every other is there: checked above)
            continue
        tensor = tensors[name]
        dtype = str(tensor.dtype).removeprefix("torch.")
        sizes = _expected_shape(expected, info)
        shape = tuple(tensor.shape[1:])  # without the example dimension
        if dtype not in expected.dtypes or len(shape) != len(sizes) or any(
                want is not None and got != want for got, want in zip(shape, sizes, strict=False)):
            wanted = ", ".join("*" if s is None else str(s) for s in sizes)
            raise UserError(f"task {task}, {split_name} split: '{name}' is {dtype} {list(shape)} per example; the "
                            f"'{interface}' contract needs {'/'.join(expected.dtypes)} [{wanted}] "
                            f"({expected.describe()})")


def named_splits(data: Any) -> dict[str, Any]:
    """A ``harness.data.TaskData``'s splits by name: train, val, test and each extra ``test_<name>``."""
    return {"train": data.train, "val": data.val, "test": data.test,
            **{f"test_{name}": split for name, split in data.extra_test.items()}}


def check_task_data(task: str, interface: str, data: Any) -> None:
    """Every split of a supervised task's data (``harness.data.TaskData``) against the interface's contract, and
    none of them empty: a run with no training example would "complete" after 0 steps, and one with no validation
    or test example would report no figure or a made-up one."""
    if not isinstance(data, TaskData):
        raise UserError(f"task {task}: load() returned {type(data).__name__}; it returns harness.data.TaskData(train=, "
                        "val=, test=, info=, source=)")
    if not isinstance(data.info, dict):
        raise UserError(f"task {task}: load() gave info as {type(data.info).__name__}; info is a dict of what the "
                        f"readers look up ({', '.join(INFO_KEYS.get(interface, ())) or 'harness/interfaces.py'})")
    splits = named_splits(data)
    empty = [name for name, split in splits.items() if len(split) == 0]
    if empty:
        sizes = ", ".join(f"{name} {len(split):,}" for name, split in splits.items())
        raise UserError(f"task {task}: the {' and '.join(empty)} split{'s' if len(empty) > 1 else ''} "
                        f"hold{'' if len(empty) > 1 else 's'} no examples (examples per split: {sizes}); give the "
                        "task more data (a larger file, or more generated examples)")
    for split_name, split in splits.items():
        check_split(task, interface, split_name, split.tensors, data.info)

