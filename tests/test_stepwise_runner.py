"""The stepwise runner (Algorithm 1 of the Updater-Extractor paper) on a toy stream: stop-gradient, update
frequency, full BPTT, the curriculum, evaluation and an interrupted run that resumes to the same numbers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from omegaconf import OmegaConf
from torch import nn

from harness.runners import stepwise
from harness.runners.stepwise_eval import Tally, evaluate, query_grid, write_rollout_csv
from harness.runs import Run
from harness.streams import StreamStep, check_stream_info, check_stream_step, detach_state

INFO = {"instruction_fields": [2], "query_fields": [1], "num_answers": 2, "query_groups": ["recall"],
        "max_instructions": 1, "max_queries": 1}


@dataclass
class Bits:
    bit: torch.Tensor  # [B] the bit told at step 1


class RememberTheBit:
    """Step 1 tells a bit; every step asks for it (a recall query)."""

    info = INFO

    def reset(self, batch_size: int, generator: torch.Generator, split: str) -> Bits:
        return Bits(torch.randint(0, 2, (batch_size,), generator=generator))

    def step(self, worlds: Bits, t: int, generator: torch.Generator, split: str) -> tuple[Bits, StreamStep]:
        batch = len(worlds.bit)
        told = torch.full((batch, 1), t == 1, dtype=torch.bool)
        return worlds, StreamStep(instructions=worlds.bit.view(batch, 1, 1), instruction_mask=told,
                                  queries=torch.zeros(batch, 1, 1, dtype=torch.long),
                                  query_mask=torch.ones(batch, 1, dtype=torch.bool), answers=worlds.bit.view(batch, 1),
                                  query_group=torch.zeros(batch, 1, dtype=torch.long))


class TinyRecurrent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(2, 8)
        self.cell = nn.Linear(16, 8)
        self.out = nn.Linear(8, 2)
        self.saw_grad: list[bool] = []  # whether each update's incoming state carried a graph

    def initial_state(self, batch_size: int) -> torch.Tensor:
        return torch.zeros(batch_size, 8)

    def update(self, state: torch.Tensor, step: StreamStep) -> torch.Tensor:
        self.saw_grad.append(state.requires_grad)
        told = self.embed(step.instructions[:, :, 0]) * step.instruction_mask.unsqueeze(-1)  # [B, 1, 8]
        return torch.tanh(self.cell(torch.cat([state, told.sum(dim=1)], dim=-1)))

    def extract(self, state: torch.Tensor, step: StreamStep) -> torch.Tensor:
        return self.out(state).unsqueeze(1).expand(-1, step.queries.shape[1], -1)  # [B, Q, 2]


def config(**stepwise_overrides: Any) -> Any:
    defaults = OmegaConf.load(Path(stepwise.__file__).parents[1] / "defaults_stepwise.yaml")
    cfg = OmegaConf.merge(defaults, {"seed": 0, "model": {"name": "tiny"},
                                     "stepwise": {"batch_size": 16, "steps": 5, "iterations": 6, "eval_every": 3,
                                                  "eval_batch": 32, "horizons": [10, 20], "horizon_batch": 8,
                                                  "log_every": 1, **stepwise_overrides}})
    return cfg


class CountingSGD(torch.optim.SGD):
    steps = 0

    def step(self, closure: Any = None) -> Any:
        CountingSGD.steps += 1
        return super().step(closure)


@pytest.mark.parametrize(("bptt", "update_freq", "optimiser_steps"), [(False, 1, 5), (False, 2, 3), (True, 1, 1)])
def test_one_cycle_stops_gradients_and_steps_the_optimiser(bptt, update_freq, optimiser_steps):
    cfg = config(bptt=bptt, update_freq=update_freq)
    model = TinyRecurrent()
    CountingSGD.steps = 0
    optimizer = CountingSGD(model.parameters(), lr=0.1)
    numbers = stepwise.train_cycle(model, RememberTheBit(), optimizer, cfg, 5, torch.Generator().manual_seed(0), 0)
    assert CountingSGD.steps == optimiser_steps  # every update_freq steps, and at the trajectory's end
    # Algorithm 1: w_{t-1} enters the Updater without its graph; full BPTT keeps it
    assert model.saw_grad == [False] + [bptt] * 4
    assert 0.0 <= numbers["train/acc"] <= 1.0 and "train/final/recall/acc" in numbers and "monitor" in numbers


def test_stop_gradient_gives_the_gradient_of_each_step_alone():
    """With update_freq = T the accumulated gradient is the sum of each step's gradient with w_{t-1} fixed."""
    torch.manual_seed(0)
    model = TinyRecurrent()
    task = RememberTheBit()
    captured: dict[str, torch.Tensor] = {}

    class Capture(torch.optim.SGD):
        def step(self, closure: Any = None) -> Any:
            captured["grad"] = model.cell.weight.grad.clone()
            return None

    stepwise.train_cycle(model, task, Capture(model.parameters(), lr=0.0), config(update_freq=5), 5,
                         torch.Generator().manual_seed(3), 0)
    # by hand: the states of the trajectory without gradients, then each step's loss from a fixed w_{t-1}
    generator = torch.Generator().manual_seed(3)
    worlds = task.reset(16, generator, "train")
    state, expected = model.initial_state(16), torch.zeros_like(model.cell.weight)
    for t in range(1, 6):
        worlds, step = task.step(worlds, t, generator, "train")
        model.zero_grad()
        new_state = model.update(state.detach(), step)
        loss = nn.functional.cross_entropy(model.extract(new_state, step).flatten(0, 1), step.answers.flatten())
        loss.backward()
        expected += model.cell.weight.grad
        state = new_state.detach()
    torch.testing.assert_close(captured["grad"], expected)


