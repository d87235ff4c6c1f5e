"""What a supervised run records (harness/runners/recorder.py), against the rule written out by hand on a scripted
trainer (the hooks of Lightning's ``Callback``: ``on_train_batch_end``, ``on_validation_end``; lightning.ai docs):

* an epoch's row: ``train/epoch_loss`` and ``train/epoch_acc`` the means of the epoch's batch values,
  ``train/examples_per_s`` its examples over the seconds from the epoch's start to its last batch, and the
  validation figures Lightning holds (``val/loss``, ``val/acc``); sanity checks and non-fit stages record nothing;
* a row every ``log_every_n_steps`` optimiser steps with the step's loss, accuracy and learning rate;
* the summary: the best validation in the monitor's direction (the first epoch to reach it, as Lightning's
  ``ModelCheckpoint``, which keeps a checkpoint only on a strict improvement), the validation figures of *that*
  epoch, the steps and epochs of the last epoch row, and the median throughput;
* the test figures are written once, at the last step, under the last epoch (0-based).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from harness.data import TARGET
from harness.runners import recorder as recorder_module
from harness.runners.recorder import RunRecorder
from harness.runs import Run


class _Tracker:
    def __init__(self) -> None:
        self.logged: list[tuple[dict[str, float], int]] = []

    def log(self, row: dict[str, float], step: int) -> None:
        self.logged.append((dict(row), step))


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def perf_counter(self) -> float:
        return self.now


def _trainer(step: int, epoch: int, metrics: dict[str, float], every: int = 2) -> Any:
    return SimpleNamespace(sanity_checking=False, state=SimpleNamespace(fn="fit"), global_step=step,
                           current_epoch=epoch, callback_metrics={k: torch.tensor(v) for k, v in metrics.items()},
                           log_every_n_steps=every, optimizers=[SimpleNamespace(param_groups=[{"lr": 0.125}])])


def _epoch(recorder: RunRecorder, clock: _Clock, first_step: int, epoch: int, batches: list[tuple[int, float, float]],
           seconds: float, val: dict[str, float]) -> None:
    """One epoch of ``batches`` (examples, loss, acc), the last batch ending ``seconds`` after the start."""
    recorder.on_train_epoch_start(_trainer(first_step, epoch, {}), None)
    for i, (examples, loss, acc) in enumerate(batches):
        clock.now += seconds / len(batches)
        module = SimpleNamespace(last_train_step=(torch.tensor(loss), acc))
        recorder.on_train_batch_end(_trainer(first_step + i + 1, epoch, {}), module, None,
                                    {TARGET: torch.zeros(examples)}, i)
    clock.now += 7.0  # validation time is not training time
    recorder.on_validation_end(_trainer(first_step + len(batches), epoch, val), None)


def _recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str = "max",
              monitor: str = "val/acc") -> tuple[RunRecorder, _Tracker]:
    clock = _Clock()
    monkeypatch.setattr(recorder_module, "time", clock)
    tracker = _Tracker()
    recorder = RunRecorder(Run(tmp_path / "run"), tracker, monitor=monitor, monitor_mode=mode, max_epochs=4)
    vals = [{"val/acc": 0.5, "val/loss": 0.9}, {"val/acc": 0.75, "val/loss": 0.6},
            {"val/acc": 0.75, "val/loss": 0.4}, {"val/acc": 0.625, "val/loss": 0.5}]
    for epoch, val in enumerate(vals):
        batches = [(4, 1.0 + epoch, 0.5), (4, 2.0 + epoch, 0.25), (2, 3.0 + epoch, 1.0)]
        _epoch(recorder, clock, 3 * epoch, epoch, batches, seconds=[2.0, 5.0, 1.0, 4.0][epoch], val=val)
    return recorder, tracker


def test_an_epoch_row_is_the_mean_of_its_batches_and_its_training_throughput(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recorder, tracker = _recorded(tmp_path, monkeypatch)
    rows = recorder.epoch_rows()
    assert [(r["step"], r["epoch"]) for r in rows] == [(3, 0), (6, 1), (9, 2), (12, 3)]
    first = rows[0]
    assert first["train/epoch_loss"] == pytest.approx((1.0 + 2.0 + 3.0) / 3)
    assert first["train/epoch_acc"] == pytest.approx((0.5 + 0.25 + 1.0) / 3)
    assert first["train/examples_per_s"] == pytest.approx(10 / 2.0)  # 10 examples in 2 s
    assert [r["train/examples_per_s"] for r in rows] == pytest.approx([5.0, 2.0, 10.0, 2.5])
    assert (first["val/acc"], first["val/loss"]) == pytest.approx((0.5, 0.9))
    steps = [r for r in recorder.curves.rows if "train/loss" in r]
    assert [r["step"] for r in steps] == [2, 4, 6, 8, 10, 12]  # every log_every_n_steps = 2 steps
    assert steps[0] == {"step": 2, "epoch": 0, "train/loss": 2.0, "train/acc": 0.25, "lr": 0.125}
    assert ({k: v for k, v in first.items() if k not in ("step", "epoch")}, 3) in tracker.logged  # the W&B mirror


def test_sanity_checks_and_other_stages_record_no_epoch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recorder, _ = _recorded(tmp_path, monkeypatch)
    before = list(recorder.curves.rows)
    for sanity, fn in ((True, "fit"), (False, "validate")):
        trainer = _trainer(12, 3, {"val/acc": 1.0})
        trainer.sanity_checking, trainer.state.fn = sanity, fn
        recorder.on_validation_end(trainer, None)
    recorder.on_validation_end(_trainer(12, 3, {"val/acc": 1.0}), None)  # no batch since the last epoch row
    assert recorder.curves.rows == before


@pytest.mark.parametrize(("monitor", "mode", "epoch", "value", "val_loss"), [
    ("val/acc", "max", 2, 0.75, 0.6),  # epochs 2 and 3 tie at 0.75: the first to reach it
    ("val/loss", "min", 3, 0.4, 0.4),
])
def test_the_summary_is_the_best_validation_and_that_epoch_s_figures(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, monitor: str, mode: str, epoch: int, value: float,
        val_loss: float) -> None:
    recorder, _ = _recorded(tmp_path, monkeypatch, mode=mode, monitor=monitor)
    summary = recorder.summary()
    assert summary["best"] == {"metric": monitor, "value": pytest.approx(value), "step": 3 * epoch, "epoch": epoch}
    assert summary["metrics"] == pytest.approx({"val/acc": 0.75, "val/loss": val_loss})
    assert (summary["steps"], summary["epochs"]) == (12, 4)
    assert summary["throughput"] == {"train/examples_per_s": pytest.approx((2.5 + 5.0) / 2)}  # median of 2, 2.5, 5, 10


def test_a_summary_before_any_epoch_is_empty(tmp_path: Path) -> None:
    recorder = RunRecorder(Run(tmp_path / "run"), _Tracker(), monitor="val/acc", monitor_mode="max", max_epochs=1)
    assert recorder.summary() == {"best": None, "metrics": {}, "steps": 0, "epochs": 0, "throughput": {}}


def test_the_test_figures_are_written_once_at_the_last_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recorder, tracker = _recorded(tmp_path, monkeypatch)
    summary = recorder.summary()
    recorder.record_final(summary["steps"], summary["epochs"], {"test/acc": 0.7})
    recorder.record_final(summary["steps"], summary["epochs"], {"test/acc": 0.8})  # tested again: replaces
    tested = [r for r in recorder.curves.rows if "test/acc" in r]
    assert tested == [{"step": 12, "epoch": 3, "test/acc": 0.8}]
    assert tracker.logged[-1] == ({"test/acc": 0.8}, 12)
    on_disk = Run(tmp_path / "run").metrics_path.read_text().splitlines()
    assert on_disk[-1].startswith("12,3,") and on_disk[-1].endswith("0.8")
    recorder.record_final(0, 0, {"test/acc": 0.5})  # a run that never trained: epoch 0, not -1
    assert [r for r in recorder.curves.rows if "test/acc" in r] == [{"step": 0, "epoch": 0, "test/acc": 0.5}]
