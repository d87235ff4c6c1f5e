"""Stacked runs (harness/runners/stacked.py): K seeds of one config trained as one computation give each member the
run its solo run gives: bit for bit with K = 1, within float tolerance for K > 1 (members are independent)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from harness.cli import main
from harness.config import compose
from harness.errors import UserError
from harness.optim import build_optimizer
from harness.runners.launch import launch
from harness.runners.stacked import StackedTrainer, restack
from harness.runners.stacked_checkpoints import STAGED, EpochCheckpoints, settle_staged, staged
from harness.runners.stacked_launch import check_stackable, launch_stack, split_resume_line
from harness.runners.stacked_model import StackedClassifier, clip_per_member, member_losses
from tests.conftest import SHARED_DATA, curves

TASK, MODEL = "relations_game", "predinet"
SEEDS = (0, 1, 2)
TOLERANCE = 1e-5


def _composed(seed: int, *overrides: str):  # noqa: ANN202 - harness.config.Composed
    return compose(TASK, MODEL, "smoke", [f"seed={seed}", "train.threads=1", *overrides])


def _run(runs: Path, seed: int) -> Path:
    (found,) = runs.glob(f"{TASK}/{MODEL}/*-s{seed}-*")
    return found


def curve_numbers(run: Path) -> list[dict[str, float]]:
    """The rows of a run's curves, as numbers (empty cells left out)."""
    return [{k: float(v) for k, v in row.items() if v != ""} for row in curves(run)]


