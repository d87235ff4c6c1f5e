"""Rules of the stepwise runner (Moskvichev & Liu 2021, §6 Algorithm 1, §7.1 Experiment 0 and Appendix B) that
tests/test_stepwise_runner.py leaves open, on the same toy stream:

* full BPTT backpropagates the mean of the T step losses through the whole trajectory, one optimiser step;
* ``optim.grad_clip`` clips the accumulated gradient by its global 2-norm before each optimiser step;
* the curriculum (Appendix B) reads the accuracy at the *last* step of each trajectory, of the monitored query group
  (or of every group), counts a cycle at the threshold as good enough, and a resumed run keeps its streak;
* the learning-rate policy of cycle i is the policy at i (warm-up cycles 0..warmup_steps inclusive);
* ``best.ckpt`` moves only when ``val/acc`` strictly improves;
* evaluation (harness/runners/stepwise_eval.py): the loss is the mean over real (unpadded) queries, ``final/`` is the
  last step's accuracy, and the long-horizon test (§7.2, "tested on sequences of lengths up to 10000") rolls test
  worlds, updating the world state at every step, with an accuracy at every horizon.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from harness.runners import stepwise
from harness.runs import Run
from harness.streams import StreamStep
from tests.test_stepwise_runner import (
    RememberTheBit,
    TinyRecurrent,
    Tracker,
    config,
    curve_without_timing,
    killed_at_five_then_resumed,
)


class Capture(torch.optim.SGD):
    """Records the gradients it is asked to step with, and does not step."""

    def __init__(self, params: Any) -> None:
        super().__init__(params, lr=0.0)
        self.grads: list[list[torch.Tensor]] = []

    def step(self, closure: Any = None) -> Any:
        self.grads.append([p.grad.clone() for group in self.param_groups for p in group["params"]])
        return None


def test_full_bptt_backpropagates_the_mean_step_loss_through_the_trajectory() -> None:
    torch.manual_seed(0)
    model, task = TinyRecurrent(), RememberTheBit()
    optimizer = Capture(model.parameters())
    stepwise.train_cycle(model, task, optimizer, config(bptt=True), 5, torch.Generator().manual_seed(3), 0)
    assert len(optimizer.grads) == 1
    generator = torch.Generator().manual_seed(3)
    worlds, state, losses = task.reset(16, generator, "train"), model.initial_state(16), []
    for t in range(1, 6):
        worlds, step = task.step(worlds, t, generator, "train")
        state = model.update(state, step)  # no stop-gradient
        logits = model.extract(state, step)
        losses.append(nn.functional.cross_entropy(logits.flatten(0, 1), step.answers.flatten()))
    model.zero_grad()
    (sum(losses) / 5).backward()
    for captured, param in zip(optimizer.grads[0], model.parameters(), strict=True):
        torch.testing.assert_close(captured, param.grad)


def test_grad_clip_scales_the_accumulated_gradient_to_its_global_norm() -> None:
    torch.manual_seed(0)
    model = TinyRecurrent()
    unclipped = Capture(model.parameters())
    stepwise.train_cycle(model, RememberTheBit(), unclipped, config(update_freq=5), 5,
                         torch.Generator().manual_seed(3), 0)
    grads = unclipped.grads[0]
    norm = float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])))
    limit = norm / 4
    cfg = config(update_freq=5)
    cfg.optim.grad_clip = limit
    twin = copy.deepcopy(model)
    clipped = Capture(twin.parameters())
    stepwise.train_cycle(twin, RememberTheBit(), clipped, cfg, 5, torch.Generator().manual_seed(3), 0)
    for got, full in zip(clipped.grads[0], grads, strict=True):
        torch.testing.assert_close(got, full / 4, rtol=1e-4, atol=1e-8)  # clip_grad_norm_ adds 1e-6 to the norm


def test_the_curriculum_counts_a_cycle_at_the_threshold() -> None:
    spec = config(steps=3, curriculum={"enabled": True, "start": 1, "threshold": 0.75, "patience": 2}).stepwise
    curriculum = stepwise.Curriculum.from_config(spec)
    assert [curriculum.observe(0.75), curriculum.observe(0.75)] == [False, True]
    assert curriculum.length == 2
    assert curriculum.observe(0.75) is False  # the streak starts again after T grows
    spec.curriculum.start = 2
    assert stepwise.Curriculum.from_config(spec).length == 2  # trajectories start at curriculum.start


class TwoGroups:
    """Each step asks a ``recall`` query (answer 1) and an ``other`` query (answer 0)."""

    info = {"instruction_fields": [2], "query_fields": [1], "num_answers": 2, "query_groups": ["recall", "other"],
            "max_instructions": 1, "max_queries": 2}

    def reset(self, batch_size: int, generator: torch.Generator, split: str) -> torch.Tensor:
        return torch.zeros(batch_size, dtype=torch.long)

    def step(self, worlds: torch.Tensor, t: int, generator: torch.Generator, split: str) -> tuple[Any, StreamStep]:
        batch = len(worlds)
        return worlds, StreamStep(instructions=torch.zeros(batch, 1, 1, dtype=torch.long),
                                  instruction_mask=torch.ones(batch, 1, dtype=torch.bool),
                                  queries=torch.zeros(batch, 2, 1, dtype=torch.long),
                                  query_mask=torch.ones(batch, 2, dtype=torch.bool),
                                  answers=torch.tensor([1, 0]).expand(batch, 2).clone(),
                                  query_group=torch.tensor([0, 1]).expand(batch, 2).clone())


class Scripted(nn.Module):
    """Answers the ``other`` query right at every step, the ``recall`` query right at every step but ``wrong_at``."""

    def __init__(self, wrong_at: int) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(()))
        self.wrong_at = wrong_at

    def initial_state(self, batch_size: int) -> torch.Tensor:
        return torch.zeros(batch_size)

    def update(self, state: torch.Tensor, step: StreamStep) -> torch.Tensor:
        return state.detach() + 1  # the step number

    def extract(self, state: torch.Tensor, step: StreamStep) -> torch.Tensor:
        t = int(state[0])
        recall = [0.0, 1.0] if t != self.wrong_at else [1.0, 0.0]
        logits = torch.tensor([recall, [1.0, 0.0]]).expand(len(state), 2, 2)
        return logits * self.scale


@pytest.mark.parametrize(("monitor_group", "expected"), [(0, 0.0), (1, 1.0), (None, 0.5)])
def test_the_curriculum_monitor_is_the_last_steps_accuracy(monitor_group: int | None, expected: float) -> None:
    """Recall is right at steps 1-3 and wrong at step 4 (the last): the monitor is the last step's accuracy of the
    group (0, 1), or of all queries (1/2), not an average over the trajectory."""
    model = Scripted(wrong_at=4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    numbers = stepwise.train_cycle(model, TwoGroups(), optimizer, config(batch_size=4), 4,
                                   torch.Generator().manual_seed(0), monitor_group)
    assert numbers["monitor"] == expected
    assert numbers["train/recall/acc"] == 0.75


def _lr_column(run: Path) -> list[float]:
    return [float(row["lr"]) for row in curve_without_timing(run) if row.get("lr")]


def test_warm_up_covers_cycles_zero_to_warmup_steps(tmp_path: Path) -> None:
    cfg = config(iterations=4, eval_every=4)
    cfg.optim.update({"name": "sgd", "lr": 0.1, "warmup_steps": 1, "warmup_factor": 0.5})
    torch.manual_seed(0)
    stepwise.train_stepwise(cfg, RememberTheBit(), TinyRecurrent(), Run(tmp_path / "run"), Tracker())
    assert _lr_column(tmp_path / "run") == [0.05, 0.05, 0.1, 0.1]


def test_a_resumed_curriculum_keeps_its_streak(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Patience 2, every cycle good enough: T grows at cycles 2, 4, 6. Killed during cycle 5, after the checkpoint of
    cycle 3 (streak 1), the resumed run must grow at cycle 4 as the whole run did."""
    cfg = config(curriculum={"enabled": True, "start": 1, "threshold": 0.0, "patience": 2})
    torch.manual_seed(0)
    stepwise.train_stepwise(cfg, RememberTheBit(), TinyRecurrent(), Run(tmp_path / "whole"), Tracker())
    lengths = [float(row["trajectory_length"]) for row in curve_without_timing(tmp_path / "whole")
               if row.get("trajectory_length")]
    assert lengths == [1.0, 2.0, 2.0, 3.0, 3.0, 4.0]
    killed_at_five_then_resumed(cfg, tmp_path / "split", monkeypatch)
    assert curve_without_timing(tmp_path / "split") == curve_without_timing(tmp_path / "whole")


