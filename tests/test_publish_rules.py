"""``harness publish``'s copy rules (``harness/publish.py``, its module docstring and those of ``_copy_kept``,
``distinct_runs``, ``check_whole_stacks``, ``check_not_in_place``, ``publish`` and ``finish_interrupted``), each
checked against the documented rule written out by hand on a tiny hand-made store (no training):

* a published run keeps results.json, config.yaml, rollout.csv, the curves gzipped (``metrics.csv.gz``) and the
  folders analysis/, predictions/ and pictures/ (the same for each curriculum stage), and leaves out checkpoints,
  the W&B mirror and files set aside as damaged (``<name>.damaged-<stamp>``);
* completed and diverged runs are published, nothing else;
* a stack member is published only with each other member named too or already in the store;
* a run is never published onto itself while it holds what publishing drops, however the two paths are spelt;
* the budget counts the store after the publication: a run published again replaces its copy, it is not added;
* a killed publication is finished only into the store it was publishing to;
* a run named twice (by id and by a directory path spelt otherwise) is published once.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from harness.errors import UserError
from harness.publish import (
    DESTINATION,
    READY,
    STAGED,
    STAGING_PREFIX,
    distinct_runs,
    finish_interrupted,
    publish,
    store_size,
)

TASK, MODEL = "babi", "lstm"


def make_run(runs: Path, run_id: str, status: str = "completed", stack: list[str] | None = None) -> Path:
    """A finished run directory as the launcher leaves it, with everything publishing keeps or drops."""
    path = runs / TASK / MODEL / run_id
    results = {"run_id": run_id, "task": TASK, "model": MODEL, "status": status, "metrics": {"test/acc": 0.5}}
    if stack is not None:
        results["stack"] = stack
    for folder in (path, path / "stages" / "1_scratch"):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "results.json").write_text(json.dumps(results))
        (folder / "config.yaml").write_text(f"seed: 0\nname: {run_id}\n")
        (folder / "metrics.csv").write_text("step,epoch,train/loss\n0,0,1.0\n1,0,0.5\n")
        (folder / "checkpoints").mkdir(exist_ok=True)
        (folder / "checkpoints" / "last.ckpt").write_bytes(b"\0" * 64)
    (path / "rollout.csv").write_text("step,acc\n1,1.0\n")
    (path / "wandb").mkdir()
    (path / "wandb" / "run.wandb").write_text("offline")
    (path / "analysis").mkdir()
    (path / "analysis" / "probe.csv").write_text("a,b\n1,2\n")
    (path / "predictions").mkdir()
    (path / "predictions" / "summary.json").write_text("{}")
    (path / "predictions" / "predictions.csv.gz.damaged-20260101T000000").write_bytes(b"x")
    (path / "pictures").mkdir()
    (path / "pictures" / "step_1.png").write_bytes(b"png")
    return path


def files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def test_a_published_run_keeps_what_a_reader_needs_and_nothing_else(tmp_path: Path) -> None:
    runs, store = tmp_path / "runs", tmp_path / "results"
    run = make_run(runs, "r1")
    publish(["r1"], runs, store)
    copy = store / TASK / MODEL / "r1"
    stage = ["stages/1_scratch/" + name for name in ("results.json", "config.yaml", "metrics.csv.gz")]
    assert files(copy) == {"results.json", "config.yaml", "metrics.csv.gz", "rollout.csv", "analysis/probe.csv",
                           "predictions/summary.json", "pictures/step_1.png", *stage}
    assert gzip.decompress((copy / "metrics.csv.gz").read_bytes()) == (run / "metrics.csv").read_bytes()


@pytest.mark.parametrize("status", ["completed", "diverged"])
def test_completed_and_diverged_runs_are_published(tmp_path: Path, status: str) -> None:
    runs, store = tmp_path / "runs", tmp_path / "results"
    make_run(runs, "r1", status=status)
    assert [p.run_id for p in publish(["r1"], runs, store)] == ["r1"]


def test_a_stack_member_needs_each_other_member_named_or_already_published(tmp_path: Path) -> None:
    runs, store = tmp_path / "runs", tmp_path / "results"
    for run_id in ("a", "b", "c"):
        make_run(runs, run_id, stack=["a", "b", "c"])
    with pytest.raises(UserError, match="member c is neither named"):
        publish(["a", "b"], runs, store)
    assert [p.run_id for p in publish(["a", "b", "c"], runs, store)] == ["a", "b", "c"]  # all named, store empty
    other = tmp_path / "other"
    make_run(other, "b", stack=["a", "b", "c"])  # b and c in the other store already: a alone completes it there
    make_run(other, "c", stack=["a", "b", "c"])
    assert [p.run_id for p in publish(["a"], runs, other)] == ["a"]


def test_a_run_is_not_published_onto_itself_however_the_store_is_spelt(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = make_run(runs, "r1")
    alias = tmp_path / "alias"
    alias.symlink_to(runs, target_is_directory=True)
    for spelt in (alias, tmp_path / "x" / ".." / "runs"):
        (tmp_path / "x").mkdir(exist_ok=True)
        with pytest.raises(UserError, match="is the store the run is in"):
            publish(["r1"], runs, spelt)
    assert (run / "checkpoints" / "last.ckpt").is_file() and (run / "metrics.csv").is_file()


def test_the_budget_counts_a_republished_run_once(tmp_path: Path) -> None:
    runs, store = tmp_path / "runs", tmp_path / "results"
    make_run(runs, "r1")
    publish(["r1"], runs, store)
    size = store_size(store)
    assert [p.run_id for p in publish(["r1"], runs, store, budget=size + size // 2)] == ["r1"]  # replaced, not added
    assert store_size(store) == size
    make_run(runs, "r2")
    with pytest.raises(UserError, match="over its budget"):  # a second run does add its bytes
        publish(["r2"], runs, store, budget=size + size // 2)


def test_a_killed_publication_is_finished_only_into_its_own_store(tmp_path: Path) -> None:
    store, other = tmp_path / "results", tmp_path / "other"
    staging = tmp_path / f"{STAGING_PREFIX}killed"
    staged = staging / STAGED / TASK / MODEL / "r9"
    staged.mkdir(parents=True)
    (staged / "results.json").write_text("{}")
    (staging / DESTINATION).write_text(str(other.resolve()) + "\n")
    (staging / READY).touch()
    assert finish_interrupted(store) == []
    assert not (store / TASK / MODEL / "r9").exists() and staged.is_dir()  # left for its own store
    assert finish_interrupted(other) == [other / TASK / MODEL / "r9"]
    assert (other / TASK / MODEL / "r9" / "results.json").is_file() and not staging.exists()


def test_a_run_named_by_id_and_by_an_unnormalised_path_is_one_run(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = make_run(runs, "r1")
    spelt = run.parent / ".." / MODEL / "r1"  # runs/babi/lstm/../lstm/r1
    found = distinct_runs(["r1", str(spelt), str(run)], runs)
    assert len(found) == 1 and found[0].path.resolve() == run.resolve()
