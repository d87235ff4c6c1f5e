"""Training rules of the supervised runner (harness/runners/supervised.py) on a scripted model whose validation
accuracy follows a given sequence, so each rule's outcome is known by hand:

* early stopping (Lightning's ``EarlyStopping``): stop once ``patience`` validations in a row failed to improve on the
  best one, in the monitored metric's direction (``train.monitor_mode``);
* ``best.ckpt`` is the best validation in that direction;
* ``train.stop_at``: stop as soon as the monitor reaches the target (>= for max, <= for min);
* ``train.max_steps``: stop after that optimiser step and validate there;
* ``optim.grad_clip``: the gradient is scaled to that global 2-norm (Lightning's ``gradient_clip_algorithm="norm"``,
  ``torch.nn.utils.clip_grad_norm_``), not clipped value by value;
* a non-finite training loss (NaN or infinite) stops the run as diverged.
"""

from __future__ import annotations

import csv
import math
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from omegaconf import OmegaConf
from torch import nn

from harness.data import TARGET, TaskData, TensorDictDataset
from harness.errors import DivergedError
from harness.runners.supervised import load_checkpoint, train_and_test
from harness.runs import Run

HARNESS = Path(__file__).resolve().parents[1] / "harness"
VAL_SIZE = 8  # accuracies in eighths: exact in float32, the type of the logged metrics


class Scripted(nn.Module):
    """Training: logits ``w`` for every example (class 0 is the target, so the gradient of the mean cross-entropy
    at w = 0 is (-1/2, 1/2)). Evaluation number i (one batch each): the examples x < 8 * accuracies[i] right."""

    def __init__(self, accuracies: list[float], train_loss: float | None = None, delay_s: float = 0.0) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.zeros(2))
        self.accuracies, self.evals, self.train_loss, self.delay_s = accuracies, 0, train_loss, delay_s

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            time.sleep(self.delay_s)
            logits = self.w.expand(len(x), 2)
            if self.train_loss is not None:
                return logits * self.train_loss
            return logits
        accuracy = self.accuracies[min(self.evals, len(self.accuracies) - 1)]
        self.evals += 1
        right = (x < round(VAL_SIZE * accuracy)).float().unsqueeze(-1)
        return right * torch.tensor([1.0, 0.0]) + (1 - right) * torch.tensor([0.0, 1.0]) + 0 * self.w


class Quiet:
    def log(self, row: dict[str, float], step: int) -> None:
        pass


def _split(size: int) -> TensorDictDataset:
    return TensorDictDataset({"x": torch.arange(size), TARGET: torch.zeros(size, dtype=torch.long)})


def _data() -> TaskData:
    return TaskData(train=_split(4), val=_split(VAL_SIZE), test=_split(VAL_SIZE), info={}, source="scripted")


def _cfg(**train: Any) -> Any:
    cfg = OmegaConf.merge(OmegaConf.load(HARNESS / "defaults.yaml"),
                          OmegaConf.load(HARNESS / "defaults_supervised.yaml"))
    cfg.optim.update({"name": "sgd", "lr": 1.0})
    cfg.train.update({"batch_size": 2, "eval_batch_size": 100, "max_epochs": 8, "threads": 1, **train})
    cfg.analysis.enabled = False
    return cfg


def _fit(tmp_path: Path, model: Scripted, cfg: Any) -> tuple[dict[str, Any], Run]:
    run = Run(tmp_path / "run")
    return train_and_test(cfg, _data(), model, run, Quiet()), run


def _best_epoch(run: Run) -> int:
    return int(load_checkpoint(run.best_checkpoint)["epoch"]) + 1


def test_early_stopping_counts_patience_from_the_best_validation(tmp_path: Path) -> None:
    """Best at epoch 2 (0.625); epochs 3 and 4 do not improve on it (an equal value is no improvement): with
    patience 2 the run stops after epoch 4 and never sees epoch 5's 0.875."""
    model = Scripted([0.5, 0.625, 0.625, 0.375, 0.875, 1.0])
    summary, run = _fit(tmp_path, model, _cfg(early_stop_patience=2))
    assert summary["epochs"] == 4
    assert _best_epoch(run) == 2


