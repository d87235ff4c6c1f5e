"""The four-stage multi-task curriculum protocol of Shanahan et al. 2020 (Fig. 3):

1. ``1_scratch``         train on the target tasks from scratch (the baseline curve);
2. ``2_pretrain``        train on the curriculum (pre-training) tasks from scratch;
3. ``3_frozen_central``  from stage 2: freeze the input encoder and the central module, re-initialise the
                         output head, train on the target tasks;
4. ``4_frozen_encoder``  from stage 2: freeze the input encoder only, re-initialise the central module and
                         the head, train on the target tasks.

Each stage is an ordinary supervised fit stored under ``<run>/stages/<stage>/`` (its own curve
``metrics.csv``, checkpoints and ``results.json``), so Fig. 4/5 can be redrawn from the store, and an
interrupted protocol resumes at the stage (and checkpoint) where it stopped. The task one-hot ranges over
the target and curriculum tasks together, so the head's input size is the same in every stage.

Needs a multi-task task (``task.tasks`` and ``task.task_vocabulary``) and a model with ``encoder``,
``central`` and ``head`` parts and ``reinit_head()`` / ``reinit_central()``.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from omegaconf import open_dict
from torch import nn

from harness.errors import UserError
from harness.registry import load_entry
from harness.runners.supervised import intact_checkpoint, load_checkpoint, train_and_test
from harness.runs import Run

STAGES = (
    ("1_scratch", "target", None),
    ("2_pretrain", "pretrain", None),
    ("3_frozen_central", "target", "central"),
    ("4_frozen_encoder", "target", "encoder"),
)


class StageTracker:
    """Forwards a stage's metrics to the run's tracker, prefixed with the stage and on one step axis."""

    def __init__(self, tracker: Any, stage: str, step_offset: int) -> None:
        self.tracker, self.stage, self.offset = tracker, stage, step_offset

    def log(self, metrics: dict[str, float], step: int) -> None:
        self.tracker.log({f"{self.stage}/{k}": v for k, v in metrics.items()}, step=self.offset + step)


def _freeze(module: nn.Module) -> None:
    for parameter in module.parameters():
        parameter.requires_grad_(False)


def check_protocol_config(cfg: Any) -> None:
    """The protocol's settings and the task's support for it, checked before anything is written."""
    if "tasks" not in cfg.task or "task_vocabulary" not in cfg.task:
        raise UserError(f"protocol.name=curriculum needs a multi-task task; {cfg.task.name} has no task.tasks")
    if not cfg.protocol.target or not cfg.protocol.pretrain:
        raise UserError("protocol.name=curriculum needs protocol.target and protocol.pretrain task lists")


def check_model_parts(model: Any, name: str) -> None:
    parts = ("encoder", "central", "head")
    if not all(hasattr(model, part) for part in parts):
        raise UserError(f"protocol.name=curriculum needs a model with {', '.join(parts)} parts; {name} has not")


def _stage_config(cfg: Any, tasks: list[str], vocabulary: list[str]) -> Any:
    stage_cfg = copy.deepcopy(cfg)
    with open_dict(stage_cfg):
        stage_cfg.task.tasks = list(tasks)
        stage_cfg.task.task_vocabulary = list(vocabulary)
    return stage_cfg


def _pretrained_state(stage_run: Run) -> dict[str, torch.Tensor]:
    checkpoint = intact_checkpoint(stage_run, ("best", "last"))
    if checkpoint is None:
        raise RuntimeError(f"stage {stage_run.path.name} has no intact checkpoint to start the later stages from")
    state = load_checkpoint(checkpoint)["state_dict"]
    return {key.removeprefix("model."): value for key, value in state.items()}


def run_curriculum(cfg: Any, task_entry: str, model_entry: str, run: Run, tracker: Any) -> dict[str, Any]:
    """Run (or resume) the four stages; returns the run's summary with every stage's metrics."""
    import lightning.pytorch as pl

    target, pretrain = [str(t) for t in cfg.protocol.target], [str(t) for t in cfg.protocol.pretrain]
    vocabulary = list(dict.fromkeys(target + pretrain))
    task_cls, model_cls = load_entry(task_entry), load_entry(model_entry)
    stages: dict[str, Any] = {}
    pretrained: dict[str, torch.Tensor] | None = None
    offset = 0
    for index, (stage, which, frozen) in enumerate(STAGES):
        stage_run = Run(run.path / "stages" / stage)
        stage_cfg = _stage_config(cfg, target if which == "target" else pretrain, vocabulary)
        if stage_run.exists() and stage_run.status == "completed":
            summary = stage_run.read_results()
            print(f"stage {stage}: already completed", flush=True)
        else:
            print(f"stage {stage}: {which} tasks {', '.join(stage_cfg.task.tasks)}"
                  + (f"; frozen up to the {frozen}" if frozen else ""), flush=True)
            data = task_cls(stage_cfg).load()
            pl.seed_everything(int(cfg.seed) + index, workers=True, verbose=False)
            model = model_cls(stage_cfg.model, data.info)
            check_model_parts(model, str(cfg.model.name))
            if frozen is not None:
                assert pretrained is not None
                model.load_state_dict(pretrained)
                _freeze(model.encoder)
                if frozen == "central":
                    _freeze(model.central)
                else:
                    model.reinit_central()
                model.reinit_head()
            summary = train_and_test(stage_cfg, data, model, stage_run, StageTracker(tracker, stage, offset))
            stage_run.write_results({"status": "completed", "stage": stage, "tasks": list(stage_cfg.task.tasks),
                                     **summary})
        stages[stage] = summary
        offset += int(summary.get("steps", 0))
        if stage == "2_pretrain":
            pretrained = _pretrained_state(stage_run)
    metrics = {f"{stage}/{key}": value for stage, summary in stages.items()
               for key, value in summary["metrics"].items()}
    return {
        "metrics": metrics,
        "best": stages["3_frozen_central"].get("best"),
        "steps": offset,
        "epochs": sum(int(s.get("epochs", 0)) for s in stages.values()),
        "throughput": stages["1_scratch"].get("throughput", {}),
        "stages": {stage: {"tasks": s.get("tasks"), "best": s.get("best")} for stage, s in stages.items()},
    }
