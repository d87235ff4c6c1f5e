"""The supervised runner (Lightning): train, validate each epoch, keep the best, test at the end.

The model is a plain ``nn.Module`` that maps a batch's input tensors to class logits; this module wraps
it with the loss, the metrics, the optimiser and the learning-rate policy. The run's progress is
checkpointed after every validation (``checkpoints/last.ckpt``; ``best.ckpt`` when the monitored metric improved),
so the same command resumes an interrupted run from the last validation and, because batch order depends only on
(seed, epoch) and the RNG state is checkpointed, finishes with the same metrics as an uninterrupted run.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import warnings
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint, Timer, TQDMProgressBar
from lightning.pytorch.plugins.io import TorchCheckpointIO
from omegaconf import DictConfig
from torch import nn
from torch.utils.data import DataLoader

from harness.data import TARGET, EpochShuffleSampler, TaskData, TensorDictDataset, identity_collate
from harness.errors import DivergedError
from harness.optim import LearningRatePolicy, build_optimizer
from harness.runners.analysis import run_analysis
from harness.runners.recorder import RunRecorder
from harness.runs import Run, atomic_write


class SupervisedModule(pl.LightningModule):
    """Cross-entropy classification around any model ``model(**inputs) -> logits [B, C]``."""

    def __init__(self, model: nn.Module, cfg: DictConfig, test_names: list[str]) -> None:
        super().__init__()
        self.model = model
        self.cfg = cfg
        self.policy = LearningRatePolicy(cfg.optim)
        self.test_names = test_names  # one metric prefix per test dataloader: "test", "test_<split>"
        self.last_train_step: tuple[torch.Tensor, torch.Tensor] | None = None  # (loss, acc) of the latest batch

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.model(**{name: t for name, t in batch.items() if name != TARGET})

    def _loss_and_acc(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self(batch)  # [B, C]
        target = batch[TARGET]  # [B]
        loss = F.cross_entropy(logits, target)
        acc = (logits.argmax(dim=-1) == target).float().mean()
        return loss, acc

    def on_train_batch_start(self, batch: Any, batch_idx: int) -> None:
        lr = self.policy.lr_at(self.global_step)
        for group in self.trainer.optimizers[0].param_groups:
            group["lr"] = lr

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss, acc = self._loss_and_acc(batch)
        # The recorder reads the step's numbers from here. Lightning's self.log costs about 1 ms a call, a
        # sizeable share of a batch-10 step, so it only feeds the progress bar, on interactive runs.
        self.last_train_step = (loss.detach(), acc.detach())
        if self.trainer.progress_bar_callback is not None:
            self.log("train/loss", loss, on_step=True, on_epoch=False, prog_bar=True, batch_size=len(batch[TARGET]))
        return loss

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        loss, acc = self._loss_and_acc(batch)
        size = batch[TARGET].shape[0]
        self.log("val/loss", loss, on_epoch=True, prog_bar=True, batch_size=size)
        self.log("val/acc", acc, on_epoch=True, prog_bar=True, batch_size=size)

    def on_validation_epoch_end(self) -> None:
        if self.trainer.sanity_checking:
            return
        val_loss = self.trainer.callback_metrics.get("val/loss")
        if val_loss is not None and self.policy.observe_val_loss(float(val_loss)):
            print(f"val/loss {float(val_loss):.4f} < {self.policy.decay_below}: learning rate x "
                  f"{self.policy.decay_factor} from now on", flush=True)

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int, dataloader_idx: int = 0) -> None:
        loss, acc = self._loss_and_acc(batch)
        prefix = self.test_names[dataloader_idx]
        size = batch[TARGET].shape[0]
        self.log(f"{prefix}/loss", loss, on_epoch=True, batch_size=size, add_dataloader_idx=False)
        self.log(f"{prefix}/acc", acc, on_epoch=True, batch_size=size, add_dataloader_idx=False)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return build_optimizer(self.model.parameters(), self.cfg.optim)

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["harness"] = {
            "lr_policy": self.policy.state_dict(),
            "torch_rng": torch.get_rng_state(),
            "fit_stopped": bool(self.trainer.should_stop),
        }

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        state = checkpoint.get("harness", {})
        self.policy.load_state_dict(state.get("lr_policy", {}))
        if "torch_rng" in state:
            torch.set_rng_state(state["torch_rng"])


class StopAtTarget(pl.Callback):
    """Stop as soon as the monitored validation metric reaches ``target`` (>= for max, <= for min).

    Lightning's ``EarlyStopping(stopping_threshold=...)`` needs the target to be strictly passed, which
    a perfect accuracy of 1.0 never is. Runs before ``ModelCheckpoint`` so the checkpoint records the stop.

    The value is the float32 metric Lightning logged, compared with the target as a Python float: a target that
    float32 rounds down is not reached by a value equal to it (7/10 is logged as 0.699999988 < 0.7, so a run with
    ``train.stop_at=0.7`` goes on to its next better validation), while 1.0, 0.99 and 0.999 (rounded up: every
    target of the shipped runs) and fractions exact in float32 (halves, eighths) compare as written. Comparing in
    float32 would move the stop of such runs; kept as it is so that the stored runs stay what this code trains.
    """

    def __init__(self, monitor: str, mode: str, target: float) -> None:
        self.monitor, self.mode, self.target = monitor, mode, float(target)

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        value = trainer.callback_metrics.get(self.monitor)
        if trainer.sanity_checking or value is None:
            return
        reached = float(value) >= self.target if self.mode == "max" else float(value) <= self.target
        if reached:
            print(f"{self.monitor}={float(value):.4f} reached train.stop_at={self.target}: stopping", flush=True)
            trainer.should_stop = True


class StopAfterStep(pl.Callback):
    """Stop training after optimiser step ``steps`` (``train.max_steps``) and validate there, as the time cap
    stops: Lightning's ``Timer`` sets ``should_stop`` after a batch, and the epoch loop then validates before the
    fit ends. A run trained to the step where a capped run stopped so validates and checkpoints where that run
    did, also part way through an epoch (``harness reproduce``). Lightning's own ``max_steps`` ends the epoch
    loop at that step without validating."""

    def __init__(self, steps: int) -> None:
        self.steps = int(steps)

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        if trainer.global_step >= self.steps and not trainer.should_stop:
            print(f"train.max_steps={self.steps} reached: validating there, then stopping", flush=True)
            trainer.should_stop = True


class AtomicCheckpointIO(TorchCheckpointIO):
    """Checkpoints written through the run store's atomic writer (temporary file, fsync, rename), like every
    other file of a run: a kill never leaves a truncated checkpoint. They are read with ``weights_only=True``:
    tensors and plain containers only, never arbitrary pickled objects."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path: Any, storage_options: Any = None) -> None:
        if storage_options is not None:
            raise TypeError("AtomicCheckpointIO writes local files and takes no storage_options")
        atomic_write(Path(path), lambda handle: torch.save(checkpoint, handle))

    def load_checkpoint(self, path: Any, map_location: Any = None, weights_only: bool | None = True) -> dict[str, Any]:
        return load_checkpoint(Path(path))


