"""Evaluation of stream models: accuracy per step and per query group, long-horizon rollouts, pictures.

A rollout runs a batch of held-out worlds forward, updating the model's world state at every step and asking
the step's queries (no gradients). Its numbers, for a trajectory of T steps:

    acc                 correct / real queries, over every step                (val/acc, test/acc)
    <group>/acc         the same within one query group ("recall", "unobserved", ...)
    final/acc           at step T only (Experiment 0's final RECALL: final/recall/acc)
    loss                mean cross-entropy over every real query

The long-horizon test (Moskvichev & Liu 2021, §7.2: "trained on sequences of length 5 and tested on sequences
of lengths up to 10000") rolls ``stepwise.horizon_batch`` test worlds for the longest of ``stepwise.horizons``
steps. The world state is updated at every step, but the queries are asked only at the steps of a grid (every
step up to 100, then about 40 steps a decade, always each horizon), since asking is the costly part; the curve
(step, acc, per-group acc) goes to ``rollout.csv`` and the accuracy at each horizon into the run's metrics as
``rollout/step_<h>/acc``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from harness.streams import StreamStep

# Held-out worlds do not move with the run's seed: every run of a task is tested on the same worlds.
VAL_SEED, TEST_SEED, HORIZON_SEED = 1_000_003, 2_000_003, 3_000_017


def step_loss(logits: torch.Tensor, step: StreamStep) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean cross-entropy over the real queries, correct [B, Q] bool) of one step; logits [B, Q, A]."""
    mask = step.query_mask  # [B, Q]
    losses = F.cross_entropy(logits.flatten(0, 1), step.answers.flatten(), reduction="none").view_as(mask)
    loss = (losses * mask).sum() / mask.sum().clamp(min=1)
    correct = (logits.argmax(dim=-1) == step.answers) & mask  # [B, Q]
    return loss, correct


@dataclass
class Tally:
    """Correct and asked queries, overall and per group, at every step or at the last one."""

    groups: list[str]
    correct: torch.Tensor = field(init=False)  # [G] float64
    asked: torch.Tensor = field(init=False)  # [G]
    loss_sum: float = 0.0
    loss_steps: int = 0

    def __post_init__(self) -> None:
        self.correct = torch.zeros(len(self.groups), dtype=torch.float64)
        self.asked = torch.zeros(len(self.groups), dtype=torch.float64)

    def add(self, step: StreamStep, correct: torch.Tensor, loss: float | None = None) -> None:
        groups = step.query_group[step.query_mask]  # [n]
        self.correct += torch.bincount(groups, weights=correct[step.query_mask].double(), minlength=len(self.groups))
        self.asked += torch.bincount(groups, minlength=len(self.groups)).double()
        if loss is not None:
            self.loss_sum += loss
            self.loss_steps += 1

    def metrics(self, prefix: str) -> dict[str, float]:
        """``{prefix}acc`` and ``{prefix}<group>/acc`` for every group that was asked (and ``{prefix}loss``)."""
        out: dict[str, float] = {}
        if float(self.asked.sum()) > 0:
            out[f"{prefix}acc"] = float(self.correct.sum() / self.asked.sum())
        for index, name in enumerate(self.groups):
            if float(self.asked[index]) > 0:
                out[f"{prefix}{name}/acc"] = float(self.correct[index] / self.asked[index])
        if self.loss_steps:
            out[f"{prefix}loss"] = self.loss_sum / self.loss_steps
        return out


@contextmanager
def eval_mode(model: Any) -> Iterator[None]:
    """The model in eval mode inside the block, and back in the mode it was in afterwards (an error included)."""
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


@torch.no_grad()
def evaluate(model: Any, task: Any, split: str, batch_size: int, steps: int, seed: int) -> dict[str, float]:
    """Roll ``batch_size`` worlds of ``split`` for ``steps`` steps; ``acc``, ``loss``, per-group and ``final/``
    accuracies (keys without the split's prefix)."""
    generator = torch.Generator().manual_seed(seed)
    groups = list(task.info["query_groups"])
    overall, final = Tally(groups), Tally(groups)
    with eval_mode(model):
        worlds = task.reset(batch_size, generator, split)
        state = model.initial_state(batch_size)
        for t in range(1, steps + 1):
            worlds, step = task.step(worlds, t, generator, split)
            state = model.update(state, step)
            loss, correct = step_loss(model.extract(state, step), step)
            overall.add(step, correct, float(loss))
            if t == steps:
                final.add(step, correct)
    return {**overall.metrics(""), **final.metrics("final/")}


def query_grid(longest: int, horizons: Iterable[int], dense_until: int = 100, per_decade: int = 40) -> list[int]:
    """The steps at which a long rollout asks its queries: every step up to ``dense_until``, then
    ``per_decade`` log-spaced steps a decade, and every horizon; sorted, within 1..longest."""
    steps = set(range(1, min(dense_until, longest) + 1))
    if longest > dense_until:
        decades = math.log10(longest / dense_until)
        count = max(int(per_decade * decades), 1)
        steps.update(int(round(dense_until * 10 ** (decades * i / count))) for i in range(count + 1))
    steps.update(h for h in horizons if h <= longest)
    return sorted(s for s in steps if 1 <= s <= longest)


