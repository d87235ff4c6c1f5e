"""The stacked trainer: K supervised runs of one config that differ only in ``seed``, trained as one computation
(:class:`harness.runners.stacked_model.StackedClassifier`), each member recorded as an ordinary run.

It reproduces what :func:`harness.runners.supervised.train_and_test` does for one run, member by member:

* data: member k reads its own batches in its own order (``EpochShuffleSampler(seed_k)``), the same batches as
  its solo run; ``train.limit_train_batches`` / ``limit_eval_batches`` as Lightning applies them;
* each step: the learning-rate policy (warm-up), forward, cross-entropy, backward, gradient clipping per member,
  the optimiser's update (elementwise: K independent optimisers);
* each epoch: validation (the batch-size-weighted mean of the batch losses and accuracies, as Lightning reduces
  ``self.log(..., on_epoch=True)``), the member's curve row (through its own
  :class:`harness.runners.recorder.RunRecorder`), ``train.stop_at``, ``train.early_stop_patience`` and
  ``train.max_time_s``, then ``best.ckpt`` (strict improvement of ``train.monitor``) and ``last.ckpt``;
* a member that stops (or diverges) leaves the stack, which carries on with the others (parameters and optimiser
  state sliced, so nothing changes for them);
* at the end each member is tested with its best weights, its test row and summary written as a solo run's.

Device: the GPU when there is one (as the solo runner's ``accelerator="auto"``), else the CPU; the stack and
each batch live there, checkpoints are written from CPU copies.

Time cap: a member is charged its share of the stack's time (the wall time of each step divided by the number
of members in it), so a stack of K runs about as many batches within ``train.max_time_s`` as one run alone.

Checkpoints hold the solo runner's keys for the model (``state_dict`` with ``model.`` names), the optimiser
(``optimizer_states``, one member's slice) and the harness state, so predictions, retests and analyses read them
as any run's; an unfinished member resumes with the stacked command (not with ``harness bench`` alone, whose
Lightning loop needs its own loop state).

Not stackable (a clear error): configs differing in anything but ``seed``, and the one-off learning-rate decay on
validation loss (``optim.decay_below_val_loss``), which would give members different learning rates.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import torch
from omegaconf import DictConfig
from torch import nn
from torch.optim import Optimizer

from harness.data import TARGET, EpochShuffleSampler, TaskData, TensorDictDataset
from harness.errors import DivergedError
from harness.optim import LearningRatePolicy, build_optimizer
from harness.runners.analysis import run_analysis
from harness.runners.predictions import test_splits
from harness.runners.recorder import RunRecorder
from harness.runners.stacked_checkpoints import EpochCheckpoints
from harness.runners.stacked_model import StackedClassifier, clip_per_member, member_losses
from harness.runners.supervised import _quiet_lightning, load_checkpoint
from harness.runs import Run


@dataclass
class Member:
    """One run of the stack and its training state."""

    cfg: DictConfig
    run: Run
    recorder: RunRecorder
    sampler: EpochShuffleSampler
    best: float | None = None  # best monitored value so far (ModelCheckpoint's)
    early_best: float | None = None  # EarlyStopping's best
    wait: int = 0  # epochs without improvement (EarlyStopping's wait_count)
    charged_s: float = 0.0  # this member's share of the stack's training time
    stopped: bool = False  # training decided to stop (stop_at, patience, time cap)
    error: DivergedError | None = None
    view: SimpleNamespace = field(default_factory=SimpleNamespace)


class WeightedMean:
    """The batch-size-weighted mean Lightning's ``self.log(on_epoch=True, batch_size=n)`` computes, for K members."""

    def __init__(self, k: int) -> None:
        self.total = torch.zeros(k)  # [K] float32, as Lightning's accumulator
        self.count = torch.tensor(0)

    def add(self, values: torch.Tensor, size: int) -> None:
        self.total = self.total + values.detach().float().cpu() * size  # values [K]
        self.count = self.count + size

    def mean(self) -> torch.Tensor:
        return self.total / self.count  # [K]