@contextmanager
def training_env(root: Path) -> Iterator[None]:
    """The environment of a module's trainings: their cache under ``root``, the shared data, no wandb."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HARNESS_CACHE_DIR", str(root / "cache"))
        patch.setenv("HARNESS_DATA_DIR", str(SHARED_DATA))
        patch.setenv("WANDB_MODE", "disabled")
        yield


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """The smoke runs of seeds 0, 1, 2 trained alone, as one stack, and seed 0 as a stack of one."""
    root = tmp_path_factory.mktemp("stacked")
    with training_env(root):
        for seed in SEEDS:
            assert launch(_composed(seed), runs_dir=root / "solo") == 0
        assert launch_stack([_composed(seed) for seed in SEEDS], runs_dir=root / "stack") == 0
        assert launch_stack([_composed(0)], runs_dir=root / "one") == 0
        yield {"solo": root / "solo", "stack": root / "stack", "one": root / "one", "root": root}


@pytest.mark.slow
def test_a_stack_of_one_is_the_solo_run_bit_for_bit(stores: dict[str, Path]) -> None:
    solo, one = _run(stores["solo"], 0), _run(stores["one"], 0)
    assert solo.name == one.name  # the same config, the same run id
    assert curves(solo) == curves(one)  # every logged step, epoch row and the test row, as text
    a, b = (json.loads((run / "results.json").read_text()) for run in (solo, one))
    assert a["metrics"] == b["metrics"] and a["best"] == b["best"] and a["steps"] == b["steps"] == 8
    assert b["stack"] == [one.name]
    # best.ckpt and last.ckpt hold the same tensors (both trainers write last.ckpt after every validation)
    for name in ("best.ckpt", "last.ckpt"):
        solo_state = torch.load(solo / "checkpoints" / name, weights_only=True)["state_dict"]
        one_state = torch.load(one / "checkpoints" / name, weights_only=True)["state_dict"]
        assert solo_state.keys() == one_state.keys()
        assert all(torch.equal(solo_state[k], one_state[k]) for k in solo_state), name


@pytest.mark.slow
def test_each_member_of_a_stack_follows_its_solo_run(stores: dict[str, Path]) -> None:
    finals = []
    for seed in SEEDS:
        solo, member = curve_numbers(_run(stores["solo"], seed)), curve_numbers(_run(stores["stack"], seed))
        assert [row.keys() for row in solo] == [row.keys() for row in member]
        worst = max(abs(a[k] - b[k]) for a, b in zip(solo, member, strict=True) for k in a)
        assert worst < TOLERANCE, f"seed {seed}: a member's curve is {worst} off its solo run"
        results = json.loads((_run(stores["stack"], seed) / "results.json").read_text())
        assert results["status"] == "completed" and len(results["stack"]) == len(SEEDS)
        assert (_run(stores["stack"], seed) / "checkpoints" / "best.ckpt").exists()
        finals.append(member[-2]["train/epoch_loss"])
    assert len(set(finals)) == len(SEEDS)  # the members really are different runs


@pytest.mark.slow
def test_members_stopping_at_different_epochs_leave_the_stack_as_their_solo_runs_stop(
        stores: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(stores["root"] / "cache"))
    monkeypatch.setenv("HARNESS_DATA_DIR", str(SHARED_DATA))
    overrides = ("train.stop_at=0.51", "train.max_epochs=3")  # seed 2 reaches it at epoch 2
    solo_runs, stacked_runs = stores["root"] / "stop_solo", stores["root"] / "stop_stack"
    for seed in SEEDS:
        assert launch(_composed(seed, *overrides), runs_dir=solo_runs) == 0
    assert launch_stack([_composed(seed, *overrides) for seed in SEEDS], runs_dir=stacked_runs) == 0
    steps = []
    for seed in SEEDS:
        solo, member = curve_numbers(_run(solo_runs, seed)), curve_numbers(_run(stacked_runs, seed))
        assert [row.keys() for row in solo] == [row.keys() for row in member]
        assert max(abs(a[k] - b[k]) for a, b in zip(solo, member, strict=True) for k in a) < TOLERANCE
        steps.append(json.loads((_run(stacked_runs, seed) / "results.json").read_text())["steps"])
    assert len(set(steps)) > 1, f"every member stopped at the same step {steps}: nothing left the stack"


def test_a_stack_differing_in_more_than_seed_is_refused() -> None:
    with pytest.raises(UserError, match=r"differ only in seed.*train\.batch_size"):
        check_stackable([_composed(0), _composed(1, "train.batch_size=20")])
    with pytest.raises(UserError, match="repeats a seed"):
        check_stackable([_composed(0), _composed(0)])
    with pytest.raises(UserError, match="decay_below_val_loss"):
        check_stackable([_composed(0, "optim.decay_below_val_loss=0.5")])
    with pytest.raises(UserError, match="train.max_steps is not implemented for stacks"):
        check_stackable([_composed(0, "train.max_steps=5"), _composed(1, "train.max_steps=5")])


@pytest.mark.slow
def test_an_interrupted_stack_resumes_to_the_same_curves(stores: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(stores["root"] / "cache"))
    monkeypatch.setenv("HARNESS_DATA_DIR", str(SHARED_DATA))
    runs = stores["root"] / "resumed"
    original = StackedTrainer._end_epoch

    def end_then_kill(self: StackedTrainer) -> None:
        original(self)
        raise KeyboardInterrupt

    monkeypatch.setattr(StackedTrainer, "_end_epoch", end_then_kill)
    with pytest.raises(KeyboardInterrupt):
        launch_stack([_composed(seed) for seed in SEEDS[:2]], runs_dir=runs)
    assert json.loads((_run(runs, 0) / "results.json").read_text())["status"] == "interrupted"
    monkeypatch.setattr(StackedTrainer, "_end_epoch", original)
    capsys.readouterr()  # what the interrupted stack printed
    seeds = ",".join(str(seed) for seed in SEEDS[:2])  # the same command, from the command line
    assert main(["bench", "--task", TASK, "--model", MODEL, "--profile", "smoke", "--seeds", seeds,
                 "--runs-dir", str(runs), "train.threads=1"]) == 0
    lines = capsys.readouterr().out.splitlines()  # the data line a solo run prints, once for the stack
    assert sum(line.startswith("data: ") for line in lines) == 1, lines
    for seed in SEEDS[:2]:  # a stack of 2 against the stack of 3: the same members, within float tolerance
        resumed, uninterrupted = curve_numbers(_run(runs, seed)), curve_numbers(_run(stores["stack"], seed))
        assert [row.keys() for row in resumed] == [row.keys() for row in uninterrupted]
        assert max(abs(a[k] - b[k]) for a, b in zip(resumed, uninterrupted, strict=True) for k in a) < TOLERANCE


class _Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.Linear(6, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x)  # [B, 3]


def _tiny_stack(k: int) -> StackedClassifier:
    models = []
    for seed in range(k):
        torch.manual_seed(seed)
        models.append(_Tiny())
    return StackedClassifier(models)


def _adam_steps(stack: StackedClassifier, optimizer: torch.optim.Optimizer, data: list[tuple], keep: list[int]) -> None:
    for x, y in data:
        optimizer.zero_grad()
        loss, _ = member_losses(stack.logits({"x": x[keep]}), y[keep])
        loss.sum().backward()
        optimizer.step()


@pytest.mark.slow
def test_a_ctrl_c_between_two_members_checkpoints_waits_until_every_member_is_stored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, foreground_ctrl_c: None) -> None:
    """A Ctrl-C landing after one member's checkpoint but before the next one's left them an epoch apart, so the
    stack resumed as two stacks (and its curves drifted by rounding from an uninterrupted one's); the epoch's
    writes now finish first, for every member."""
    import os
    import signal

    from harness.runners.supervised import load_checkpoint

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HARNESS_DATA_DIR", str(SHARED_DATA))
    original = StackedTrainer._save

    def save_then_ctrl_c(self, member, index, *args):
        original(self, member, index, *args)
        if index == 0:  # the first member is stored; the others are not yet
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(StackedTrainer, "_save", save_then_ctrl_c)
    runs = tmp_path / "runs"
    with pytest.raises(KeyboardInterrupt):
        launch_stack([_composed(seed) for seed in SEEDS], runs_dir=runs)
    epochs = {load_checkpoint(_run(runs, seed) / "checkpoints" / "last.ckpt")["epoch"] for seed in SEEDS}
    assert len(epochs) == 1, epochs
    assert len({len(curves(_run(runs, seed))) for seed in SEEDS}) == 1  # each member's rows up to that epoch


def _no_staged_files(runs: Path) -> bool:
    return not list(runs.rglob(f"*{STAGED}"))


def _fail_then_resume(owner: type, name: str, failing: Any, runs: Path, stores: dict[str, Path],
                      monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    """Train the stack of seeds 0, 1, 2 into ``runs`` with ``owner.name`` replaced by ``failing`` (which raises
    OSError), then again as it is; returns what the second command printed."""
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(stores["root"] / "cache"))
    monkeypatch.setenv("HARNESS_DATA_DIR", str(SHARED_DATA))
    original = getattr(owner, name)
    monkeypatch.setattr(owner, name, failing)
    with pytest.raises(OSError):
        launch_stack([_composed(seed) for seed in SEEDS], runs_dir=runs)
    monkeypatch.setattr(owner, name, original)
    capsys.readouterr()
    assert launch_stack([_composed(seed) for seed in SEEDS], runs_dir=runs) == 0
    return capsys.readouterr().out


@pytest.mark.slow
def test_a_failed_write_between_two_members_checkpoints_discards_that_epoch_and_resumes_as_one_stack(
        stores: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A kill (SIGKILL, the OOM killer) or a failed write between two members' checkpoints left them an epoch apart,
    to resume as two stacks whose rounding differs from the whole stack's; an epoch's checkpoints are now staged
    and put in place only when every member's are written, so the stack trains that epoch again, as one."""
    original = StackedTrainer._save

    def save_then_fail(self, member, index, *args):
        original(self, member, index, *args)
        if index == 0 and self.epoch == 1:  # the second epoch: the first member is written, the others are not
            raise OSError("no space left on device")

    runs = tmp_path / "runs"
    out = _fail_then_resume(StackedTrainer, "_save", save_then_fail, runs, stores, monkeypatch, capsys)
    assert f"{_run(runs, 0).name}: its staged checkpoint of epoch 2, which not every member had written, is " \
           "discarded (the stack trains that epoch again)" in out, out
    assert "resuming 3 member(s) after epoch 1" in out and "different epochs" not in out, out
    assert _no_staged_files(runs)
    for seed in SEEDS:  # the uninterrupted stack's numbers, bit for bit
        assert curve_numbers(_run(runs, seed)) == curve_numbers(_run(stores["stack"], seed))


@pytest.mark.slow
def test_a_kill_while_the_staged_checkpoints_are_renamed_is_finished_on_resume(
        stores: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Once every member's checkpoints are staged, a kill during the renames leaves some members' in place and
    others' staged: the next start puts the rest in place (nothing is trained twice)."""
    import os

    original, commits = EpochCheckpoints.commit, []

    def commit_then_die(self: EpochCheckpoints) -> None:
        commits.append(self)
        if len(commits) == 1:
            return original(self)
        os.replace(*self.files[0])  # the first member's last.ckpt, then the kill
        raise OSError("killed")

    runs = tmp_path / "runs"
    out = _fail_then_resume(EpochCheckpoints, "commit", commit_then_die, runs, stores, monkeypatch, capsys)
    for seed in SEEDS[1:]:  # seed 0's last.ckpt was put in place before the kill (its best.ckpt maybe not)
        assert f"{_run(runs, seed).name}: its checkpoints of epoch 2, which every member had written, are put in " \
               "place" in out, out
    for seed in SEEDS:
        assert curve_numbers(_run(runs, seed)) == curve_numbers(_run(stores["stack"], seed))
    assert "resuming" not in out and _no_staged_files(runs), out  # the members were only tested


def test_a_staged_checkpoint_that_cannot_be_read_is_discarded(tmp_path: Path) -> None:
    from harness.runs import Run

    run = Run(tmp_path / "runs" / TASK / MODEL / "r")
    run.checkpoint_dir.mkdir(parents=True)
    staged(run.last_checkpoint).write_bytes(b"truncated")
    assert settle_staged([run]) == ["r: its staged checkpoint that cannot be read is discarded (the stack trains that "
                                    "epoch again)"]
    assert not staged(run.last_checkpoint).exists()
    assert settle_staged([run]) == []


def test_the_split_line_names_each_group_and_only_unfinished_members() -> None:
    assert split_resume_line([3, 3, 3]) is None
    assert split_resume_line(["done", "done", 5]) is None  # finished members are only tested
    assert split_resume_line([2, "solo", 2]) is None
    assert "resume as 2 stacks (1 after epoch 1, 2 after epoch 2)" in str(split_resume_line([2, 1, 2]))


def test_a_stack_whose_member_another_command_is_training_is_refused(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Each member's folder is held as a solo run's is (launch.claim_run): a stack started moments after another
    command of one of its members stops in one line, before it writes."""
    import fcntl
    import os

    from harness.runners.build_checks import prepare_checked

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HARNESS_DATA_DIR", str(SHARED_DATA))
    stack = [_composed(seed) for seed in SEEDS[:2]]
    prepare_checked(stack[1])  # its data fingerprint, part of its run id
    folder = tmp_path / "runs" / TASK / MODEL / stack[1].run_id
    folder.mkdir(parents=True)
    holder = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(UserError, match=f"run {stack[1].run_id} is being trained by another process"):
            launch_stack(stack, runs_dir=tmp_path / "runs")
    finally:
        os.close(holder)
    assert not list((tmp_path / "runs").rglob("results.json"))


def test_a_member_leaving_the_stack_changes_nothing_for_the_others() -> None:
    cfg = _composed(0, "optim.name=adam").cfg
    generator = torch.Generator().manual_seed(0)
    data = [(torch.randn(3, 5, 6, generator=generator), torch.randint(0, 3, (3, 5), generator=generator))
            for _ in range(6)]
    full = _tiny_stack(3)
    full_optimizer = build_optimizer(full.parameters(), cfg.optim)
    _adam_steps(full, full_optimizer, data, [0, 1, 2])
    dropped = _tiny_stack(3)
    optimizer = build_optimizer(dropped.parameters(), cfg.optim)
    _adam_steps(dropped, optimizer, data[:3], [0, 1, 2])
    dropped, optimizer = restack(dropped, optimizer, [0, 2], cfg)
    _adam_steps(dropped, optimizer, data[3:], [0, 2])
    for name, tensor in full.params.items():
        assert torch.allclose(tensor[[0, 2]], dropped.params[name], atol=1e-6), name


def test_clipping_is_per_member_as_for_one_model() -> None:
    stack = _tiny_stack(2)
    x, y = torch.randn(2, 4, 6) * 50, torch.randint(0, 3, (2, 4))
    member_losses(stack.logits({"x": x}), y)[0].sum().backward()
    clip_per_member(stack.parameters(), 0.5)
    for k in range(2):
        alone = stack.member_module(k)
        nn.functional.cross_entropy(alone(x[k]), y[k]).backward()
        torch.nn.utils.clip_grad_norm_(alone.parameters(), 0.5)
        for name, param in alone.named_parameters():
            assert torch.allclose(stack.params[name].grad[k], param.grad, atol=1e-6), name


def test_cli_refuses_seed_and_seeds_together(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--task", TASK, "--model", MODEL, "--profile", "smoke", "--seed", "0", "--seeds", "0,1"]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["bench", "--task", TASK, "--model", MODEL, "--profile", "smoke", "--seeds", "0,x"]) == 2
    assert "comma-separated integers" in capsys.readouterr().err


def test_stacked_benchmark_reports_each_variant_and_the_grid_projection(capsys: pytest.CaptureFixture[str]) -> None:
    from harness.runners import bench_stacked

    figures = bench_stacked.main(["--models", "predinet", "--ks", "1", "2", "--threads", "1", "--repeats", "1",
                                  "--warmup", "0"])
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == json.loads(json.dumps(figures))
    rates = figures["models"]["predinet"]["batches_per_s"]["1"]
    assert set(rates) == {"plain", "vmap_1", "stacked_1", "stacked_2"} and all(rate > 0 for rate in rates.values())
    (what, hours), = figures["grid_hours"].items()  # one thread measured: the two-process bound only
    assert "2 x 1 thread" in what
    assert hours == pytest.approx(75 * 100_000 / (2 * max(rates.values())) / 3600, abs=0.01)
    floor = figures["grid_floor"]  # the grid's work in products, at the machine's large-product rate
    assert set(floor["step_gflop"]) == {"predinet", "mlp1", "mlp2", "relation_net", "mha"}
    assert all(gflop > 0 for gflop in floor["step_gflop"].values())
    assert floor["grid_pflop"] == pytest.approx(15 * 100_000 * sum(floor["step_gflop"].values()) / 1e6, rel=1e-2)
    assert floor["hours_at_peak"]["1"] == pytest.approx(
        floor["grid_pflop"] * 1e6 / floor["peak_gflops"]["1"] / 3600, rel=1e-2)
