"""The ``stream`` interface: a world that evolves step by step, told about by instructions and asked about by
queries (Moskvichev & Liu 2021, "Updater-Extractor Architecture for Inductive World State Representations",
§3.1 and Algorithm 1).

A stream task samples a batch of worlds and advances them one step at a time. At step t (t = 1, 2, ...) it
hands the model a :class:`StreamStep`: a set of *instructions* (facts about the world at t, each a tuple of
categorical fields, e.g. (x, y, value) for "cell (x, y) is alive") and a set of *queries* (e.g. (x, y):
"is cell (x, y) alive?") with their answers. Sets are padded to a fixed size per task; the masks mark the
real entries. Every query belongs to a named *group* (``info["query_groups"]``: "repeat"/"recall",
"observed"/"unobserved"), so accuracy can be read per kind of question.

A stream model keeps a world state ``w_t`` (any tensor or tuple of tensors) and offers

    initial_state(batch_size) -> w_0
    update(w_{t-1}, step) -> w_t          the Updater f_delta: reads step.instructions / instruction_mask
    extract(w_t, step) -> logits          the Extractor f_epsilon: reads step.queries / query_mask,
                                          logits [B, Q, num_answers]

and the stepwise runner (:mod:`harness.runners.stepwise`) trains it by Algorithm 1: stop-gradient on
w_{t-1}, a loss on every step's queries, an optimiser step every ``update_freq`` steps.

A stream task's ``info`` names the sizes the model needs:

=================== =========================================================================================
instruction_fields  list[int]: the number of values of each field of an instruction (its last field is
                    usually the value told, e.g. [8, 8, 2] for (x, y, alive))
query_fields        list[int]: the same for a query ([8, 8] for (x, y))
num_answers         int: the classes of an answer
query_groups        list[str]: the names of the query groups (group ids index this list)
max_instructions    int: I, the padded size of an instruction set
max_queries         int: Q, the padded size of a query set
=================== =========================================================================================

A stream task object (built from the run's config like every task) has ``info`` and

    reset(batch_size, generator, split) -> worlds        a new batch of worlds (opaque to the runner)
    step(worlds, t, generator, split) -> (worlds, StreamStep)
                                                         the worlds at step t and what is told and asked
    describe_data() -> {"source": ..., "fingerprint": ..., "files": {...}}   (as every task)

``split`` is "train", "val" or "test": a task may draw its training and held-out worlds from different
material (World of Numbers: disjoint MNIST images) and adds training-only noise only when it is "train"
(the reminder noise of Experiment 0). Optionally, for pictures of a world beside the model's belief (World of
Numbers' reconstructions), ``full_step(worlds)`` gives a step whose queries ask about everything in the world
(every pixel or cell, with answers) and ``render(values [B, Q_full]) -> uint8 [B, H, W]`` draws answers or
probabilities as images.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Protocol

import torch

from harness.errors import UserError

STREAM_INFO_KEYS = ("instruction_fields", "query_fields", "num_answers", "query_groups", "max_instructions",
                    "max_queries")
SPLITS = ("train", "val", "test")


@dataclass
class StreamStep:
    """What a batch of worlds tells and asks at one step."""

    instructions: torch.Tensor  # int64 [B, I, F] field values of each instruction (padding rows: any valid value)
    instruction_mask: torch.Tensor  # bool [B, I] True for real instructions (a row may have none)
    queries: torch.Tensor  # int64 [B, Q, G] field values of each query
    query_mask: torch.Tensor  # bool [B, Q] True for real queries
    answers: torch.Tensor  # int64 [B, Q] the answer to each query (what the loss is taken against)
    query_group: torch.Tensor  # int64 [B, Q] index into info["query_groups"]

    def to(self, device: torch.device | str) -> StreamStep:
        return StreamStep(**{f.name: getattr(self, f.name).to(device) for f in fields(self)})


class StreamTask(Protocol):
    info: dict[str, Any]

    def reset(self, batch_size: int, generator: torch.Generator, split: str) -> Any: ...

    def step(self, worlds: Any, t: int, generator: torch.Generator, split: str) -> tuple[Any, StreamStep]: ...


class StreamModel(Protocol):
    def initial_state(self, batch_size: int) -> Any: ...

    def update(self, state: Any, step: StreamStep) -> Any: ...

    def extract(self, state: Any, step: StreamStep) -> torch.Tensor: ...


def detach_state(state: Any) -> Any:
    """STOP_GRADIENT(w) of Algorithm 1, for a tensor or a (nested) tuple or list of tensors."""
    if isinstance(state, torch.Tensor):
        return state.detach()
    if isinstance(state, (tuple, list)):
        return type(state)(detach_state(part) for part in state)
    raise TypeError(f"a world state must be a tensor or a tuple of tensors, not {type(state).__name__}")


def check_stream_info(task: str, info: dict[str, Any]) -> None:
    """A stream task's ``info`` has every key a stream model reads (a UserError naming the first missing one)."""
    missing = [key for key in STREAM_INFO_KEYS if key not in info]
    if missing:
        raise UserError(f"task {task}: its info lacks {', '.join(missing)} (the stream contract, harness/streams.py)")


def check_stream_step(task: str, step: StreamStep, info: dict[str, Any], batch_size: int) -> None:
    """One step's tensors against the contract: dtypes, shapes and value ranges (a UserError on the first
    mismatch, naming the task and the tensor)."""
    sizes = {"B": batch_size, "I": int(info["max_instructions"]), "Q": int(info["max_queries"]),
             "F": len(info["instruction_fields"]), "G": len(info["query_fields"])}
    expected = {"instructions": ("int64", "BIF"), "instruction_mask": ("bool", "BI"), "queries": ("int64", "BQG"),
                "query_mask": ("bool", "BQ"), "answers": ("int64", "BQ"), "query_group": ("int64", "BQ")}
    for name, (dtype, dims) in expected.items():
        tensor = getattr(step, name)
        want = tuple(sizes[d] for d in dims)
        got_dtype = str(tensor.dtype).removeprefix("torch.")
        if got_dtype != dtype or tuple(tensor.shape) != want:
            raise UserError(f"task {task}: step tensor '{name}' is {got_dtype} {list(tensor.shape)}; the stream "
                            f"contract needs {dtype} {list(want)} ({', '.join(dims)})")
    for name, bounds in (("instructions", info["instruction_fields"]), ("queries", info["query_fields"])):
        values = getattr(step, name)  # [B, N, fields]
        limit = torch.tensor([int(b) for b in bounds])
        if values.numel() and (bool((values < 0).any()) or bool((values >= limit).any())):
            raise UserError(f"task {task}: a step's {name} have field values outside {list(bounds)}")
    real_answers = step.answers[step.query_mask]
    if real_answers.numel() and (int(real_answers.min()) < 0 or int(real_answers.max()) >= int(info["num_answers"])):
        raise UserError(f"task {task}: a step's answers are outside 0..{int(info['num_answers']) - 1}")
    groups = step.query_group[step.query_mask]
    if groups.numel() and (int(groups.min()) < 0 or int(groups.max()) >= len(info["query_groups"])):
        raise UserError(f"task {task}: a step's query groups are outside 0..{len(info['query_groups']) - 1}")