@dataclass
class Rollout:
    rows: list[dict[str, float]]  # one per asked step: step, acc, <group>/acc
    metrics: dict[str, float]  # rollout/step_<h>/acc (and per group) at every horizon
    steps_per_s: float  # world-steps (updates) per second, queries included
    seconds: float


@torch.no_grad()
def long_rollout(model: Any, task: Any, horizons: list[int], batch_size: int,
                 on_step: Callable[[int, Any, Any], None] | None = None) -> Rollout:
    """Roll ``batch_size`` test worlds to the longest horizon; accuracy at the steps of :func:`query_grid`.
    ``on_step(t, worlds, state)`` is called at every asked step (pictures). The model is in eval mode for the
    rollout and back in the mode it was in afterwards."""
    with eval_mode(model):
        return _roll(model, task, horizons, batch_size, on_step)


def _roll(model: Any, task: Any, horizons: list[int], batch_size: int,
          on_step: Callable[[int, Any, Any], None] | None) -> Rollout:
    longest = max(horizons)
    asked = set(query_grid(longest, horizons))
    groups = list(task.info["query_groups"])
    generator = torch.Generator().manual_seed(HORIZON_SEED)
    worlds = task.reset(batch_size, generator, "test")
    state = model.initial_state(batch_size)
    rows: list[dict[str, float]] = []
    metrics: dict[str, float] = {}
    started = time.perf_counter()
    for t in range(1, longest + 1):
        worlds, step = task.step(worlds, t, generator, "test")
        state = model.update(state, step)
        if t not in asked:
            continue
        _, correct = step_loss(model.extract(state, step), step)
        tally = Tally(groups)
        tally.add(step, correct)
        row = tally.metrics("")
        rows.append({"step": float(t), **row})
        if t in horizons:
            metrics.update({f"rollout/step_{t}/{key}": value for key, value in row.items()})
        if on_step is not None:
            on_step(t, worlds, state)
    seconds = time.perf_counter() - started
    return Rollout(rows=rows, metrics=metrics, steps_per_s=longest * batch_size / max(seconds, 1e-9), seconds=seconds)


def write_rollout_csv(path: Path, rows: list[dict[str, float]]) -> None:
    """``rollout.csv``: step, then accuracy columns (a group never asked at a step leaves its cell empty)."""
    from harness.runs import atomic_write_text

    columns = ["step"]
    for row in rows:
        columns.extend(key for key in row if key not in columns)
    lines = [",".join(columns)]
    for row in rows:
        lines.append(",".join("" if key not in row else (str(int(row[key])) if key == "step" else f"{row[key]:.6g}")
                              for key in columns))
    atomic_write_text(path, "\n".join(lines) + "\n")


def picture_steps(longest: int) -> list[int]:
    """The steps at which pictures are saved: 1, 2, 5, 10, 50, then each power of ten, up to ``longest``."""
    return [s for s in (1, 2, 5, 10, 50, 100, 1000, 10000, 100000) if s <= longest]


class PictureSaver:
    """For tasks with ``full_step`` and ``render``: the true world beside the model's belief (the probability of
    each answer 1, e.g. a pixel being on), for the first ``count`` worlds, saved as ``pictures/step_<t>.png``
    (truth above, belief below)."""

    def __init__(self, model: Any, task: Any, folder: Path, count: int, steps: list[int]) -> None:
        self.model, self.task, self.folder, self.count, self.steps = model, task, folder, count, set(steps)
        self.saved: list[str] = []

    @staticmethod
    def supported(task: Any) -> bool:
        return hasattr(task, "full_step") and hasattr(task, "render")

    def __call__(self, t: int, worlds: Any, state: Any) -> None:
        if t not in self.steps or self.count <= 0:
            return
        import numpy as np

        step = self.task.full_step(worlds)
        logits = self.model.extract(state, step)  # [B, Q, A]
        belief = logits.softmax(dim=-1)[..., -1]  # [B, Q] probability of the last answer class (on / alive)
        truth = self.task.render(step.answers[: self.count])  # [n, H, W] uint8
        guess = self.task.render(belief[: self.count])
        tiles = [np.concatenate([np.asarray(a), np.asarray(b)], axis=0) for a, b in zip(truth, guess, strict=True)]
        gap = np.full((tiles[0].shape[0], 2), 128, dtype=np.uint8)
        sheet = np.concatenate([part for tile in tiles for part in (tile, gap)][:-1], axis=1)
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"step_{t}.png"
        _write_png(path, sheet)
        self.saved.append(path.name)


def _write_png(path: Path, image: Any) -> None:
    """A grey uint8 image [H, W], enlarged 4x so 28-pixel digits can be seen, written atomically."""
    import io

    import numpy as np
    from matplotlib import image as mpimg

    from harness.runs import atomic_write

    big = np.kron(np.asarray(image, dtype=np.uint8), np.ones((4, 4), dtype=np.uint8))
    buffer = io.BytesIO()
    mpimg.imsave(buffer, big, cmap="gray", vmin=0, vmax=255, format="png")
    atomic_write(path, lambda handle: handle.write(buffer.getvalue()))