def test_min_mode_keeps_the_lowest_value_and_stops_on_it(tmp_path: Path) -> None:
    """Monitoring val/loss (min): its lowest value is the epoch with the most right answers; patience 1."""
    model = Scripted([0.25, 0.75, 0.5, 0.875, 1.0])
    summary, run = _fit(tmp_path, model, _cfg(monitor="val/loss", monitor_mode="min", early_stop_patience=1))
    assert summary["epochs"] == 3
    assert _best_epoch(run) == 2


def test_the_best_checkpoint_is_the_highest_accuracy_under_max(tmp_path: Path) -> None:
    summary, run = _fit(tmp_path, Scripted([0.25, 0.875, 0.125, 0.5]), _cfg(max_epochs=4))
    assert summary["epochs"] == 4 and _best_epoch(run) == 2


@pytest.mark.parametrize(("monitor", "mode", "target", "epochs"),
                         [("val/acc", "max", 0.75, 2), ("val/acc", "max", 0.875, 4)])
def test_stop_at_stops_once_the_target_is_reached(tmp_path: Path, monitor: str, mode: str, target: float,
                                                  epochs: int) -> None:
    """Accuracies 0.5, 0.75, 0.625, 0.875: the target 0.75 is reached (not passed) at epoch 2, 0.875 at epoch 4."""
    summary, _ = _fit(tmp_path, Scripted([0.5, 0.75, 0.625, 0.875, 1.0]),
                      _cfg(monitor=monitor, monitor_mode=mode, stop_at=target))
    assert summary["epochs"] == epochs


def test_stop_at_under_min_mode_reads_at_or_below(tmp_path: Path) -> None:
    """val/loss falls as accuracy rises; the target is epoch 3's loss (accuracy 0.75), reached there exactly."""
    probe = Scripted([0.75])
    probe.eval()
    with torch.no_grad():
        target = float(nn.functional.cross_entropy(probe(torch.arange(VAL_SIZE)), torch.zeros(VAL_SIZE).long()))
    summary, _ = _fit(tmp_path, Scripted([0.5, 0.625, 0.75, 0.875]),
                      _cfg(monitor="val/loss", monitor_mode="min", stop_at=target))
    assert summary["epochs"] == 3


def test_max_steps_stops_after_that_step_and_validates_there(tmp_path: Path) -> None:
    """Two steps an epoch; train.max_steps=3 stops part way through epoch 2, with a validation at step 3."""
    summary, run = _fit(tmp_path, Scripted([0.5, 0.625, 0.75]), _cfg(max_steps=3))
    assert summary["steps"] == 3
    assert int(load_checkpoint(run.last_checkpoint)["global_step"]) == 3