def test_curriculum_lengthens_after_patience():
    curriculum = stepwise.Curriculum.from_config(config(steps=4, curriculum={"enabled": True, "start": 1,
                                                                             "threshold": 0.9, "patience": 2}).stepwise)
    assert curriculum.length == 1
    assert [curriculum.observe(a) for a in (0.95, 0.5, 0.95, 0.99)] == [False, False, False, True]
    assert curriculum.length == 2
    for _ in range(10):
        curriculum.observe(1.0)
    assert curriculum.length == 4  # never past stepwise.steps
    assert stepwise.Curriculum.from_config(config(steps=4).stepwise).length == 4  # disabled: the full length


def test_query_grid_is_dense_then_logarithmic_and_holds_every_horizon():
    grid = query_grid(10000, [10, 100, 1000, 10000])
    assert grid[:100] == list(range(1, 101)) and grid == sorted(set(grid))
    assert {10, 100, 1000, 10000} <= set(grid) and len(grid) < 250
    assert query_grid(30, [10, 30]) == list(range(1, 31))


def test_tally_counts_per_group():
    step = RememberTheBit().step(RememberTheBit().reset(4, torch.Generator().manual_seed(0), "val"), 1,
                                 torch.Generator(), "val")[1]
    tally = Tally(["recall"])
    tally.add(step, torch.tensor([[True], [False], [True], [True]]), loss=0.5)
    assert tally.metrics("val/") == {"val/acc": 0.75, "val/recall/acc": 0.75, "val/loss": 0.5}


def test_evaluate_is_deterministic_and_leaves_the_model_training():
    model = TinyRecurrent()
    first = evaluate(model, RememberTheBit(), "val", 8, 3, seed=5)
    assert first == evaluate(model, RememberTheBit(), "val", 8, 3, seed=5)
    assert set(first) == {"acc", "recall/acc", "loss", "final/acc", "final/recall/acc"} and model.training


def test_contract_checks_name_the_tensor():
    from harness.errors import UserError

    check_stream_info("toy", INFO)
    with pytest.raises(UserError, match="lacks num_answers"):
        check_stream_info("toy", {k: v for k, v in INFO.items() if k != "num_answers"})
    task = RememberTheBit()
    _, step = task.step(task.reset(2, torch.Generator(), "train"), 1, torch.Generator(), "train")
    check_stream_step("toy", step, INFO, 2)
    step.answers = step.answers.float()
    with pytest.raises(UserError, match="step tensor 'answers' is float32"):
        check_stream_step("toy", step, INFO, 2)
    assert detach_state((torch.ones(1, requires_grad=True) * 2, [torch.ones(1, requires_grad=True) * 3]))[0].grad_fn \
        is None


class Tracker:
    def log(self, row: dict[str, float], step: int) -> None:
        pass


@pytest.mark.parametrize("overrides", [{}, {"log_every": 2, "iterations": 8}])
def test_interrupted_run_resumes_to_the_same_numbers(tmp_path, monkeypatch, overrides):
    """Killed at cycle 5, after the checkpoint of cycle 3: the same curve and numbers as a run never killed, also
    when a curve row (cycles 3 and 4, with log_every 2) straddles the checkpoint."""
    cfg = config(**overrides)
    torch.manual_seed(0)
    whole = stepwise.train_stepwise(cfg, RememberTheBit(), TinyRecurrent(), Run(tmp_path / "whole"), Tracker())
    assert whole["steps"] == cfg.stepwise.iterations and (tmp_path / "whole" / "rollout.csv").exists()
    assert {"test/acc", "rollout/step_10/acc", "rollout/step_20/recall/acc"} <= set(whole["metrics"])

    # resumed from a different initialisation: the checkpoint must win
    resumed = killed_at_five_then_resumed(cfg, tmp_path / "split", monkeypatch, resume_seed=123)
    assert resumed["metrics"] == whole["metrics"] and resumed["best"] == whole["best"]
    assert curve_without_timing(tmp_path / "split") == curve_without_timing(tmp_path / "whole")