def test_best_checkpoint_moves_only_on_a_strict_improvement(tmp_path: Path) -> None:
    """With lr 0 every validation gives the same val/acc: the best stays at the first (cycle 3)."""
    cfg = config()
    cfg.optim.update({"name": "sgd", "lr": 0.0})
    torch.manual_seed(0)
    summary = stepwise.train_stepwise(cfg, RememberTheBit(), TinyRecurrent(), Run(tmp_path / "run"), Tracker())
    assert summary["best"]["step"] == 3


# harness/runners/stepwise_eval.py ------------------------------------------------------------------------------

def test_step_loss_is_the_mean_over_real_queries_only() -> None:
    """One world, two query slots, the second padding: the loss is the first query's cross-entropy, and the padding
    is never counted correct."""
    from harness.runners.stepwise_eval import step_loss

    step = StreamStep(instructions=torch.zeros(1, 1, 1, dtype=torch.long),
                      instruction_mask=torch.ones(1, 1, dtype=torch.bool),
                      queries=torch.zeros(1, 2, 1, dtype=torch.long),
                      query_mask=torch.tensor([[True, False]]), answers=torch.tensor([[0, 1]]),
                      query_group=torch.zeros(1, 2, dtype=torch.long))
    logits = torch.tensor([[[2.0, 0.0], [0.0, 5.0]]])
    loss, correct = step_loss(logits, step)
    assert float(loss) == pytest.approx(float(torch.log1p(torch.exp(torch.tensor(-2.0)))))
    assert correct.tolist() == [[True, False]]