def load_checkpoint(path: Path) -> dict[str, Any]:
    """A checkpoint's contents, read with ``weights_only=True``."""
    return torch.load(path, map_location="cpu", weights_only=True)


def intact_checkpoint(run: Run, names: tuple[str, ...] = ("last", "best")) -> Path | None:
    """The first of the run's checkpoints (``last``, then ``best``) that loads; a damaged one is set aside
    (renamed, not deleted) with a message. Resuming from ``best`` replays the later epochs, which give the same
    numbers: batch order depends only on (seed, epoch) and the RNG state is in the checkpoint."""
    for name in names:
        path = run.checkpoint_dir / f"{name}.ckpt"
        if not path.exists():
            continue
        try:
            load_checkpoint(path)
            return path
        except Exception as exc:  # truncated or foreign file: torch raises several kinds
            aside = run.set_aside(path)
            print(f"{path} is damaged ({type(exc).__name__}); kept as {aside.name}", flush=True)
    return None


class LastAfterEveryValidation(ModelCheckpoint):
    """``ModelCheckpoint`` whose ``last.ckpt`` is written whenever a validation is ranked for ``best.ckpt``, improved
    or not. Lightning 2.6's ``save_last=True`` writes it only beside a new ``best.ckpt``, so a killed run trained
    again every epoch since its last improvement. Writing a checkpoint reads the state and changes none of it: the
    run's numbers are the same."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._ranked_at = self._last_saved_at = -1  # the global steps of the last ranking and last.ckpt

    @property
    def state_key(self) -> str:
        """``ModelCheckpoint``'s key, so that a checkpoint written before this class existed resumes with its best
        score (under another key Lightning would start ranking afresh and could replace a better best.ckpt)."""
        return "ModelCheckpoint" + super().state_key.removeprefix(type(self).__qualname__)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Lightning reloads the best score only when the checkpoint was saved in this very directory; a run whose
        store was moved or copied (another ``--runs-dir``, another machine) would then let its next validation
        replace ``best.ckpt`` however it scored. Its paths are taken to where the run is now, and all of it reloads."""
        saved_in = state_dict.get("dirpath")
        if saved_in and self.dirpath and saved_in != self.dirpath:
            state_dict = relocated(state_dict, saved_in, self.dirpath)
        super().load_state_dict(state_dict)

    def _save_topk_checkpoint(self, trainer: pl.Trainer, monitor_candidates: dict[str, torch.Tensor]) -> None:
        super()._save_topk_checkpoint(trainer, monitor_candidates)
        self._ranked_at = trainer.global_step

    def _save_last_checkpoint(self, trainer: pl.Trainer, monitor_candidates: dict[str, torch.Tensor]) -> None:
        super()._save_last_checkpoint(trainer, monitor_candidates)
        self._last_saved_at = trainer.global_step

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        super().on_train_epoch_end(trainer, pl_module)
        self._save_last_if_ranked(trainer)

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        super().on_validation_end(trainer, pl_module)
        self._save_last_if_ranked(trainer)

    def _save_last_if_ranked(self, trainer: pl.Trainer) -> None:
        if self.save_last and self._ranked_at == trainer.global_step != self._last_saved_at:
            self._save_last_checkpoint(trainer, self._monitor_candidates(trainer))


