"""A bAbI data folder holding two files that could be one task's split (``qa1_*_test.txt``: a renamed copy beside
the original) is refused before a run starts, naming both, instead of the first in name order being read without
a word (tasks/babi/setting_checks.py, check_official_files)."""

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from harness.errors import UserError
from tasks.babi.generator import file_name, generate_stories
from tasks.babi.setting_checks import check_settings


def task_cfg(**task):
    base = {"name": "babi", "babi_id": 1, "data_set": "en-10k", "source": "auto", "max_story_sentences": None,
            "val_fraction": 0.2, "split_seed": 0, "generator_seed": 0, "generator_train_questions": 20,
            "generator_test_questions": 10, "test_on": []}
    return OmegaConf.create({**base, **task})


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "data" / "babi" / "en-10k"
    folder.mkdir(parents=True)
    for split, seed in (("train", 1), ("test", 2)):
        (folder / file_name(1, split)).write_text("".join(generate_stories(1, 20, seed)))
    return folder


def test_one_file_per_split_passes(folder):
    check_settings(task_cfg())


@pytest.mark.parametrize("split", ["train", "test"])
def test_a_second_file_that_could_be_the_split_is_refused_naming_both(folder, split):
    copy = folder / f"qa1_copy_{split}.txt"
    copy.write_text((folder / file_name(1, split)).read_text())
    with pytest.raises(UserError, match=rf"holds 2 files that could be task 1's {split} split \(qa1_copy_{split}.txt, "
                                        rf"{file_name(1, split)}\); keep one of them there"):
        check_settings(task_cfg())


def test_files_the_run_does_not_read_are_not_judged(folder):
    (folder / "qa1_copy_test.txt").write_text("")
    check_settings(task_cfg(source="generator"))
    with pytest.raises(UserError, match="could be task 1's test split"):
        check_settings(task_cfg(source="generator", test_on=["files"]))


def test_en_valid_10k_without_its_validation_file_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "data" / "babi" / "en-valid-10k"
    folder.mkdir(parents=True)
    for split, seed in (("train", 1), ("test", 2)):
        (folder / f"qa1_{split}.txt").write_text("".join(generate_stories(1, 20, seed)))
    with pytest.raises(UserError, match=r"en-valid-10k has no qa1_valid.txt: en-valid-10k's validation split is its "
                                        r"own file"):
        check_settings(task_cfg(data_set="en-valid-10k"))
    (folder / "qa1_valid.txt").write_text("".join(generate_stories(1, 10, 3)))
    check_settings(task_cfg(data_set="en-valid-10k"))
