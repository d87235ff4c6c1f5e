"""Rules of stream-model evaluation (harness/runners/stepwise_eval.py) that the other stepwise tests leave open:

* a tally pools its accuracy over every real query (not a mean of the groups' accuracies), names only the groups
  that were asked (a step may ask none of the last group), and its loss is the mean of the steps' losses;
* ``evaluate`` rolls worlds of the split it is given, drawn from its own seed; it and the long rollout run the model
  in eval mode and leave it in the mode they found it in (eval stays eval, training stays training, an error
  included);
* the query grid of a long rollout: every step up to ``dense_until``, then ``per_decade`` steps a decade rounded to
  the nearest step from ``dense_until`` to ``longest`` inclusive, at least one;
* the long-horizon rollout draws its worlds from its own fixed seed, asks (and calls ``on_step``) at exactly the
  steps of the grid, and counts world-steps per second over the whole batch;
* pictures are saved at 1, 2, 5, 10, 50 and each power of ten up to the longest step inclusive, only at those steps,
  the true world above the model's belief in the last answer class;
* a model behind :class:`~harness.runners.stepwise_device.OnDevice` loads a checkpoint strictly, as the bare model
  does: a checkpoint missing an entry is refused, not half loaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from harness.runners.stepwise_device import OnDevice
from harness.runners.stepwise_eval import (
    HORIZON_SEED,
    PictureSaver,
    Tally,
    evaluate,
    long_rollout,
    picture_steps,
    query_grid,
)
from harness.streams import StreamStep
from tests.test_stepwise_rules import Counting, Scripted, TwoGroups
from tests.test_stepwise_runner import TinyRecurrent


def two_group_step(mask: list[list[bool]]) -> StreamStep:
    """Queries of group 0 (recall) then group 1 (other) in each world; answers all 0."""
    query_mask = torch.tensor(mask)
    batch, queries = query_mask.shape
    return StreamStep(instructions=torch.zeros(batch, 1, 1, dtype=torch.long),
                      instruction_mask=torch.ones(batch, 1, dtype=torch.bool),
                      queries=torch.zeros(batch, queries, 1, dtype=torch.long), query_mask=query_mask,
                      answers=torch.zeros(batch, queries, dtype=torch.long),
                      query_group=torch.tensor([[0] * (queries - 1) + [1]] * batch))


def test_a_tally_names_only_the_groups_a_step_asked() -> None:
    """Two worlds ask their recall query and neither asks the last group ('other'): no other/acc, no error."""
    tally = Tally(["recall", "other"])
    tally.add(two_group_step([[True, False], [True, False]]), torch.tensor([[True, False], [False, False]]))
    assert tally.metrics("val/") == {"val/acc": 0.5, "val/recall/acc": 0.5}


def test_a_tally_pools_its_accuracy_over_queries_and_averages_its_loss_over_steps() -> None:
    """Three recall queries right and one other query wrong: 3/4 overall (the groups' mean would be 1/2); two steps
    with losses 0.5 and 1.0 give a loss of 0.75."""
    tally = Tally(["recall", "other"])
    step = two_group_step([[True, True, True, True]])
    tally.add(step, torch.tensor([[True, True, True, False]]), loss=0.5)
    assert tally.metrics("") == {"acc": 0.75, "recall/acc": 1.0, "other/acc": 0.0, "loss": 0.5}
    tally.add(two_group_step([[False, False, False, False]]), torch.zeros(1, 4, dtype=torch.bool), loss=1.0)
    assert tally.metrics("")["loss"] == 0.75


class SeedRecorder(TwoGroups):
    """Records the split and the seed of the generator it is handed."""

    def __init__(self) -> None:
        self.resets: list[tuple[str, int]] = []
        self.splits: set[str] = set()

    def reset(self, batch_size: int, generator: torch.Generator, split: str) -> torch.Tensor:
        self.resets.append((split, generator.initial_seed()))
        return super().reset(batch_size, generator, split)

    def step(self, worlds: torch.Tensor, t: int, generator: torch.Generator, split: str) -> tuple[Any, StreamStep]:
        self.splits.add(split)
        return super().step(worlds, t, generator, split)


def test_evaluate_rolls_the_split_it_is_given_and_leaves_an_eval_model_in_eval() -> None:
    model, task = Scripted(wrong_at=-1), SeedRecorder()
    model.eval()
    metrics = evaluate(model, task, "test", 2, 3, seed=17)
    assert task.resets == [("test", 17)] and task.splits == {"test"}
    assert not model.training and metrics["acc"] == 1.0


def test_the_grid_is_log_spaced_rounded_to_the_nearest_step_from_dense_until_to_longest() -> None:
    """Two decades (10 -> 1000) at two steps a decade: 10 * 10^(k/2), k = 0..4 = 10, 31.6, 100, 316.2, 1000."""
    assert query_grid(1000, [], dense_until=10, per_decade=2) == [*range(1, 11), 32, 100, 316, 1000]
    # less than a decade still gets one log step, the longest: 100 -> 200
    assert query_grid(200, [], dense_until=100, per_decade=1) == [*range(1, 101), 200]
    assert query_grid(200, [150, 300], dense_until=100, per_decade=1) == [*range(1, 101), 150, 200]


def test_the_long_rollout_asks_at_the_grid_from_its_own_seed_and_counts_world_steps() -> None:
    model, task, seen = Counting(), SeedRecorder(), []
    rollout = long_rollout(model, task, [120, 150], 3, on_step=lambda t, worlds, state: seen.append(t))
    grid = query_grid(150, [120, 150])
    assert seen == grid and [row["step"] for row in rollout.rows] == [float(t) for t in grid]
    assert task.resets == [("test", HORIZON_SEED)]
    assert rollout.steps_per_s * rollout.seconds == pytest.approx(150 * 3)  # 150 updates of 3 worlds


class ModeRecorder(Counting):
    """Records whether it was in training mode at each update."""

    def __init__(self) -> None:
        super().__init__()
        self.modes: list[bool] = []

    def update(self, state: torch.Tensor, step: StreamStep) -> torch.Tensor:
        self.modes.append(self.training)
        return super().update(state, step)


@pytest.mark.parametrize("roll", [
    lambda model, task: evaluate(model, task, "test", 2, 3, seed=17),
    lambda model, task: long_rollout(model, task, [3], 2),
], ids=["evaluate", "long_rollout"])
def test_evaluation_runs_in_eval_mode_and_hands_a_training_model_back_in_training(roll: Any) -> None:
    model = ModeRecorder()
    roll(model, SeedRecorder())
    assert model.modes == [False] * 3 and model.training


def test_a_failing_rollout_still_hands_the_model_back_in_its_mode() -> None:
    class Failing(ModeRecorder):
        def update(self, state: torch.Tensor, step: StreamStep) -> torch.Tensor:
            raise RuntimeError("broken update")

    model = Failing()
    with pytest.raises(RuntimeError, match="broken update"):
        long_rollout(model, SeedRecorder(), [3], 2)
    assert model.training


def test_pictures_are_taken_at_1_2_5_10_50_and_powers_of_ten_up_to_the_longest() -> None:
    assert picture_steps(1000) == [1, 2, 5, 10, 50, 100, 1000]
    assert picture_steps(50) == [1, 2, 5, 10, 50]
    assert picture_steps(49) == [1, 2, 5, 10]


class Pixels:
    """A 1x2 image of two cells; the true world is [off, on]."""

    def full_step(self, worlds: Any) -> StreamStep:
        return StreamStep(instructions=torch.zeros(1, 1, 1, dtype=torch.long),
                          instruction_mask=torch.ones(1, 1, dtype=torch.bool),
                          queries=torch.zeros(1, 2, 1, dtype=torch.long), query_mask=torch.ones(1, 2, dtype=torch.bool),
                          answers=torch.tensor([[0, 1]]), query_group=torch.zeros(1, 2, dtype=torch.long))

    def render(self, values: torch.Tensor) -> np.ndarray:
        return (values.float().view(-1, 1, 2) * 255).round().to(torch.uint8).numpy()  # [n, 1, 2]


class Believes(nn.Module):
    """Believes both cells are on (answer 1) with certainty."""

    def extract(self, state: Any, step: StreamStep) -> torch.Tensor:
        return torch.tensor([[[-50.0, 50.0], [-50.0, 50.0]]])


def test_a_picture_shows_the_truth_above_the_belief_in_the_last_class_at_its_steps_only(tmp_path: Path) -> None:
    from matplotlib import image as mpimg

    saver = PictureSaver(Believes(), Pixels(), tmp_path, count=1, steps=[2])
    for t in (1, 2, 3):
        saver(t, None, None)
    assert saver.saved == ["step_2.png"] and sorted(p.name for p in tmp_path.iterdir()) == ["step_2.png"]
    grey = mpimg.imread(tmp_path / "step_2.png")[..., 0]  # [2 * 4, 2 * 4] enlarged 4x
    assert grey.shape == (8, 8)
    assert np.allclose(grey[:4, :4], 0.0) and np.allclose(grey[:4, 4:], 1.0)  # truth: off, on
    assert np.allclose(grey[4:], 1.0)  # belief: both on


def test_a_wrapped_model_refuses_a_checkpoint_missing_an_entry() -> None:
    bare = TinyRecurrent()
    model = OnDevice(TinyRecurrent(), torch.device("cpu"))
    partial = {name: value for name, value in bare.state_dict().items() if name != "out.bias"}
    with pytest.raises(RuntimeError, match="out.bias"):
        model.load_state_dict(partial)
    model.load_state_dict(bare.state_dict())
    assert torch.equal(model.inner.out.weight, bare.out.weight)
