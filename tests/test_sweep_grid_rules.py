"""A sweep's grid and trials (``harness/runners/sweep_file.py`` and ``harness/runners/tune.py``, their module
docstrings and those of ``candidates``, ``trial_cells``, ``cell_overrides``, ``narrow_grid``, ``grid_trials``,
``member_trials``, ``member_label``, ``held_out``, ``split_completed``, ``cell_cpu_needs`` and
``check_trial_cpus``), each checked against the documented rule written out by hand on a tiny sweep, without
starting Ray:

* ``randint`` takes ``low`` inclusive and ``high`` exclusive, so its ends are ``low`` and ``high - 1``;
* a bound pair is refused unless ``low < high``; a seed above ``max_seed()`` is refused, ``max_seed()`` itself
  is not;
* a matrix sweep's task grid gives one trial per cell and per point of the product of all its axes, each axis
  named in the entry; a cell's fixed overrides are the sweep's, then its task's, then its grid point's, then the
  time cap, the smaller of the profile's and ``cell_time_cap_s``;
* ``--only`` given twice for one key adds up the values of the file's grid;
* the trials listed before Tune runs (``grid_trials``) are exactly those Ray Tune's own grid expansion of the
  sweep's space gives (``ray.tune.search.variant_generator.generate_variants``), one per cell, seed and grid
  point, a stacked trial per cell and point with every seed, the ``stack_grid`` values out of its point;
* a stacked trial's members are one per ``stack_grid`` value and seed, each holding its value, each with a
  label of its own;
* a run's held-out metrics are its test splits' (``test/...``, ``test_<name>/...``) and its RL evaluation's,
  each curriculum stage's too;
* a stacked trial is reported from the store only when every member's run is completed there, and a trial is
  reported so only when its own run is completed;
* a cell's CPUs are its largest placement group's; a trial that needs exactly the session's CPUs starts.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from harness.config import compose, max_seed
from harness.errors import UserError
from harness.runners import tune
from harness.runners.sweep_file import (
    SWEEP_FILE,
    Sweep,
    candidates,
    cell_overrides,
    flow,
    load_sweep,
    narrow_grid,
    trial_cells,
)
from harness.runners.tune import (
    STACKED_SPACE,
    cell_cpu_needs,
    check_trial_cpus,
    grid_trials,
    held_out,
    member_label,
    member_trials,
    split_completed,
)


def test_a_randint_range_ends_at_high_minus_one_and_others_at_their_bounds() -> None:
    assert candidates({"type": "randint", "low": 2, "high": 5}) == [2, 4]
    assert candidates({"type": "uniform", "low": 0.5, "high": 2}) == [0.5, 2.0]
    assert candidates({"type": "grid", "values": [3, 1]}) == [3, 1]


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text("name: s\ntask: babi\nmodels: [lstm]\nprofile: smoke\n" + body)
    return path


def test_equal_bounds_are_refused_and_the_largest_seed_is_not(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="low must be below high"):
        load_sweep(_write(tmp_path, "space:\n  optim.lr: {type: uniform, low: 0.1, high: 0.1}\n"))
    assert load_sweep(_write(tmp_path, "space:\n  optim.lr: {type: uniform, low: 0.1, high: 0.2}\n"))
    assert load_sweep(_write(tmp_path, f"seeds: [0, {max_seed()}]\n")).seeds == [0, max_seed()]
    with pytest.raises(UserError, match="a seed is at most"):
        load_sweep(_write(tmp_path, f"seeds: [{max_seed() + 1}]\n"))


def matrix(**kwargs: Any) -> Sweep:
    return Sweep(name="m", models=["lstm"], tasks=["babi"], profile="smoke", **kwargs)


def test_a_task_grid_gives_one_trial_per_point_of_the_product_of_its_axes() -> None:
    grid = {"task.babi_id": [1, 2], "train.max_epochs": [3, 4]}
    expected = []
    for babi_id in grid["task.babi_id"]:  # the product, written out
        for epochs in grid["train.max_epochs"]:
            expected.append(f"babi/lstm; task.babi_id={babi_id}; train.max_epochs={epochs}")
    assert sorted(trial_cells(matrix(task_grid={"babi": grid}))) == sorted(expected)


def test_a_cells_fixed_overrides_are_the_sweeps_then_its_tasks_then_its_grid_points_then_the_cap() -> None:
    sweep = matrix(overrides=["train.max_epochs=1"], task_overrides={"babi": ["train.max_epochs=2"]},
                   task_grid={"babi": {"task.babi_id": [3]}})
    (entry,) = trial_cells(sweep)
    assert cell_overrides(sweep, entry) == ["train.max_epochs=1", "train.max_epochs=2", "task.babi_id=3"]
    # the later override wins: the task's beats the sweep's
    composed = compose("babi", "lstm", "smoke", cell_overrides(sweep, entry), given_in=SWEEP_FILE)
    assert int(composed.cfg.train.max_epochs) == 2


@pytest.mark.parametrize(("own", "cap", "expected"), [(100, 50, 50), (100, 200, 100), (None, 70, 70)])
def test_the_time_cap_is_the_smaller_of_the_cells_and_the_sweeps(own: int | None, cap: float, expected: float) -> None:
    fixed = [] if own is None else [f"train.max_time_s={own}"]
    sweep = matrix(overrides=fixed, cell_time_cap_s=cap)
    if own is None:
        assert compose("babi", "lstm", "smoke", [], given_in=SWEEP_FILE).cfg.train.max_time_s is None
    (entry,) = trial_cells(sweep)
    assert cell_overrides(sweep, entry) == [*fixed, f"train.max_time_s={expected:g}"]


def test_only_given_twice_for_one_key_adds_up_the_files_values() -> None:
    sweep = Sweep(name="s", task="babi", models=["lstm"], space={"task.babi_id": {"type": "grid",
                                                                                  "values": [1, 2, 3]}})
    narrow_grid(sweep, "task.babi_id=1")
    assert sweep.space["task.babi_id"]["values"] == [1]
    narrow_grid(sweep, "task.babi_id=3")
    assert sweep.space["task.babi_id"]["values"] == [1, 3]


def _key(trial: dict[str, Any]) -> str:
    return flow(trial)


SPACE = {"task.babi_id": {"type": "grid", "values": [1, 2]}, "optim.lr": {"type": "grid", "values": [0.1, 0.01]}}


@pytest.mark.parametrize("kind", ["plain", "stacked", "stack_grid", "matrix"])
def test_the_listed_trials_are_those_tunes_grid_expansion_gives(kind: str) -> None:
    from ray.tune.search.variant_generator import generate_variants

    if kind == "matrix":
        sweep = matrix(seeds=[0, 1, 2], task_grid={"babi": {"task.babi_id": [1, 2]}},
                       space={"optim.lr": SPACE["optim.lr"]})
    else:
        sweep = Sweep(name="s", task="babi", models=["lstm", "memn2n"], seeds=[0, 1, 2], space=dict(SPACE),
                      stack_seeds=kind != "plain", stack_grid=["optim.lr"] if kind == "stack_grid" else [])
    listed = grid_trials(sweep)
    assert listed is not None
    expanded = [resolved for _, resolved in generate_variants(tune._tune_space(sweep))]
    assert sorted(map(_key, listed)) == sorted(map(_key, expanded))
    # and by the rule written out: one per cell, seed and grid point (a stack: per cell and point)
    count = {"plain": 2 * 3 * 4, "stacked": 2 * 4, "stack_grid": 2 * 2, "matrix": 2 * 3 * 2}[kind]
    assert len(listed) == len({_key(t) for t in listed}) == count
    for trial in listed:
        if kind in ("stacked", "stack_grid"):
            assert trial["seeds"] == [0, 1, 2]
        if kind == "stack_grid":
            assert "optim.lr" not in trial["space"] and trial[STACKED_SPACE] == {"optim.lr": [0.1, 0.01]}


def test_a_stacked_trials_members_are_one_per_joined_value_and_seed() -> None:
    trial = {"model": "lstm", "seeds": [0, 1], STACKED_SPACE: {"task.babi_id": [1, 2], "optim.lr": [0.1]},
             "space": {"train.max_epochs": 3}}
    expected = []
    for babi_id, lr in itertools.product([1, 2], [0.1]):
        for seed in (0, 1):
            expected.append({"model": "lstm", "seed": seed,
                             "space": {"train.max_epochs": 3, "task.babi_id": babi_id, "optim.lr": lr}})
    members = member_trials(trial)
    assert sorted(map(_key, members)) == sorted(map(_key, expected))
    labels = [member_label(trial, member) for member in members]
    assert len(set(labels)) == len(members)
    assert "task.babi_id=2 optim.lr=0.1 seed=1" in labels
    assert member_label({"seeds": [0, 1]}, {"seed": 1, "space": {}}) == "1"


def test_held_out_metrics_are_the_test_splits_and_the_evaluations_of_every_stage() -> None:
    metrics = {"test/acc": 1.0, "test_stripes/acc": 0.5, "test_real_between_hexos/loss": 0.1, "eval/win_rate": 0.3,
               "4_frozen_encoder/test/acc": 0.9, "1_scratch/test_ood/acc": 0.2, "val/acc": 0.7, "train/loss": 0.2,
               "testing": 1.0, "epoch": 3}
    assert held_out(metrics) == {key: metrics[key] for key in (
        "test/acc", "test_stripes/acc", "test_real_between_hexos/loss", "eval/win_rate", "4_frozen_encoder/test/acc",
        "1_scratch/test_ood/acc")}


def test_a_trial_whose_run_failed_after_completing_is_failed() -> None:
    outcome = tune._outcome({"status": "completed", "run_id": "r"}, RuntimeError("not sent home"), Path("/x"))
    assert outcome["status"] == "failed" and "not sent home" in outcome["error"]
    assert tune._outcome({"status": "completed", "run_id": "r"}, None, Path("/x"))["status"] == "completed"


def test_a_stacked_trial_is_reported_from_the_store_only_when_every_member_completed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sweep = Sweep(name="s", task="babi", models=["lstm"], seeds=[0, 1], stack_seeds=True)

    def completed_row(_: Sweep, trial: dict[str, Any], __: Path) -> dict[str, Any] | None:
        return {"trial": str(trial["seed"]), "status": "completed"} if trial["seed"] == 0 else None

    monkeypatch.setattr(tune, "_completed_row", completed_row)
    split = split_completed(sweep, tmp_path)
    assert split is not None
    done, left = split
    assert done == [] and left == grid_trials(sweep)  # seed 1 is missing: the whole stack runs


def test_a_trial_is_not_reported_from_the_store_when_only_another_run_of_its_seed_completed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sweep = Sweep(name="s", task="babi", models=["lstm"], profile="smoke", seeds=[0])
    other = tmp_path / "babi" / "lstm" / "babi-lstm-smoke-s0-other"  # e.g. another point of the space
    other.mkdir(parents=True)
    (other / "results.json").write_text('{"status": "completed"}')

    def stored_row(*_: Any, **__: Any) -> dict[str, Any]:  # this trial's own run: still running
        return {"trial": "lstm seed=0", "run_id": "babi-lstm-smoke-s0-mine", "status": "interrupted",
                "reason": "", "metrics": {}}

    monkeypatch.setattr(tune, "_stored_row", stored_row)
    assert tune._completed_row(sweep, {"model": "lstm", "seed": 0, "space": {}}, tmp_path) is None


def test_a_cells_cpus_are_its_largest_placement_group_and_an_exact_fit_starts() -> None:
    bundles = {("a/b", ("rl.num_env_runners=2",)): [{"CPU": 1.0}, {"CPU": 1.0}, {"CPU": 1.0}],
               ("a/b", ("rl.num_env_runners=0",)): [{"CPU": 1.0}],
               ("c/d", ()): [{"CPU": 2.0}]}
    assert cell_cpu_needs(bundles) == {"a/b": 3.0, "c/d": 2.0}
    sweep = Sweep(name="s", task="a", models=["b"])
    check_trial_cpus(sweep, {"a/b": 3.0}, 3.0, cluster=False)  # exactly the session's CPUs: it starts
    with pytest.raises(UserError, match="needs 3 CPUs"):
        check_trial_cpus(sweep, {"a/b": 3.0}, 2.0, cluster=False)
