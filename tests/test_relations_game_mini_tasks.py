"""A released Relations Game mini set that lacks one of its tasks is refused before a run starts, instead of the
run leaving its test_real_* split out without a word, or scoring every image as the one task left
(tasks/relations_game/data_checks.py)."""

from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from harness.errors import DataFormatError
from tasks.relations_game.data_checks import check_mini_sets

COL_FILE = "mini_3task_col_patts_hexos.npz"


def write_mini(folder: Path, task_ids: list[int]) -> None:
    """A well-formed three-task mini set whose examples carry ``task_ids`` (cycled)."""
    folder.mkdir(parents=True, exist_ok=True)
    n = 12
    rng = np.random.default_rng(0)
    np.savez(folder / COL_FILE, images=rng.choice(np.array([0, 64, 144, 192]), size=(n, 36, 36, 3)),
             labels=rng.integers(0, 2, size=(n, 1)), tasks=np.resize(np.array(task_ids), (n, 1)))


def task_cfg(tasks: list[str]):
    return OmegaConf.create({"tasks": tasks, "real_sets": True})


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path))
    return tmp_path / "relations_game"


def test_a_file_holding_each_of_its_tasks_passes(folder):
    write_mini(folder, [0, 1, 2])
    check_mini_sets(task_cfg(["col_aab"]))


@pytest.mark.parametrize("tasks", [["col_aab"], ["col_aba"]])
def test_a_file_whose_tasks_column_lost_some_ids_is_refused_naming_them(folder, tasks):
    write_mini(folder, [0])  # e.g. a tasks column written as zeros
    with pytest.raises(DataFormatError, match=rf"{COL_FILE}: 'tasks' holds no example of task id\(s\) 1 \(col_aab\), "
                                              r"2 \(col_abb\); the released file holds each of 0 \(col_aba\)"):
        check_mini_sets(task_cfg(tasks))


def test_a_file_the_run_does_not_test_on_is_not_read(folder):
    write_mini(folder, [0])
    check_mini_sets(task_cfg(["between"]))
    check_mini_sets(OmegaConf.create({"tasks": ["col_aab"], "real_sets": False}))
