"""`harness retest` refuses a run whose own data files changed since it was trained and tested: the split it adds
is encoded with the vocabulary and padded sizes of that data, so an edited training file would store a figure the
model never earned, and the run could no longer be predicted (harness/runners/retest.py, check_same_files)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.config import compose, save
from harness.errors import UserError
from harness.runners.build import prepare_task
from harness.runners.retest import check_same_files, retest
from tasks.babi.generator import file_name, generate_stories

RUN = SimpleNamespace(path=Path("runs/babi/lstm/babi-lstm-smoke-s0-0123abcd"))


def test_a_file_the_run_read_that_now_differs_is_refused_by_name():
    recorded = {"files": {"babi/en-10k/train.txt": "a", "babi/en-10k/test.txt": "b"}}
    with pytest.raises(UserError, match=r"babi-lstm-smoke-s0-0123abcd cannot be retested: its data changed since "
                                        r"it was scored \(babi/en-10k/train.txt differs from what it trained"):
        check_same_files(RUN, recorded, {"files": {"babi/en-10k/train.txt": "c", "babi/en-10k/test.txt": "b"}},
                         "retested")


def test_new_files_and_files_the_command_does_not_read_are_not_compared():
    recorded = {"files": {"relations_game/mini_between_hexos.npz": "a", "train.txt": "b"}}
    check_same_files(RUN, recorded, {"files": {"train.txt": "b", "extra_test.txt": "new"}}, "retested")
    check_same_files(RUN, {}, {"files": {"train.txt": "b"}}, "retested")  # a run stored without a data record


def write_official(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True)
    paths = {}
    for split, seed in (("train", 1), ("test", 2)):
        paths[split] = folder / file_name(1, split)
        paths[split].write_text("".join(generate_stories(1, 20, seed)))
    return paths


def test_a_retest_after_the_training_file_changed_is_refused_before_the_model_is_loaded(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    files = write_official(tmp_path / "data" / "babi" / "en-10k")
    composed = compose("babi", "lstm", "smoke", ["task.source=files"])
    prepared = prepare_task(composed)
    run_dir = tmp_path / "runs" / "babi" / "lstm" / composed.run_id
    run_dir.mkdir(parents=True)
    save(composed.cfg, run_dir / "config.yaml")
    results = {"run_id": composed.run_id, "task": "babi", "model": "lstm", "status": "completed",
               "metrics": {"test/acc": 0.5}, "data": {key: prepared.data[key] for key in ("fingerprint", "files")}}
    (run_dir / "results.json").write_text(json.dumps(results))
    with pytest.raises(UserError, match="no intact checkpoint"):  # the data is as it was: on to the model
        retest(str(run_dir), ["task.test_on=[generator]"], tmp_path / "runs")
    files["train"].write_text(files["train"].read_text().replace("hallway", "corridor"))
    with pytest.raises(UserError, match=rf"{files['train'].name} differs from what it trained and was tested on"):
        retest(str(run_dir), ["task.test_on=[generator]"], tmp_path / "runs")
    assert json.loads((run_dir / "results.json").read_text()) == results