def test_evaluate_reports_the_last_steps_accuracy_as_final() -> None:
    from harness.runners.stepwise_eval import evaluate

    metrics = evaluate(Scripted(wrong_at=3), TwoGroups(), "val", 4, 3, seed=0)
    assert metrics["final/recall/acc"] == 0.0 and metrics["final/other/acc"] == 1.0 and metrics["final/acc"] == 0.5
    assert metrics["recall/acc"] == pytest.approx(2 / 3)


class Counting(Scripted):
    """Counts its updates; its world state is the number of steps it has seen."""

    def __init__(self) -> None:
        super().__init__(wrong_at=-1)
        self.updates = 0

    def update(self, state: torch.Tensor, step: StreamStep) -> torch.Tensor:
        self.updates += 1
        return super().update(state, step)


class SplitRecorder(TwoGroups):
    def __init__(self) -> None:
        self.splits: set[str] = set()

    def reset(self, batch_size: int, generator: torch.Generator, split: str) -> torch.Tensor:
        self.splits.add(split)
        return super().reset(batch_size, generator, split)

    def step(self, worlds: torch.Tensor, t: int, generator: torch.Generator, split: str) -> tuple[Any, StreamStep]:
        self.splits.add(split)
        return super().step(worlds, t, generator, split)


def test_long_rollout_updates_every_step_on_test_worlds_and_reports_every_horizon() -> None:
    """§7.2's long-horizon test: held-out (test) worlds, the world state updated at every step although queries are
    asked only on a grid, and an accuracy at each horizon, also one off the logarithmic grid (137)."""
    from harness.runners.stepwise_eval import long_rollout

    model, task, seen = Counting(), SplitRecorder(), []
    rollout = long_rollout(model, task, [137, 150], 2, on_step=lambda t, worlds, state: seen.append((t, int(state[0]))))
    assert model.updates == 150 and task.splits == {"test"}
    assert all(t == steps for t, steps in seen)  # at each asked step the state has seen every step so far
    assert rollout.metrics["rollout/step_137/acc"] == 1.0 and rollout.metrics["rollout/step_150/acc"] == 1.0
    assert rollout.rows[-1]["step"] == 150.0
