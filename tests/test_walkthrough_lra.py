"""Fixes from walking through the Long Range Arena tasks' documentation (ListOps and Pathfinder-32)."""

from __future__ import annotations

import pytest

from harness.cli import main
from harness.errors import UserError
from harness.fetch import PART_OF, dataset_of
from harness.fetch_catalogue import CATALOGUE
from harness.registry import REGISTRY


@pytest.mark.parametrize("task", ["listops", "pathfinder"])
def test_fetching_an_lra_task_by_its_name_points_at_lra_and_writes_nothing(task, tmp_path, capsys):
    code = main(["data", "fetch", task, "--dest", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert "`harness data fetch lra`" in err and "lra_release/" in err and "Traceback" not in err
    assert not list(tmp_path.iterdir())  # nothing downloaded, no .downloads/ folder made


def test_every_task_named_as_part_of_a_dataset_is_a_task_of_a_fetchable_dataset():
    for task, (_, dataset) in PART_OF.items():
        assert task in REGISTRY.tasks and task not in CATALOGUE
        assert dataset in CATALOGUE
        with pytest.raises(UserError, match=f"data fetch {dataset}"):
            dataset_of(task)


def test_an_unknown_name_still_gets_the_closest_dataset():
    with pytest.raises(UserError, match=r"unknown dataset 'lr' \(did you mean 'lra'\?\); fetchable: babi, lra, mnist"):
        dataset_of("lr")
    assert dataset_of("lra") is CATALOGUE["lra"]
