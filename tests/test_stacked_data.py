"""Mixed stacks (``harness/runners/stacked_data.py``): members that differ in their task's data (the relation of the
Relations Game) as well as their seed, each trained on its own data within one stacked computation, and the
sweeps that form them (``stack_grid``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import yaml

from harness.config import compose
from harness.errors import UserError
from harness.runners.build import prepare_task
from harness.runners.launch import launch
from harness.runners.stacked_data import MixedStackedTrainer
from harness.runners.stacked_launch import check_stackable, launch_stack
from harness.runners.supervised import load_checkpoint
from harness.runners.sweep_file import load_sweep
from harness.runners.tune import STACKED_SPACE, member_label, member_trials, trial_label, trial_overrides
from tests.conftest import SHARED_DATA, requires_loopback_only, run_cli, run_cli_loopback
from tests.test_stacked import curve_numbers, training_env

TASK, MODEL = "relations_game", "predinet"
POINTS = ((0, "same"), (0, "between"), (1, "same"))  # (seed, relation): seed 0 twice, on two relations
TOLERANCE = 1e-5


def _composed(seed: int, relation: str, *overrides: str):  # noqa: ANN202 - harness.config.Composed
    return compose(TASK, MODEL, "smoke", [f"seed={seed}", "train.threads=1", f"task.tasks=[{relation}]", *overrides])


def _results(runs: Path) -> dict[tuple[int, str], tuple[Path, dict]]:
    """The store's runs by (seed, relation)."""
    found = {}
    for path in runs.glob(f"{TASK}/{MODEL}/*/results.json"):
        record, config = json.loads(path.read_text()), yaml.safe_load((path.parent / "config.yaml").read_text())
        found[int(config["seed"]), config["task"]["tasks"][0]] = (path.parent, record)
    return found


def _worst(a: Path, b: Path) -> float:
    rows_a, rows_b = curve_numbers(a), curve_numbers(b)
    assert [row.keys() for row in rows_a] == [row.keys() for row in rows_b]
    return max(abs(x[k] - y[k]) for x, y in zip(rows_a, rows_b, strict=True) for k in x if "per_s" not in k)


