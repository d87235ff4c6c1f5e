"""Rough spots found by walking through the Relations Game's documentation as a user: a curriculum's task lists
given without the curriculum, a task vocabulary naming a task that does not exist, and ``sweep --cells`` on a
sweep of one task (the PrediNet grids). Each is refused in one line before anything is written, or narrows the
sweep; seconds each (``validate`` and ``sweep --dry-run`` train nothing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from tests.conftest import ROOT

RELATIONS = ["--task", "relations_game", "--model", "predinet", "--profile", "smoke"]


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def _nothing_written(env: dict[str, str]) -> bool:
    runs = Path(env["HARNESS_RUNS_DIR"])
    return not runs.exists() or not any(runs.rglob("*"))


@pytest.mark.parametrize(
    ("overrides", "line"),
    [
        (
            ["protocol.target=[col_aba]"],
            "error: protocol.target is read by protocol.name=curriculum only, and this run's protocol is single",
        ),
        (
            ["protocol.target=[col_aba]", "protocol.pretrain=[between]"],
            "error: protocol.target and protocol.pretrain are read by protocol.name=curriculum only",
        ),
    ],
)
@pytest.mark.parametrize("command", ["validate", "bench"])
def test_a_curriculum_task_list_without_the_curriculum_is_refused_not_ignored(env, capsys, overrides, line, command):
    assert main([command, *RELATIONS, *overrides]) == 2  # it used to train task.tasks=[same] and say nothing
    assert _one_error_line(capsys).startswith(line)
    assert _nothing_written(env)


@pytest.mark.parametrize(
    ("override", "line"),
    [
        (
            "task.task_vocabulary=[same,betwen]",
            "error: bad value for 'task.task_vocabulary': 'betwen' is not one of same",
        ),
        ("task.task_vocabulary=[same,same]", "error: bad value for 'task.task_vocabulary': 'same' is listed twice"),
    ],
)
def test_a_task_vocabulary_naming_no_task_is_refused(env, capsys, override, line):
    assert main(["bench", *RELATIONS, override]) == 2
    assert _one_error_line(capsys).startswith(line)
    assert _nothing_written(env)


def test_a_task_vocabulary_of_real_tasks_still_composes(env, capsys):
    assert main(["validate", *RELATIONS, "task.task_vocabulary=[same,between]"]) == 0
    assert "- between" in capsys.readouterr().out


def test_cells_narrow_a_sweep_of_one_task_to_its_matching_models(env, capsys):
    dry = ["sweep", str(ROOT / "sweeps" / "predinet_curriculum.yaml"), "--dry-run", "--profile", "smoke"]
    assert main([*dry, "--cells", "relations_game/predinet"]) == 0
    assert "relations_game x predinet, profile smoke, 3 trials" in capsys.readouterr().out
    table1 = ["sweep", str(ROOT / "sweeps" / "predinet_table1.yaml"), "--dry-run", "--only", "task.tasks=[xoccurs]"]
    assert main([*table1, "--cells", "relations_game/mlp*,relations_game/mha"]) == 0
    assert "relations_game x mlp1, mlp2, mha, profile cpu, 9 trials" in capsys.readouterr().out
    assert main([*table1, "--cells", "mlp*,mha"]) == 0  # in a sweep of one task, its models' names alone
    assert "relations_game x mlp1, mlp2, mha, profile cpu, 9 trials" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("sweep", "cells", "line"),
    [
        (
            "predinet_table1.yaml",
            "babi/*",
            "error: sweep predinet_table1: none of its cells match babi/*; its cells: relations_game/predinet, ",
        ),
        ("predinet_table1.yaml", ",", "error: --cells ',' names no cell"),
        ("matrix_smoke.yaml", " ", "error: --cells ' ' names no cell"),  # used to run every cell
    ],
)
def test_cells_that_choose_nothing_are_refused(env, capsys, sweep, cells, line):
    assert main(["sweep", str(ROOT / "sweeps" / sweep), "--dry-run", "--cells", cells]) == 2
    assert _one_error_line(capsys).startswith(line)


def test_a_test_set_that_is_the_training_set_is_noted_and_left_out_of_the_run_id(env, capsys):
    assert main(["validate", *RELATIONS, "task.test_sets=[pentominoes,stripes]"]) == 0
    captured = capsys.readouterr()
    assert (
        "note: task.test_sets names pentominoes, the object set this run trains on; its test split is the run's own "
        "test/ metrics, so it is left out of the run's config (and its run id)"
    ) in captured.err
    assert "test_sets:\n  - stripes\n" in captured.out  # the config the run would store
    redundant = captured.out.splitlines()[0]
    assert main(["validate", *RELATIONS, "task.test_sets=[stripes]"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == redundant  # one run, one id
    assert main(["validate", *RELATIONS]) == 0  # the defaults: no note
    assert "note:" not in capsys.readouterr().err


def test_a_sweep_table_shows_each_curriculum_stage_s_held_out_accuracy() -> None:
    from harness.runners.tune import held_out, sweep_table

    metrics = {"1_scratch/test/acc": 0.5, "4_frozen_encoder/test/acc": 0.9, "1_scratch/train/loss": 0.7,
               "2_pretrain/val/acc": 0.8, "test/acc": 0.6, "eval/win_rate": 0.4, "epoch": 3}
    assert held_out(metrics) == {"1_scratch/test/acc": 0.5, "4_frozen_encoder/test/acc": 0.9, "test/acc": 0.6,
                                 "eval/win_rate": 0.4}
    row = {"trial": "t", "run_id": "r", "status": "completed", "reason": "",
           "metrics": held_out({"1_scratch/test/acc": 0.5, "4_frozen_encoder/test/acc": 0.9})}
    assert sweep_table([row])[1][3] == "1_scratch/test/acc=0.5000  4_frozen_encoder/test/acc=0.9000"
