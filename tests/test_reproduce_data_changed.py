"""`harness reproduce` refuses a run whose data changed since it was trained, before it trains anything: other data
gives the command another run id, so it trained a run that was not the one to compare, left it in the store, and
then said there was nothing to compare (harness/reproduce.py, check_same_data_now)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.config import compose, save
from harness.errors import UserError
from harness.reproduce import check_same_data_now
from harness.rerun import rebuild
from harness.runners.build import prepare_task
from tasks.babi.generator import file_name, generate_stories


def stored_run(tmp_path: Path) -> tuple[Path, dict, Path]:
    """A stored run of bAbI task 1 on small official-looking files: its folder, its results and its train file."""
    folder = tmp_path / "data" / "babi" / "en-10k"
    folder.mkdir(parents=True)
    for split, seed in (("train", 1), ("test", 2)):
        (folder / file_name(1, split)).write_text("".join(generate_stories(1, 20, seed)))
    composed = compose("babi", "lstm", "smoke", ["task.source=files"])
    prepared = prepare_task(composed)
    run_dir = tmp_path / "runs" / "babi" / "lstm" / composed.run_id
    run_dir.mkdir(parents=True)
    save(composed.cfg, run_dir / "config.yaml")
    results = {"run_id": composed.run_id, "task": "babi", "model": "lstm", "profile": "smoke", "seed": 0,
               "status": "completed", "metrics": {"test/acc": 0.5},
               "data": {key: prepared.data[key] for key in ("fingerprint", "files")}}
    (run_dir / "results.json").write_text(json.dumps(results))
    return run_dir, results, folder / file_name(1, "train")


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))


def test_the_same_data_passes_and_the_command_gives_the_stored_run_id(env, tmp_path):
    run_dir, results, _ = stored_run(tmp_path)
    rebuilt = rebuild(run_dir)
    assert rebuilt.run_id == results["run_id"]
    check_same_data_now(run_dir, results, rebuilt)


def test_a_changed_training_file_is_refused_by_name_before_training(env, tmp_path):
    run_dir, results, train = stored_run(tmp_path)
    train.write_text(train.read_text().replace("hallway", "corridor"))
    with pytest.raises(UserError, match=rf"{run_dir.name} cannot be reproduced: its data changed since it was scored "
                                        rf"\(babi/en-10k/{train.name} differs from what it measured\)"):
        check_same_data_now(run_dir, results, rebuild(run_dir))