def killed_at_five_then_resumed(cfg: Any, run_path: Path, monkeypatch: pytest.MonkeyPatch,
                                resume_seed: int | None = None) -> dict[str, Any]:
    """Train ``cfg`` (seed 0) into ``run_path`` with a Ctrl-C at cycle 5, after the checkpoint of cycle 3, then run
    the same command again (torch seeded with ``resume_seed`` first, where given): the resumed run's results."""
    killed_at_five(cfg, run_path, monkeypatch)
    if resume_seed is not None:
        torch.manual_seed(resume_seed)
    return stepwise.train_stepwise(cfg, RememberTheBit(), TinyRecurrent(), Run(run_path), Tracker())


def killed_at_five(cfg: Any, run_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Train ``cfg`` (seed 0) into ``run_path`` with a Ctrl-C at cycle 5, after the checkpoint of cycle 3."""
    real_cycle, calls = stepwise.train_cycle, {"n": 0}

    def interrupted_at_five(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return real_cycle(*args, **kwargs)

    monkeypatch.setattr(stepwise, "train_cycle", interrupted_at_five)
    torch.manual_seed(0)
    with pytest.raises(KeyboardInterrupt):
        stepwise.train_stepwise(cfg, RememberTheBit(), TinyRecurrent(), Run(run_path), Tracker())
    monkeypatch.setattr(stepwise, "train_cycle", real_cycle)


@pytest.mark.parametrize("left", ["no checkpoint", "a damaged checkpoint"])
def test_training_from_the_start_is_said_only_where_a_checkpoint_was_damaged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], left: str) -> None:
    """Where no checkpoint was saved, the run's header says it starts again (harness.runners.existing_run); the
    runner adds nothing. A damaged one is named, and that training starts from the beginning."""
    cfg = config()
    killed_at_five(cfg, tmp_path, monkeypatch)
    for checkpoint in (tmp_path / "checkpoints").glob("*.ckpt"):
        if left == "no checkpoint":
            checkpoint.unlink()
        else:
            checkpoint.write_bytes(b"not a checkpoint")
    capsys.readouterr()
    stepwise.train_stepwise(cfg, RememberTheBit(), TinyRecurrent(), Run(tmp_path), Tracker())
    said = capsys.readouterr().out
    assert ("no intact checkpoint: training from the start" in said) == (left == "a damaged checkpoint")


def curve_without_timing(run_path: Path) -> list[dict[str, str]]:
    """metrics.csv without its wall-clock column (throughput differs between any two runs)."""
    import csv

    with (run_path / "metrics.csv").open() as handle:
        return [{k: v for k, v in row.items() if k != "train/world_steps_per_s"} for row in csv.DictReader(handle)]


def test_rollout_csv_leaves_unasked_groups_empty(tmp_path):
    write_rollout_csv(tmp_path / "r.csv", [{"step": 1.0, "acc": 0.5}, {"step": 2.0, "acc": 1.0, "recall/acc": 1.0}])
    assert (tmp_path / "r.csv").read_text() == "step,acc,recall/acc\n1,0.5,\n2,1,1\n"


@pytest.mark.parametrize(("task_settings", "start", "first_asked"),
                         [({}, 1, 2), ({"first_recall_step": 4}, 2, 4), ({"length": 5, "recall_prob": 0.0}, 1, 5)])
def test_a_curriculum_whose_first_trajectories_never_ask_the_monitored_group_is_refused(task_settings, start,
                                                                                      first_asked):
    """LSTM recall asks no recall at step 1 (nor before task.first_recall_step): a curriculum monitoring ``recall``
    and starting there would never lengthen its trajectories; one line names the first step that asks it."""
    from harness.errors import UserError
    from tasks.lstm_recall.generator import DEFAULTS
    from tasks.lstm_recall.task import LstmRecallTask

    task = LstmRecallTask(OmegaConf.create({"task": {"name": "lstm_recall", **DEFAULTS, **task_settings}}))
    spec = config(steps=6, monitor_group="recall", curriculum={"enabled": True, "start": start}).stepwise
    with pytest.raises(UserError, match=rf"no recall query is asked at step {start} .*curriculum.start={first_asked}"):
        stepwise.check_curriculum_monitor(task, spec)
    spec.curriculum.start = first_asked
    stepwise.check_curriculum_monitor(task, spec)  # asked there: accepted
    spec.curriculum.enabled = False
    spec.curriculum.start = start
    stepwise.check_curriculum_monitor(task, spec)  # no curriculum: nothing reads the group


def test_a_curriculum_monitoring_a_group_no_step_asks_is_refused():
    """Game of Life without interventions never asks an ``intervened`` query."""
    from harness.errors import UserError
    from tasks.game_of_life.generator import DEFAULTS
    from tasks.game_of_life.task import GameOfLifeTask

    task = GameOfLifeTask(OmegaConf.create({"task": {"name": "game_of_life", **DEFAULTS, "size": 4}}))
    spec = config(steps=3, monitor_group="intervened", curriculum={"enabled": True, "start": 1}).stepwise
    with pytest.raises(UserError, match=r"no step up to stepwise.steps \(3\) asks one"):
        stepwise.check_curriculum_monitor(task, spec)