def relocated(state: dict[str, Any], saved_in: str, now_in: str) -> dict[str, Any]:
    """A ``ModelCheckpoint`` state saved in the directory ``saved_in`` with its paths in ``now_in`` instead (the same
    file names); paths elsewhere are kept as they are."""
    def moved(path: Any) -> Any:
        if isinstance(path, str) and path and os.path.dirname(path) == saved_in:
            return os.path.join(now_in, os.path.basename(path))
        return path

    paths = ("best_model_path", "kth_best_model_path", "last_model_path")
    return {**state, "dirpath": now_in, **{key: moved(state[key]) for key in paths if key in state},
            "best_k_models": {moved(path): score for path, score in (state.get("best_k_models") or {}).items()}}


def _loader(dataset: TensorDictDataset, batch_size: int, sampler: EpochShuffleSampler | None = None) -> DataLoader:
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler, shuffle=False, num_workers=0,
                      collate_fn=identity_collate)


def _quiet_lightning() -> None:
    for name in ("lightning.pytorch", "lightning.fabric", "lightning"):
        logging.getLogger(name).setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", message=".*does not have many workers.*")
    warnings.filterwarnings("ignore", message=".*(LitLogger|litlogger).*")
    warnings.filterwarnings("ignore", message=".*exists and is not empty.*")
    warnings.filterwarnings("ignore", message=".*number of training batches.*smaller than the logging interval.*")
    warnings.filterwarnings("ignore", message=".*treespec, LeafSpec.*")


def fit_stopped_early(checkpoint: Path) -> bool:
    """Whether the checkpoint was taken at the moment training decided to stop."""
    if not checkpoint.exists():
        return False
    return bool(load_checkpoint(checkpoint).get("harness", {}).get("fit_stopped", False))


def _say_if_capped(trainer: pl.Trainer, max_time_s: Any) -> None:
    """One line when ``train.max_time_s`` ended training (Lightning's own notice is silenced with its logs): how far
    a capped run trains depends on the machine's speed."""
    timer = next((callback for callback in trainer.callbacks if isinstance(callback, Timer)), None)
    remaining = timer.time_remaining() if timer is not None else None
    if remaining is not None and remaining <= 0:
        print(f"train.max_time_s={max_time_s} reached: training stopped after step {trainer.global_step} (how far a "
              "capped run trains depends on the machine; `harness reproduce` trains it again to the epochs of its "
              "tested checkpoint)", flush=True)