@pytest.mark.parametrize(("grad_clip", "expected"), [(0.0, 0.5), (0.1, 0.1 / math.sqrt(2))])
def test_grad_clip_scales_the_gradient_to_its_global_norm(tmp_path: Path, grad_clip: float, expected: float) -> None:
    """One SGD step at lr 1 from w = 0: the gradient (-1/2, 1/2) has norm 1/sqrt(2); clipped to 0.1 it becomes
    0.1 * (-1, 1) / sqrt(2) (by value it would be (-0.1, 0.1))."""
    model = Scripted([0.5])
    cfg = _cfg(max_steps=1)
    cfg.optim.grad_clip = grad_clip
    _fit(tmp_path, model, cfg)
    torch.testing.assert_close(model.w.detach(), torch.tensor([expected, -expected]), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize(("scale", "loss"), [(3e38, "inf"), (math.nan, "nan")])  # 3e38: the loss overflows to inf
def test_a_non_finite_training_loss_stops_the_run_as_diverged(tmp_path: Path, scale: float, loss: str) -> None:
    """The first step's loss is infinite (or NaN): the run stops there, naming it."""
    model = Scripted([0.5], train_loss=scale)
    with torch.no_grad():
        model.w.copy_(torch.tensor([-1.0, 1.0]))  # an infinite or a NaN loss
    with pytest.raises(DivergedError, match=rf"non-finite training loss \({loss}\) at step 1$"):
        _fit(tmp_path, model, _cfg())


def _lr_rows(run: Run) -> list[float]:
    with run.metrics_path.open() as handle:
        return [float(row["lr"]) for row in csv.DictReader(handle) if row.get("lr")]


def test_warm_up_runs_steps_zero_to_warmup_steps_at_the_reduced_rate(tmp_path: Path) -> None:
    """optim.warmup_steps=1: the optimiser steps 0 and 1 at lr * warmup_factor, then lr (one row a step)."""
    cfg = _cfg(max_epochs=2, log_every_n_steps=1)
    cfg.optim.update({"warmup_steps": 1, "warmup_factor": 0.5})
    _, run = _fit(tmp_path, Scripted([0.5]), cfg)
    assert _lr_rows(run) == [0.5, 0.5, 1.0, 1.0]


def test_the_decay_reads_the_validation_loss(tmp_path: Path) -> None:
    """Accuracies 0.25, 1, 1: val/loss 1.06, then 0.31, falls below 0.5 after epoch 2, so epoch 3 runs at half the
    rate (Schlag & Schmidhuber 2018, Appendix A: lr halved once the validation cost is below the threshold)."""
    cfg = _cfg(max_epochs=3, log_every_n_steps=1)
    cfg.optim.update({"decay_below_val_loss": 0.5, "decay_factor": 0.5})
    _, run = _fit(tmp_path, Scripted([0.25, 1.0, 1.0]), cfg)
    assert _lr_rows(run) == [1.0, 1.0, 1.0, 1.0, 0.5, 0.5]


def test_the_time_cap_stops_training_and_validates_there(tmp_path: Path) -> None:
    """Each training step takes 50 ms; a cap of 10 ms stops the fit after its first step, which is validated."""
    summary, run = _fit(tmp_path, Scripted([0.5], delay_s=0.05), _cfg(max_time_s=0.01))
    assert summary["steps"] == 1 and summary["epochs"] == 1
    assert int(load_checkpoint(run.last_checkpoint)["global_step"]) == 1


def test_a_checkpoint_saved_in_another_directory_reloads_its_best_score_with_its_paths_moved(tmp_path: Path) -> None:
    from harness.runners.supervised import LastAfterEveryValidation

    before, now = tmp_path / "store-a" / "checkpoints", tmp_path / "store-b" / "checkpoints"
    saved = LastAfterEveryValidation(dirpath=before, filename="best", monitor="val/acc", mode="max", save_top_k=1,
                                     save_last=True, enable_version_counter=False)
    saved.best_model_score, saved.best_model_path = torch.tensor(0.75), str(before / "best.ckpt")
    saved.best_k_models = {str(before / "best.ckpt"): torch.tensor(0.75)}
    saved.kth_best_model_path = saved.best_model_path
    saved.kth_value, saved.last_model_path = torch.tensor(0.75), str(before / "last.ckpt")
    resumed = LastAfterEveryValidation(dirpath=now, filename="best", monitor="val/acc", mode="max", save_top_k=1,
                                       save_last=True, enable_version_counter=False)
    resumed.load_state_dict(saved.state_dict())
    assert resumed.best_model_score == 0.75 and resumed.kth_value == 0.75  # ranks the next validation against it
    assert resumed.best_model_path == resumed.kth_best_model_path == str(now.resolve() / "best.ckpt")
    assert resumed.last_model_path == str(now.resolve() / "last.ckpt")
    assert resumed.best_k_models == {str(now.resolve() / "best.ckpt"): 0.75}