def limited(batches: int, limit: Any) -> int:
    """How many of ``batches`` Lightning runs under ``limit_*_batches`` (None: all; int: at most; float: a share)."""
    if limit is None:
        return batches
    if isinstance(limit, int) or float(limit) > 1.0:
        return min(batches, int(limit))
    return int(batches * float(limit))


def _stack_batch(dataset: TensorDictDataset, orders: list[list[int]]) -> dict[str, torch.Tensor]:
    """One batch per member (``orders[k]`` its example indices) -> {name: [K, B, ...]}."""
    parts = [dataset.__getitems__(indices) for indices in orders]
    return {name: torch.stack([part[name] for part in parts]) for name in parts[0]}


def _inputs(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {name: t for name, t in batch.items() if name != TARGET}


def training_device() -> torch.device:
    """Where a stack trains: the GPU when there is one (the solo runner's ``accelerator="auto"``), else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _to(batch: dict[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    return {name: t.to(device) for name, t in batch.items()}


def _cpu(value: Any) -> Any:
    """A checkpoint's tensors (nested in dicts and lists) on the CPU, so any machine can read it."""
    if isinstance(value, torch.Tensor):
        return value.cpu()
    if isinstance(value, dict):
        return {key: _cpu(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_cpu(item) for item in value]
    return value


@torch.no_grad()
def evaluate(stack: StackedClassifier, dataset: TensorDictDataset, batch_size: int,
             limit: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss [K], accuracy [K]) of every member on the same examples, reduced as the solo runner's logs."""
    stack.template.eval()
    device = stack.parameters()[0].device
    loss_mean, acc_mean = WeightedMean(stack.k), WeightedMean(stack.k)
    n = len(dataset)
    for start in range(0, limited(math.ceil(n / batch_size), limit) * batch_size, batch_size):
        batch = _to(dataset.__getitems__(list(range(start, min(start + batch_size, n)))), device)
        target = batch[TARGET]  # [B]
        logits = stack.shared_logits(_inputs(batch))  # [K, B, C]
        loss, acc = member_losses(logits, target.expand(stack.k, -1))
        loss_mean.add(loss, len(target))
        acc_mean.add(acc, len(target))
    stack.template.train()
    return loss_mean.mean(), acc_mean.mean()


def member_optimizer_state(optimizer: Optimizer, index: int, k: int) -> dict[str, Any]:
    """Member ``index``'s slice of a stacked optimiser's ``state_dict`` (the unstacked optimiser's format)."""
    state = optimizer.state_dict()

    def part(value: Any) -> Any:
        stacked = isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape[0] == k
        return value[index].clone() if stacked else value
    return {"state": {key: {name: part(v) for name, v in entry.items()} for key, entry in state["state"].items()},
            "param_groups": state["param_groups"]}


def stacked_optimizer_state(states: list[dict[str, Any]]) -> dict[str, Any]:
    """The members' optimiser ``state_dict``s (same optimiser) -> the stacked optimiser's."""
    def joined(values: list[Any]) -> Any:
        if isinstance(values[0], torch.Tensor) and values[0].dim() > 0:
            return torch.stack(values)
        return values[0]
    first = states[0]
    return {"state": {key: {name: joined([s["state"][key][name] for s in states]) for name in entry}
                      for key, entry in first["state"].items()},
            "param_groups": first["param_groups"]}


def restack(stack: StackedClassifier, optimizer: Optimizer, keep: list[int],
            cfg: DictConfig) -> tuple[StackedClassifier, Optimizer]:
    """The stack of members ``keep`` only, with their parameters and optimiser state, so their training goes on
    exactly as it would have."""
    states = [member_optimizer_state(optimizer, index, stack.k) for index in keep]
    smaller = stack.select(keep)
    new_optimizer = build_optimizer(smaller.parameters(), cfg.optim)
    new_optimizer.load_state_dict(stacked_optimizer_state(states))
    return smaller, new_optimizer


def _view(member: Member, cfg: DictConfig) -> SimpleNamespace:
    """What :class:`RunRecorder` reads of Lightning's trainer and module, for one member."""
    return SimpleNamespace(global_step=0, current_epoch=0, log_every_n_steps=int(cfg.train.log_every_n_steps),
                           sanity_checking=False, state=SimpleNamespace(fn="fit"), callback_metrics={},
                           optimizers=[SimpleNamespace(param_groups=[{"lr": 0.0}])], last_train_step=None)


def _improved(value: float, best: float | None, mode: str) -> bool:
    if best is None:
        return True
    return value > best if mode == "max" else value < best


class StackedTrainer:
    """Trains the members of one stack from their models (built and seeded as solo runs build them)."""

    def __init__(self, cfg: DictConfig, data: TaskData, members: list[Member], models: list[nn.Module]) -> None:
        _quiet_lightning()
        self.cfg, self.data, self.members = cfg, data, members
        self.train_cfg = cfg.train
        self.policy = LearningRatePolicy(cfg.optim)
        self.device = training_device()
        self.stack = StackedClassifier([model.to(self.device) for model in models])
        self.optimizer = self._shared_optimizer()
        self.active = list(members)  # members[i] is the stack's member i while training
        self.epoch, self.step = 0, 0
        for member in members:
            member.view = _view(member, cfg)

    def _shared_optimizer(self) -> Optimizer:
        """The one optimiser over the stacked parameters, which is K optimisers while the members share their
        ``optim`` settings (a trainer that gives each member its own replaces this)."""
        return build_optimizer(self.stack.parameters(), self.cfg.optim)

    # checkpoints ------------------------------------------------------------------------------
    def _checkpoint(self, member: Member, index: int) -> dict[str, Any]:
        return {"state_dict": {f"model.{k}": v.cpu() for k, v in self.stack.member_state_dict(index).items()},
                "optimizer_states": [_cpu(member_optimizer_state(self.optimizer, index, self.stack.k))],
                "epoch": self.epoch, "global_step": self.step,
                "harness": {"lr_policy": self.policy.state_dict(), "torch_rng": torch.get_rng_state(),
                            "fit_stopped": member.stopped,
                            "stacked": {"epochs_done": self.epoch + 1, "best": member.best,
                                        "early_best": member.early_best, "wait": member.wait,
                                        "charged_s": member.charged_s}}}

    def resume(self, checkpoints: list[dict[str, Any]]) -> None:
        """Continue from the members' ``last.ckpt`` contents, all taken at the same epoch's end."""
        for index, (member, ckpt) in enumerate(zip(self.members, checkpoints, strict=True)):
            self.stack.load_member_state_dict(index, {k.removeprefix("model."): v
                                                      for k, v in ckpt["state_dict"].items()})
            saved = ckpt["harness"]["stacked"]
            member.best, member.early_best = saved["best"], saved["early_best"]
            member.wait, member.charged_s = int(saved["wait"]), float(saved["charged_s"])
        self.optimizer.load_state_dict(stacked_optimizer_state([c["optimizer_states"][0] for c in checkpoints]))
        first = checkpoints[0]
        self.policy.load_state_dict(first["harness"].get("lr_policy", {}))
        torch.set_rng_state(first["harness"]["torch_rng"])
        self.epoch, self.step = int(first["harness"]["stacked"]["epochs_done"]), int(first["global_step"])

    # training ---------------------------------------------------------------------------------
    def fit(self) -> None:
        train_cfg = self.train_cfg
        batch_size = int(train_cfg.batch_size)
        n = len(self.data.train)
        batches = limited(math.ceil(n / batch_size), train_cfg.limit_train_batches)
        for member in self.members:
            member.view.global_step = self.step
            member.recorder.on_train_start(member.view, member.view)  # type: ignore[arg-type]
        self.stack.template.train()
        while self.active and self.epoch < int(train_cfg.max_epochs):
            orders: dict[int, list[int]] = {}  # id(member) -> its example order this epoch
            for member in self.active:
                member.sampler.set_epoch(self.epoch)
                member.view.current_epoch = self.epoch
                member.recorder.on_train_epoch_start(member.view, member.view)  # type: ignore[arg-type]
                orders[id(member)] = list(member.sampler)
            for batch_idx in range(batches):
                rows = [orders[id(m)][batch_idx * batch_size:(batch_idx + 1) * batch_size] for m in self.active]
                started = time.perf_counter()
                members = len(self.active)
                self._train_step(_to(_stack_batch(self.data.train, rows), self.device), batch_idx)
                out_of_time = self._charge((time.perf_counter() - started) / members)
                if not self.active or out_of_time:
                    break
            if self.active:
                self._end_epoch()
            self.epoch += 1

    def _charge(self, seconds: float) -> bool:
        """Charge each member its share of a step; True when the time cap is reached (validate, then stop)."""
        cap = self.train_cfg.max_time_s
        for member in self.active:
            member.charged_s += seconds
        if cap and any(member.charged_s >= float(cap) for member in self.active):
            for member in self.active:
                member.stopped = member.stopped or member.charged_s >= float(cap)
            return True
        return False

    def _train_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        lr = self.policy.lr_at(self.step)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.zero_grad(set_to_none=True)
        loss, acc = member_losses(self.stack.logits(_inputs(batch)), batch[TARGET])  # [K], [K]
        loss.sum().backward()
        if self.cfg.optim.grad_clip:
            clip_per_member(self.stack.parameters(), float(self.cfg.optim.grad_clip))
        self.optimizer.step()
        self.step += 1
        self._record_step(loss, acc, [lr] * len(self.active), batch, batch_idx)

    def _record_step(self, loss: torch.Tensor, acc: torch.Tensor, lrs: list[float], batch: dict[str, torch.Tensor],
                     batch_idx: int) -> None:
        """After a step: each member's loss [K], accuracy [K] and learning rate to its recorder (as Lightning's
        ``on_train_batch_end``), and the members whose loss diverged dropped from the stack."""
        diverged = []
        for index, member in enumerate(self.active):
            view = member.view
            view.global_step, view.last_train_step = self.step, (loss[index].detach(), acc[index].detach())
            view.optimizers[0].param_groups[0]["lr"] = lrs[index]
            try:
                member.recorder.on_train_batch_end(view, view, None, {TARGET: batch[TARGET][index]},  # type: ignore[arg-type]
                                                   batch_idx)
            except DivergedError as exc:
                member.error = exc
                diverged.append(index)
        if diverged:
            self._drop([i for i in range(len(self.active)) if i not in diverged])

    def _drop(self, keep: list[int]) -> None:
        """Carry on with the members at positions ``keep`` only."""
        if keep:
            self.stack, self.optimizer = restack(self.stack, self.optimizer, keep, self.cfg)
        self.active = [self.active[i] for i in keep]

    def _end_epoch(self) -> None:
        """Validation and, per member, its curve row, its stopping rules and its checkpoints (in the solo runner's
        order: recorder, StopAtTarget, EarlyStopping, then ModelCheckpoint)."""
        from harness.runners.launch import signals_deferred

        train_cfg = self.train_cfg
        val_loss, val_acc = self._validate()
        monitor, mode = str(train_cfg.monitor), str(train_cfg.monitor_mode)
        keep = []
        written = EpochCheckpoints([member.run for member in self.active])  # every member's or none (its module)
        with signals_deferred() as came:  # and a Ctrl-C waits until they are all written
            for index, member in enumerate(self.active):
                view = member.view
                view.global_step, view.current_epoch = self.step, self.epoch
                view.callback_metrics = {"val/loss": val_loss[index], "val/acc": val_acc[index]}
                member.recorder.on_validation_end(view, view)  # type: ignore[arg-type]
                self._save(member, index, float(view.callback_metrics[monitor]), monitor, mode, written)
                if not member.stopped:
                    keep.append(index)
            written.commit()
        if came:  # Ctrl-C or SIGTERM during the writes, acted on now that they are whole
            raise KeyboardInterrupt
        if len(keep) < len(self.active):
            self._drop(keep)

    def _validate(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The active members' validation loss [K] and accuracy [K], all on the task's validation set."""
        return evaluate(self.stack, self.data.val, int(self.train_cfg.eval_batch_size),
                        self.train_cfg.limit_eval_batches)

    def _save(self, member: Member, index: int, value: float, monitor: str, mode: str,
              written: EpochCheckpoints) -> None:
        """A member's stopping rules, then its ``best.ckpt`` (when the monitor improved) and ``last.ckpt``, staged
        in ``written`` until every member's are."""
        self._stopping_rules(member, value, monitor, mode)
        checkpoint = self._checkpoint(member, index)
        score = value if not math.isnan(value) else (-math.inf if mode == "max" else math.inf)  # as ModelCheckpoint
        improved = _improved(score, member.best, mode)
        if improved:
            member.best = score
            checkpoint["harness"]["stacked"]["best"] = score
        written.stage(member.run, checkpoint, best=improved)

    def _stopping_rules(self, member: Member, value: float, monitor: str, mode: str) -> None:
        """``train.stop_at`` (StopAtTarget) and ``train.early_stop_patience`` (EarlyStopping) for one member."""
        train_cfg = self.train_cfg
        if train_cfg.stop_at is not None:
            target = float(train_cfg.stop_at)
            if value >= target if mode == "max" else value <= target:
                print(f"{member.run.path.name}: {monitor}={value:.4f} reached train.stop_at={target}: stopping",
                      flush=True)
                member.stopped = True
        if train_cfg.early_stop_patience is not None:
            if not math.isfinite(value):
                member.stopped = True
            elif _improved(value, member.early_best, mode):
                member.early_best, member.wait = value, 0
            else:
                member.wait += 1
                member.stopped = member.stopped or member.wait >= int(train_cfg.early_stop_patience)

    # testing ----------------------------------------------------------------------------------
    def test(self, members: list[Member]) -> dict[str, dict[str, Any]]:
        """Each member's summary (as :func:`train_and_test` returns it), tested with its best weights, by run
        directory name; a member whose test metrics are NaN gets ``error`` instead."""
        template = self.stack.template
        models = []
        for member in members:
            path = member.run.best_checkpoint if member.run.best_checkpoint.exists() else member.run.last_checkpoint
            model = copy.deepcopy(template).to(self.device)
            model.load_state_dict({k.removeprefix("model."): v for k, v in load_checkpoint(path)["state_dict"].items()},
                                  strict=False)
            models.append(model)
        stack = StackedClassifier(models)
        splits = test_splits(self.data)
        measured = {name: evaluate(stack, split, int(self.train_cfg.eval_batch_size),
                                   self.train_cfg.limit_eval_batches) for name, split in splits.items()}
        summaries = {}
        for index, member in enumerate(members):
            test_metrics: dict[str, float] = {}
            for name, (loss, acc) in measured.items():
                test_metrics.update({f"{name}/loss": float(loss[index]), f"{name}/acc": float(acc[index])})
            for name in splits:
                test_metrics[f"{name}/error"] = 1.0 - test_metrics[f"{name}/acc"]
            if any(math.isnan(v) for v in test_metrics.values()):
                member.error = DivergedError("test metrics are NaN")
                continue
            summary = member.recorder.summary()
            summary["metrics"] = {**summary["metrics"], **test_metrics}
            member.recorder.record_final(summary["steps"], summary["epochs"], test_metrics)
            analysis = run_analysis(models[index].cpu(), splits, member.cfg, member.run.path / "analysis")
            if analysis:
                summary["analysis"] = analysis
            summaries[member.run.path.name] = summary
        return summaries