def train_and_test(cfg: DictConfig, data: TaskData, model: nn.Module, run: Run, tracker: Any) -> dict[str, Any]:
    """Fit with validation each epoch, then test the best checkpoint. Returns the run's summary."""
    _quiet_lightning()
    train_cfg = cfg.train
    test_names = ["test", *[f"test_{name}" for name in data.extra_test]]
    module = SupervisedModule(model, cfg, test_names)
    recorder = RunRecorder(run, tracker, monitor=train_cfg.monitor, monitor_mode=train_cfg.monitor_mode,
                           max_epochs=train_cfg.max_epochs)
    checkpoint = LastAfterEveryValidation(
        dirpath=run.checkpoint_dir, filename="best", monitor=train_cfg.monitor, mode=train_cfg.monitor_mode,
        save_last=True, save_top_k=1, enable_version_counter=False, auto_insert_metric_name=False,
    )
    callbacks: list[pl.Callback] = [recorder, checkpoint]
    if train_cfg.stop_at is not None:
        callbacks.append(StopAtTarget(train_cfg.monitor, train_cfg.monitor_mode, train_cfg.stop_at))
    if train_cfg.get("max_steps") is not None:
        callbacks.append(StopAfterStep(train_cfg.max_steps))
    if train_cfg.early_stop_patience is not None:
        callbacks.append(EarlyStopping(monitor=train_cfg.monitor, mode=train_cfg.monitor_mode,
                                       patience=train_cfg.early_stop_patience, check_on_train_epoch_end=False))
    interactive = sys.stderr.isatty()
    if interactive:
        callbacks.append(TQDMProgressBar(refresh_rate=10))
    limit_eval = train_cfg.limit_eval_batches if train_cfg.limit_eval_batches is not None else 1.0
    trainer = pl.Trainer(
        accelerator="cpu" if not torch.cuda.is_available() else "auto",
        devices=1,
        max_epochs=train_cfg.max_epochs,
        max_time={"seconds": train_cfg.max_time_s} if train_cfg.max_time_s else None,
        limit_train_batches=train_cfg.limit_train_batches if train_cfg.limit_train_batches is not None else 1.0,
        limit_val_batches=limit_eval,
        limit_test_batches=limit_eval,
        gradient_clip_val=cfg.optim.grad_clip or None,
        gradient_clip_algorithm="norm",
        deterministic=True if not torch.cuda.is_available() else "warn",  # CPU: bitwise reproducible
        num_sanity_val_steps=0,
        logger=False,
        callbacks=callbacks,
        enable_progress_bar=interactive,
        enable_model_summary=False,
        log_every_n_steps=train_cfg.log_every_n_steps,
        default_root_dir=str(run.path),
        plugins=[AtomicCheckpointIO()],
    )
    sampler = EpochShuffleSampler(len(data.train), seed=int(cfg.seed))
    train_loader = _loader(data.train, train_cfg.batch_size, sampler)
    val_loader = _loader(data.val, train_cfg.eval_batch_size)
    saved = run.has_epoch_checkpoint
    resume = intact_checkpoint(run)
    if resume is not None:
        print(f"resuming from {resume}", flush=True)
    elif saved:  # each was damaged (said above); where none was saved, the run's header said so
        print("no intact checkpoint: training from the start", flush=True)
    if resume is None or not fit_stopped_early(resume):
        trainer.fit(module, train_dataloaders=train_loader, val_dataloaders=val_loader,
                    ckpt_path=str(resume) if resume else None)
        _say_if_capped(trainer, train_cfg.max_time_s)
    else:
        print("training had already finished; testing the best checkpoint", flush=True)
    best = intact_checkpoint(run, ("best", "last"))
    test_loaders = [_loader(data.test, train_cfg.eval_batch_size)]
    test_loaders += [_loader(split, train_cfg.eval_batch_size) for split in data.extra_test.values()]
    outputs = trainer.test(module, dataloaders=test_loaders, ckpt_path=str(best) if best else None, verbose=False)
    test_metrics: dict[str, float] = {}
    for result in outputs:
        test_metrics.update({key: float(value) for key, value in result.items()})
    for name in test_names:
        if f"{name}/acc" in test_metrics:
            test_metrics[f"{name}/error"] = 1.0 - test_metrics[f"{name}/acc"]
    summary = recorder.summary()
    summary["metrics"] = {**summary["metrics"], **test_metrics}
    if any(math.isnan(v) for v in test_metrics.values()):
        raise DivergedError("test metrics are NaN")
    recorder.record_final(summary["steps"], summary["epochs"], test_metrics)
    analysis = run_analysis(module.model, {"test": data.test, **{f"test_{n}": d for n, d in data.extra_test.items()}},
                            cfg, run.path / "analysis")
    if analysis:
        summary["analysis"] = analysis
    return summary