def _interrupt_after_first_epoch(stack: list, runs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Train ``stack`` into ``runs`` and stop it with a Ctrl-C once its first epoch is stored."""
    original = MixedStackedTrainer._end_epoch

    def end_then_kill(self: MixedStackedTrainer) -> None:
        original(self)
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:
        patch.setattr(MixedStackedTrainer, "_end_epoch", end_then_kill)
        with pytest.raises(KeyboardInterrupt):
            launch_stack(stack, runs_dir=runs)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """The three smoke runs trained alone, and as one mixed stack."""
    root = tmp_path_factory.mktemp("mixed")
    with training_env(root):
        for seed, relation in POINTS:
            assert launch(_composed(seed, relation), runs_dir=root / "solo") == 0
        assert launch_stack([_composed(seed, relation) for seed, relation in POINTS], runs_dir=root / "stack") == 0
        yield {"solo": root / "solo", "stack": root / "stack", "root": root}


@pytest.mark.slow
def test_each_member_of_a_mixed_stack_follows_its_solo_run_on_its_own_data(stores: dict[str, Path]) -> None:
    solo, stack = _results(stores["solo"]), _results(stores["stack"])
    assert set(solo) == set(stack) == set(POINTS)
    for point in POINTS:
        (solo_run, solo_record), (member_run, member) = solo[point], stack[point]
        assert solo_run.name == member_run.name  # the solo run's id
        worst = _worst(solo_run, member_run)
        assert worst < TOLERANCE, f"{point}: a member's curve is {worst} off its solo run"
        assert member["status"] == "completed" and len(member["stack"]) == len(POINTS)
        assert sorted(member["metrics"]) == sorted(solo_record["metrics"])  # its own test splits
        for name, value in solo_record["metrics"].items():
            if "per_s" not in name:
                assert abs(member["metrics"][name] - value) < TOLERANCE, (point, name)
    # the between member was tested on the real between sets (where they are staged), the same members on none
    if (SHARED_DATA / "relations_game").is_dir():
        assert any("real_between" in name for name in stack[0, "between"][1]["metrics"])
    assert not any("real_between" in name for name in stack[0, "same"][1]["metrics"])
    # seed 0 on two relations: two different runs (a member that read the other's data would match it instead)
    same, between = (curve_numbers(stack[0, relation][0]) for relation in ("same", "between"))
    losses = [[row["train/epoch_loss"] for row in rows if "train/epoch_loss" in row] for rows in (same, between)]
    assert all(abs(a - b) > 1e-3 for a, b in zip(*losses, strict=True)), losses


@pytest.mark.slow
def test_a_mixed_member_is_rerun_with_the_members_of_its_own_config(stores: dict[str, Path]) -> None:
    from harness.rerun import reproduce

    stack = _results(stores["stack"])
    same, _ = reproduce(stack[0, "same"][0])
    between, _ = reproduce(stack[0, "between"][0])
    assert same is not None and "--seeds 0,1 " in same  # seeds 0 and 1 of [same] stacked, as they trained
    assert between is not None and "--seed 0 " in between and "--seeds" not in between  # alone: its own run id


@pytest.mark.slow
def test_an_interrupted_mixed_stack_resumes_to_the_same_curves(stores: dict[str, Path],
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(stores["root"] / "cache"))
    monkeypatch.setenv("HARNESS_DATA_DIR", str(SHARED_DATA))
    runs = stores["root"] / "resumed"
    stack = [_composed(seed, relation) for seed, relation in POINTS]
    _interrupt_after_first_epoch(stack, runs, monkeypatch)
    assert {record["status"] for _, record in _results(runs).values()} == {"interrupted"}
    capsys.readouterr()
    assert launch_stack(stack, runs_dir=runs) == 0  # the same stack resumes from the members' checkpoints
    epochs = [line.split(" epoch")[0] for line in capsys.readouterr().out.splitlines() if " epoch 2/2" in line]
    assert epochs == ["[seed 0 task.tasks=[same]]", "[seed 0 task.tasks=[between]]", "[seed 1 task.tasks=[same]]"]
    resumed, uninterrupted = _results(runs), _results(stores["stack"])
    for point in POINTS:
        assert _worst(resumed[point][0], uninterrupted[point][0]) < TOLERANCE, point


def test_members_may_differ_in_their_data_and_seed_only() -> None:
    check_stackable([_composed(0, "same"), _composed(0, "between"), _composed(1, "same")])
    check_stackable([_composed(0, "same"), _composed(0, "same", "optim.lr=0.1", "optim.momentum=0.9")])
    with pytest.raises(UserError, match=r"differ only in seed, the task's data \(task\.\*\) and the optimiser "
                                        r"\(optim\.\*\);.*train\.batch_size"):
        check_stackable([_composed(0, "same"), _composed(0, "between", "train.batch_size=20")])
    with pytest.raises(UserError, match="decay_below_val_loss"):
        check_stackable([_composed(0, "same"), _composed(1, "same", "optim.decay_below_val_loss=0.5")])
    with pytest.raises(UserError, match="repeats a seed"):
        check_stackable([_composed(0, "same"), _composed(1, "between"), _composed(0, "same")])


def test_data_of_different_shapes_is_refused_before_any_run_is_stored(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HARNESS_DATA_DIR", str(SHARED_DATA))
    stack = [_composed(0, "same"), _composed(0, "between", "task.n_train=100")]
    with pytest.raises(UserError, match=r"cannot share one stack: their train sets hold different numbers of "
                                        r"examples \(100, 200\)"):
        launch_stack(stack, runs_dir=tmp_path / "runs")
    assert not list((tmp_path / "runs").glob("*/*/*"))


def test_models_of_different_shapes_cannot_stack_and_say_which_parameter(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two relations at once make a wider output than one: an UnstackableModelError (a sweep's trial then runs the
    members one by one), not a traceback from deep in the stacked model."""
    from harness.runners.stacked_launch import UnstackableModelError

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HARNESS_DATA_DIR", str(SHARED_DATA))
    stack = [_composed(0, "same"), _composed(0, "between,occurs")]
    with pytest.raises(UnstackableModelError, match=r"predinet cannot train as a stack on relations_game \(its "
                                                    r"members' models differ in shape: .* is \[.*\] or \[.*\]\)"):
        launch_stack(stack, runs_dir=tmp_path / "runs")
    assert not list((tmp_path / "runs").glob("*/*/*"))


def test_a_stacked_trial_with_a_stack_grid_is_one_member_per_value_and_seed() -> None:
    trial = {"model": "mlp1", "seeds": [0, 1], "space": {"optim.lr": 0.1},
             STACKED_SPACE: {"task.tasks": [["same"], ["between"]]}}
    members = member_trials(trial)
    assert [(m["space"]["task.tasks"], m["seed"]) for m in members] == [
        (["same"], 0), (["same"], 1), (["between"], 0), (["between"], 1)]
    assert all(m["space"]["optim.lr"] == 0.1 and STACKED_SPACE not in m for m in members)
    assert [member_label(trial, m) for m in members][1] == "task.tasks=[same] seed=1"
    assert trial_label(trial) == "mlp1 seeds=0,1 optim.lr=0.1"  # Tune's folder name for the trial, not seed=None
    plain = {"model": "mlp1", "seeds": [3], "space": {}}
    assert [member_label(plain, m) for m in member_trials(plain)] == ["3"]


@pytest.mark.parametrize(("lines", "message"), [
    ("stack_grid: [task.tasks]\n", "set stack_seeds: true"),
    ("stack_seeds: true\nstack_grid: [task.n_train]\n", "task.n_train, which is not a grid of the space"),
    ("stack_seeds: true\nstack_grid: [train.batch_size]\nspace: {train.batch_size: {type: grid, values: [5, 10]}}\n",
     r"may differ only in their seed, the task.s data \(task\.\* keys\) and the optimiser"),
    ("stack_seeds: true\nstack_grid: task.tasks\n", "'stack_grid' must list grid keys of the space"),
])
def test_a_stack_grid_must_name_data_grids_of_a_stacked_sweep(lines: str, message: str, tmp_path: Path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(f"name: x\ntask: relations_game\nmodels: [mlp1]\n{lines}")
    with pytest.raises(UserError, match=message):
        load_sweep(path)


def test_the_stacked_table1_sweep_is_five_stacks_of_fifteen(env: dict[str, str]) -> None:
    done = run_cli(["sweep", "sweeps/predinet_table1_stacked.yaml", "--dry-run"], env)
    assert done.returncode == 0, done.stderr
    assert "5 trials of 3 seeds x 5 grid values each" in done.stdout and "(75 runs)" in done.stdout


@requires_loopback_only
@pytest.mark.slow
def test_a_sweep_with_a_stack_grid_trains_its_grid_values_in_one_stack(env: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text("name: mixed\ntask: relations_game\nmodels: [mlp1]\nprofile: smoke\nseeds: [0]\n"
                    "stack_seeds: true\nstack_grid: [task.tasks]\noverrides: [train.threads=1]\n"
                    "space: {task.tasks: {type: grid, values: [[same], [between]]}}\n")
    runs = tmp_path / "runs"
    done = run_cli_loopback(["sweep", str(path), "--runs-dir", str(runs)], env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    sweep, expected = load_sweep(path), set()
    for relation in ("same", "between"):
        trial = {"model": "mlp1", "seed": 0, "space": {"task.tasks": [relation]}}
        composed = compose(TASK, "mlp1", "smoke", trial_overrides(sweep, trial))
        prepare_task(composed)  # the run id holds the data's fingerprint
        expected.add(composed.run_id)
    stored = [json.loads(p.read_text()) for p in runs.glob(f"{TASK}/mlp1/*/results.json")]
    assert {r["run_id"] for r in stored} == expected
    assert all(r["status"] == "completed" and set(r["stack"]) == expected for r in stored)
    rows = [line for line in done.stdout.splitlines() if line.startswith("mlp1 seed=0")]
    assert len(rows) == 2 and all(" completed " in row for row in rows), rows
    assert {row.split()[2] for row in rows} == {"task.tasks=[same]", "task.tasks=[between]"}, rows


# Members that differ in their optimiser settings: each keeps its own optimiser (harness/runners/stacked_optim.py).
OPTIM_POINTS = {  # name -> (seed, overrides)
    "plain": (0, ()),
    "faster": (0, ("optim.lr=0.05", "optim.momentum=0.9")),
    "adam": (1, ("optim.name=adam", "optim.lr=0.001", "optim.grad_clip=0.5", "optim.warmup_steps=3",
                 "optim.warmup_factor=0.1")),
}


def _optim_composed(name: str):  # noqa: ANN202 - harness.config.Composed
    seed, overrides = OPTIM_POINTS[name]
    return _composed(seed, "same", *overrides)


def _by_name(runs: Path) -> dict[str, Path]:
    ids = {name: _optim_composed(name) for name in OPTIM_POINTS}
    for composed in ids.values():
        prepare_task(composed)  # the run id holds the data's fingerprint
    return {name: runs / TASK / MODEL / composed.run_id for name, composed in ids.items()}


@pytest.mark.slow
def test_members_with_their_own_optimiser_settings_follow_their_solo_runs(stores: dict[str, Path],
                                                                          monkeypatch: pytest.MonkeyPatch,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(stores["root"] / "cache"))
    monkeypatch.setenv("HARNESS_DATA_DIR", str(SHARED_DATA))
    root = stores["root"]
    for name in OPTIM_POINTS:
        assert launch(_optim_composed(name), runs_dir=root / "optim_solo") == 0
    stack = [_optim_composed(name) for name in OPTIM_POINTS]
    assert launch_stack(stack, runs_dir=root / "optim_stack") == 0
    solo, stacked = _by_name(root / "optim_solo"), _by_name(root / "optim_stack")
    for name in OPTIM_POINTS:
        worst = _worst(solo[name], stacked[name])
        assert worst < TOLERANCE, f"{name}: a member's curve is {worst} off its solo run"
        lrs = [row["lr"] for row in curve_numbers(stacked[name]) if "lr" in row]
        assert lrs == [row["lr"] for row in curve_numbers(solo[name]) if "lr" in row] and lrs, name  # its own schedule
        # its optimiser's state where the best checkpoint was taken is its solo run's, in the solo format
        states = [load_checkpoint(run / "checkpoints" / "best.ckpt")["optimizer_states"][0]
                  for run in (solo[name], stacked[name])]
        assert states[0]["param_groups"][0]["lr"] == states[1]["param_groups"][0]["lr"]
        assert states[0]["state"].keys() == states[1]["state"].keys()
        for index, entry in states[0]["state"].items():
            for key, value in entry.items():
                other = states[1]["state"][index][key]
                assert torch.allclose(torch.as_tensor(value), torch.as_tensor(other), atol=TOLERANCE), (name, key)
    assert {curve_numbers(stacked[name])[0]["lr"] for name in OPTIM_POINTS} == {0.01, 0.05, 0.0001}

    # interrupted after its first epoch, the same stack resumes to the same curves
    runs = root / "optim_resumed"
    _interrupt_after_first_epoch(stack, runs, monkeypatch)
    capsys.readouterr()
    assert launch_stack(stack, runs_dir=runs) == 0
    epochs = [line.split(" epoch")[0] for line in capsys.readouterr().out.splitlines() if " epoch 2/2" in line]
    assert epochs[1].startswith("[seed 0 ") and "optim.lr=0.05 optim.momentum=0.9" in epochs[1], epochs
    resumed = _by_name(runs)
    for name in OPTIM_POINTS:
        assert _worst(resumed[name], stacked[name]) < TOLERANCE, name
