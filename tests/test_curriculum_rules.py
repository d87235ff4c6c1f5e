"""The four-stage protocol of Shanahan et al. 2020 (§4, Fig. 3) as harness/runners/curriculum.py runs it, on a tiny
model and task: stage 2 pre-trains on the curriculum tasks; stage 3 starts from stage 2's weights with the input
encoder and the central module frozen and the output head re-initialised; stage 4 freezes the encoder only and
re-initialises the central module and the head. A frozen part receives no update while its stage trains."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf
from torch import nn

from harness.data import TARGET, TaskData, TensorDictDataset
from harness.runners.curriculum import run_curriculum
from harness.runners.supervised import load_checkpoint
from harness.runs import Run

HARNESS = Path(__file__).resolve().parents[1] / "harness"
STARTS: list[dict[str, torch.Tensor]] = []  # each stage's weights when its training begins
PARTS = ("encoder", "central", "head")


class TinyTasks:
    """Two features; the answer is whether their sum, shifted by the task's index, is positive."""

    def __init__(self, cfg: Any) -> None:
        self.tasks, self.vocabulary = list(cfg.task.tasks), list(cfg.task.task_vocabulary)

    def _split(self, seed: int) -> TensorDictDataset:
        generator = torch.Generator().manual_seed(seed)
        x = torch.randn(16, 2, generator=generator)
        ids = torch.tensor([self.vocabulary.index(self.tasks[i % len(self.tasks)]) for i in range(16)])
        return TensorDictDataset({"x": x, "task_id": ids, TARGET: (x.sum(dim=1) > ids - 1).long()})

    def load(self) -> TaskData:
        return TaskData(train=self._split(0), val=self._split(1), test=self._split(2),
                        info={"num_tasks": len(self.vocabulary)}, source="tiny")


class TinyModel(nn.Module):
    def __init__(self, cfg: Any, info: dict[str, Any]) -> None:
        super().__init__()
        self.encoder, self.central, self.head = nn.Linear(2, 4), nn.Linear(4, 4), nn.Linear(4 + info["num_tasks"], 2)
        self.num_tasks, self.started = info["num_tasks"], False

    def forward(self, x: torch.Tensor, task_id: torch.Tensor) -> torch.Tensor:
        if self.training and not self.started:
            self.started = True
            STARTS.append({k: v.detach().clone() for k, v in self.state_dict().items()})
        hidden = torch.tanh(self.central(torch.tanh(self.encoder(x))))
        return self.head(torch.cat([hidden, nn.functional.one_hot(task_id, self.num_tasks).float()], dim=-1))

    def reinit_head(self) -> None:
        self.head.reset_parameters()

    def reinit_central(self) -> None:
        self.central.reset_parameters()


class Quiet:
    def log(self, row: dict[str, float], step: int) -> None:
        pass


def _part(state: dict[str, torch.Tensor], part: str) -> list[torch.Tensor]:
    return [value for key, value in sorted(state.items()) if key.removeprefix("model.").startswith(f"{part}.")]


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor], part: str) -> bool:
    return all(torch.equal(x, y) for x, y in zip(_part(a, part), _part(b, part), strict=True))


def test_the_four_stages_start_from_the_pretraining_and_freeze_what_they_should(tmp_path: Path) -> None:
    cfg = OmegaConf.merge(OmegaConf.load(HARNESS / "defaults.yaml"),
                          OmegaConf.load(HARNESS / "defaults_supervised.yaml"))
    cfg.merge_with({"seed": 0, "model": {"name": "tiny"},
                    "task": {"name": "tiny", "tasks": ["t1"], "task_vocabulary": ["t1"]},
                    "protocol": {"name": "curriculum", "target": ["t1", "t2"], "pretrain": ["p1"]},
                    "optim": {"name": "sgd", "lr": 0.5},
                    "train": {"batch_size": 8, "eval_batch_size": 16, "max_epochs": 2, "threads": 1},
                    "analysis": {"enabled": False}})
    STARTS.clear()
    run = Run(tmp_path / "run")
    run_curriculum(cfg, f"{__name__}:TinyTasks", f"{__name__}:TinyModel", run, Quiet())
    stages = run.path / "stages"
    names = ["1_scratch", "2_pretrain", "3_frozen_central", "4_frozen_encoder"]
    assert [json.loads((stages / n / "results.json").read_text())["tasks"] for n in names] == \
        [["t1", "t2"], ["p1"], ["t1", "t2"], ["t1", "t2"]]
    scratch = load_checkpoint(stages / "1_scratch" / "checkpoints" / "best.ckpt")["state_dict"]
    pre = load_checkpoint(stages / "2_pretrain" / "checkpoints" / "best.ckpt")["state_dict"]
    pre = {key.removeprefix("model."): value for key, value in pre.items()}
    assert not _same(pre, scratch, "encoder")  # a different stage, trained on other tasks
    start3, start4 = STARTS[2], STARTS[3]
    assert _same(start3, pre, "encoder") and _same(start3, pre, "central") and not _same(start3, pre, "head")
    assert _same(start4, pre, "encoder") and not _same(start4, pre, "central") and not _same(start4, pre, "head")
    end3 = load_checkpoint(stages / "3_frozen_central" / "checkpoints" / "last.ckpt")["state_dict"]
    end4 = load_checkpoint(stages / "4_frozen_encoder" / "checkpoints" / "last.ckpt")["state_dict"]
    end3, end4 = ({k.removeprefix("model."): v for k, v in end.items()} for end in (end3, end4))
    assert _same(end3, pre, "encoder") and _same(end3, pre, "central") and not _same(end3, start3, "head")
    assert _same(end4, pre, "encoder") and not _same(end4, start4, "central") and not _same(end4, start4, "head")
