"""A cached generated bAbI file that holds another number of questions than its settings write is refused before a
run reads it (tasks/babi/setting_checks.py)."""

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from harness.errors import UserError
from tasks.babi.setting_checks import check_settings
from tasks.babi.task import BabiTask

N_TRAIN, N_TEST = 20, 10


def generated_cfg(**task):
    base = {"name": "babi", "babi_id": 1, "data_set": "en-10k", "source": "generator", "max_story_sentences": None,
            "val_fraction": 0.2, "split_seed": 0, "generator_seed": 0, "generator_train_questions": N_TRAIN,
            "generator_test_questions": N_TEST, "test_on": []}
    return OmegaConf.create({"seed": 0, "task": {**base, **task}})


def cached_files(cfg) -> dict[str, Path]:
    """Write the task's generated files into the cache, as a run does, and return their paths."""
    files, label = BabiTask(cfg).locate()
    assert "written" in label
    return files


def cut_after_questions(path: Path, questions: int) -> None:
    """Keep the file's lines up to its ``questions``-th question line: a file cut short at a line end."""
    kept, seen = [], 0
    for line in path.read_text().splitlines(keepends=True):
        kept.append(line)
        seen += "\t" in line
        if seen == questions:
            break
    path.write_text("".join(kept))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "cache"


@pytest.mark.parametrize("split", ["train", "test"])
def test_a_cached_file_cut_at_a_line_end_is_refused_naming_it(cache, split):
    cfg = generated_cfg()
    files = cached_files(cfg)
    check_settings(cfg.task)  # the whole files pass
    cut_after_questions(files[split], 5)
    expected = N_TRAIN if split == "train" else N_TEST
    with pytest.raises(UserError, match=rf"{files[split].name}: this cached generated file holds 5 questions, "
                                        rf"not the {expected}"):
        check_settings(cfg.task)


def test_the_generator_files_of_test_on_are_checked_and_an_unused_cache_is_not(cache, tmp_path):
    files = cached_files(generated_cfg())
    cut_after_questions(files["test"], 5)
    official = tmp_path / "data" / "babi" / "en-10k"
    official.mkdir(parents=True)
    for path in files.values():  # whole official-looking files, so the run trains on them
        (official / path.name).write_text(path.read_text())
    (official / files["test"].name).write_text((official / files["train"].name).read_text())
    check_settings(generated_cfg(source="files").task)
    with pytest.raises(UserError, match="holds 5 questions"):
        check_settings(generated_cfg(source="files", test_on=["generator"]).task)


def test_a_task_whose_files_are_not_both_cached_is_left_to_the_run(cache):
    cfg = generated_cfg()
    files = cached_files(cfg)
    cut_after_questions(files["test"], 5)
    files["train"].unlink()  # the run writes both files again
    check_settings(cfg.task)
    assert len(BabiTask(cfg).load().test) == N_TEST
