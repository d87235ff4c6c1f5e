"""A Lightning callback that records a run: curves (``metrics.csv``), W&B mirror, per-epoch training
throughput, and a plain log line per epoch (readable in CI logs and files as well as terminals).

Ordering matters for resumability: the epoch's row is flushed in ``on_validation_end``, which runs
before ``ModelCheckpoint`` saves (Lightning puts checkpoint callbacks last). A kill between the two
leaves a curve one epoch ahead of the checkpoint; on resume the rows past the restored step are
dropped and the epoch is trained again, exactly as before.
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any

import lightning.pytorch as pl
import torch

from harness.data import TARGET
from harness.errors import DivergedError
from harness.runs import CurveWriter, Run


def _scalar(value: Any) -> float:
    return float(value.detach().cpu()) if isinstance(value, torch.Tensor) else float(value)


class RunRecorder(pl.Callback):
    def __init__(self, run: Run, tracker: Any, monitor: str, monitor_mode: str, max_epochs: int) -> None:
        self.run = run
        self.monitor_mode = monitor_mode
        self.tracker = tracker
        self.monitor = monitor
        self.max_epochs = max_epochs
        self.curves = CurveWriter(run.metrics_path)
        self._epoch_start = 0.0
        self._train_seconds = 0.0
        self._examples = 0
        self._loss_sum = 0.0
        self._acc_sum = 0.0
        self._batches = 0

    # training ---------------------------------------------------------------------------------
    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.curves.truncate_after(trainer.global_step)

    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._examples, self._batches, self._loss_sum, self._acc_sum = 0, 0, 0.0, 0.0
        self._train_seconds = 0.0
        self._epoch_start = time.perf_counter()

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any,
                           batch: Any, batch_idx: int) -> None:
        self._train_seconds = time.perf_counter() - self._epoch_start
        self._examples += int(batch[TARGET].shape[0])
        self._batches += 1
        loss, acc = (_scalar(value) for value in pl_module.last_train_step)
        if not math.isfinite(loss):
            raise DivergedError(f"non-finite training loss ({loss}) at step {trainer.global_step}")
        self._loss_sum += loss
        self._acc_sum += acc
        step = trainer.global_step
        if step % trainer.log_every_n_steps == 0:
            lr = trainer.optimizers[0].param_groups[0]["lr"]
            row = {"train/loss": loss, "train/acc": acc, "lr": lr}
            self.curves.append(step, trainer.current_epoch, row)
            self.tracker.log(row, step=step)

    # end of each epoch ------------------------------------------------------------------------
    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.sanity_checking or trainer.state.fn != "fit" or self._batches == 0:
            return
        step, epoch = trainer.global_step, trainer.current_epoch
        row: dict[str, float] = {
            "train/epoch_loss": self._loss_sum / self._batches,
            "train/epoch_acc": self._acc_sum / self._batches,
            "train/examples_per_s": self._examples / max(self._train_seconds, 1e-9),
        }
        for key in ("val/loss", "val/acc"):
            if key in trainer.callback_metrics:
                row[key] = _scalar(trainer.callback_metrics[key])
        self.curves.append(step, epoch, row)
        self.curves.flush()
        self.tracker.log(row, step=step)
        shown = "  ".join(f"{k}={v:.4f}" for k, v in row.items() if k != "train/examples_per_s")
        print(f"epoch {epoch + 1}/{self.max_epochs} step {step}: {shown}  "
              f"{row['train/examples_per_s']:.0f} examples/s", flush=True)
        self._batches = 0

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.curves.flush()

    # summaries --------------------------------------------------------------------------------
    def epoch_rows(self) -> list[dict[str, Any]]:
        return [row for row in self.curves.rows if "train/examples_per_s" in row]

    def summary(self) -> dict[str, Any]:
        """Best validation point, steps, epochs and training throughput, read back from the curves."""
        epochs = self.epoch_rows()
        with_monitor = [row for row in epochs if self.monitor in row]
        best = None
        if with_monitor:
            pick = max if self.monitor_mode == "max" else min
            best_row = pick(with_monitor, key=lambda row: row[self.monitor])
            best = {"metric": self.monitor, "value": best_row[self.monitor], "step": best_row["step"],
                    "epoch": best_row["epoch"] + 1}
        metrics: dict[str, float] = {}
        if best is not None:
            metrics = {key: value for key, value in next(r for r in with_monitor if r["step"] == best["step"]).items()
                       if key.startswith("val/")}
        rates = [row["train/examples_per_s"] for row in epochs]
        return {
            "best": best,
            "metrics": metrics,
            "steps": int(epochs[-1]["step"]) if epochs else 0,
            "epochs": int(epochs[-1]["epoch"]) + 1 if epochs else 0,
            "throughput": {"train/examples_per_s": statistics.median(rates)} if rates else {},
        }

    def record_final(self, step: int, epochs: int, test_metrics: dict[str, float]) -> None:
        self.curves.rows = [row for row in self.curves.rows if not set(row) & set(test_metrics)]
        self.curves.append(step, max(epochs - 1, 0), test_metrics)
        self.curves.flush()
        self.tracker.log(test_metrics, step=step)
