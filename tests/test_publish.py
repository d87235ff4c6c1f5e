"""The reference store: `harness publish` copies what a reader needs, and the shipped results/ keeps its promises
(small, completed runs only, no checkpoints, no machine paths, every run with its provenance)."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import UserError
from harness.publish import BUDGET_BYTES, PUBLISHABLE, RESULTS_DIR, Published, describe, publish, store_size

SMOKE = ["bench", "--task", "babi", "--model", "lstm", "--profile", "smoke"]


ABSOLUTE_PATH = re.compile(r"(?:^|[\s(:=,'\"])/\w")  # a path from the root of some machine, e.g. /home/x


def smoke_run(runs: Path) -> Path:
    assert main([*SMOKE, "--runs-dir", str(runs)]) == 0
    (results,) = runs.glob("*/*/*/results.json")
    return results.parent


def test_publish_copies_a_completed_run_without_checkpoints(env, tmp_path, capsys):
    runs, store = tmp_path / "runs", tmp_path / "results"
    run = smoke_run(runs)
    assert (run / "checkpoints" / "last.ckpt").exists()
    assert main(["publish", run.name, "--runs-dir", str(runs), "--to", str(store)]) == 0
    copy = store / "babi" / "lstm" / run.name
    assert sorted(p.name for p in copy.iterdir()) == ["config.yaml", "metrics.csv.gz", "predictions",
                                                      "results.json"]
    kept = sorted(p.name for p in (copy / "predictions").iterdir())
    assert kept == ["predictions.csv.gz", "summary.json", "wrong.json"]
    assert json.loads((copy / "results.json").read_text()) == json.loads((run / "results.json").read_text())
    assert gzip.decompress((copy / "metrics.csv.gz").read_bytes()) == (run / "metrics.csv").read_bytes()
    said = capsys.readouterr().out
    assert "published" in said and f"note: {run.name} is a smoke-profile run" in said  # not a benchmark number
    packed = (copy / "metrics.csv.gz").read_bytes()
    again = publish([str(run)], runs, store)  # by directory; replaces the earlier copy
    assert [p.run_id for p in again] == [run.name] and len(list(store.glob("*/*/*/results.json"))) == 1
    assert (copy / "metrics.csv.gz").read_bytes() == packed  # the same bytes: no change for git to see


def test_publish_keeps_a_stepwise_runs_rollout_and_pictures(env, tmp_path):
    runs, store = tmp_path / "runs", tmp_path / "results"
    args = ["bench", "--task", "game_of_life", "--model", "updater_extractor", "--profile", "smoke"]
    assert main([*args, "--runs-dir", str(runs)]) == 0
    (results,) = runs.glob("*/*/*/results.json")
    assert [p.run_id for p in publish([str(results.parent)], runs, store)] == [results.parent.name]
    copy = store / "game_of_life" / "updater_extractor" / results.parent.name
    assert sorted(p.name for p in copy.iterdir()) == ["config.yaml", "metrics.csv.gz", "pictures", "results.json",
                                                      "rollout.csv"]
    assert sorted(p.name for p in (copy / "pictures").iterdir()) == ["step_1.png", "step_10.png", "step_2.png",
                                                                     "step_5.png"]


def test_publish_refuses_unfinished_unknown_and_oversized(env, tmp_path):
    runs, store = tmp_path / "runs", tmp_path / "results"
    run = smoke_run(runs)
    with pytest.raises(UserError, match="no run 'nope'"):
        publish(["nope"], runs, store)
    with pytest.raises(UserError, match="over its budget"):
        publish([run.name], runs, store, budget=100)
    assert not store.exists() or store_size(store) == 0  # nothing half-published
    results = json.loads((run / "results.json").read_text())
    (run / "results.json").write_text(json.dumps({**results, "status": "interrupted"}))
    with pytest.raises(UserError, match="only a completed or diverged run can be published"):
        publish([run.name], runs, store)
    (run / "results.json").write_text(json.dumps({**results, "status": "diverged", "error": "nan at step 3"}))
    assert [p.run_id for p in publish([run.name], runs, store)] == [run.name]  # a diverged run is a result
    shutil.rmtree(store)
    (run / "results.json").write_text('{"status": "compl')
    with pytest.raises(UserError, match="not readable JSON"):
        publish([run.name], runs, store)


def test_shipped_reference_store_is_small_complete_and_portable():
    """What results/ holds: finished runs (completed, or diverged with the reason) with their config, curves and
    provenance; no checkpoints, no W&B files, no absolute paths of the machine they ran on; within the size
    budget, the curves gzipped."""
    assert store_size(RESULTS_DIR) <= BUDGET_BYTES
    runs = sorted(RESULTS_DIR.glob("*/*/*/results.json"))
    for path in runs:
        results = json.loads(path.read_text())
        run = path.parent
        assert results["status"] in PUBLISHABLE, run
        assert results["status"] == "completed" or results["error"], run
        stages = list(run.glob("stages/*/results.json"))  # a curriculum keeps one curve per stage
        curves = [stage.parent / "metrics.csv.gz" for stage in stages] or [run / "metrics.csv.gz"]
        assert results["run_id"] == run.name and (run / "config.yaml").exists(), run
        assert all(curve.exists() and not curve.with_suffix("").exists() for curve in curves), run
        assert not (run / "checkpoints").exists() and not (run / "wandb").exists(), run
        assert results["code"]["files"] and results["data"]["fingerprint"], run
        assert all(a["git"]["commit"] for a in results["attempts"]), run
        assert not ABSOLUTE_PATH.search(json.dumps(results.get("data_source"))), run
        assert str(Path.home()) not in path.read_text(), run


def _reference_run_with_stages() -> Path:
    """A shipped reference run of a curriculum (its curves one per stage), outside any stack."""
    for path in sorted(RESULTS_DIR.glob("*/*/*/stages/*/metrics.csv.gz")):
        run = path.parents[2]
        if not json.loads((run / "results.json").read_text()).get("stack"):
            return run
    pytest.skip("no curriculum run in results/")


def test_publishing_a_published_run_again_keeps_its_gzipped_curves(tmp_path):
    """A run of a reference store (its curves already metrics.csv.gz) published again, into another store or
    into its own, keeps its curves and each stage's: they were dropped, and the store's copy lost them."""
    reference = _reference_run_with_stages()
    store = tmp_path / "results"
    shutil.copytree(reference, store / reference.parent.parent.name / reference.parent.name / reference.name)
    curves = sorted(p.relative_to(store) for p in store.rglob("metrics.csv.gz"))
    assert len(curves) >= 2
    for target in (tmp_path / "elsewhere", store):
        assert [p.run_id for p in publish([reference.name], store, target)] == [reference.name]
        assert sorted(p.relative_to(target) for p in target.rglob("metrics.csv.gz")) == curves
        assert all((target / curve).read_bytes() == (reference.parents[2] / curve).read_bytes() for curve in curves)


@pytest.mark.parametrize("name", ["*", "babi-*", "*-s0-*", "babi-lstm-smoke-s0-[0-9a-f]*"])
def test_a_run_is_named_by_its_id_never_by_a_pattern(tmp_path, name):
    """A name with glob characters names no run: it published (and `harness reproduce` trained again) the first
    run the pattern matched."""
    from harness.code_changes import _reference_run
    from harness.reproduce import find_stored

    store = tmp_path / "results"
    run = store / "babi" / "lstm" / "babi-lstm-smoke-s0-0c1eb029"
    run.mkdir(parents=True)
    (run / "results.json").write_text(json.dumps({"run_id": run.name, "status": "completed"}))
    with pytest.raises(UserError, match="no run"):
        publish([name], store, tmp_path / "elsewhere")
    with pytest.raises(UserError, match="no run"):
        find_stored(name, store, store)
    assert _reference_run(store, name) is None
    assert _reference_run(store, run.name) is not None


def test_a_run_is_not_published_onto_itself(tmp_path):
    """``--to`` the run store a run is in replaced the run with its published copy: its checkpoints and plain curves
    were deleted. Refused, and the run left whole; a run already in published form may still be published again."""
    store = tmp_path / "runs"
    run = store / "babi" / "lstm" / "babi-lstm-smoke-s0-0c1eb029"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "last.ckpt").write_bytes(b"weights")
    (run / "results.json").write_text(json.dumps({"run_id": run.name, "task": "babi", "model": "lstm",
                                                  "status": "completed"}))
    (run / "config.yaml").write_text("task: {name: babi}\n")
    (run / "metrics.csv").write_text("step,val/acc\n1,0.5\n")
    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    with pytest.raises(UserError, match="is the store the run is in; .* lose its checkpoints, metrics.csv"):
        publish([run.name], store, store)
    assert sorted(p.relative_to(run) for p in run.rglob("*")) == before
    assert [p.run_id for p in publish([run.name], store, tmp_path / "results")] == [run.name]
    published = tmp_path / "results"
    assert [p.run_id for p in publish([run.name], published, published)] == [run.name]  # in place, already published


def test_only_smoke_profile_runs_get_the_note(tmp_path):
    runs = [Published("a-cpu", tmp_path, 1, "cpu"), Published("b-smoke", tmp_path, 1, "smoke"),
            Published("c-old", tmp_path, 1)]
    notes = [line for line in describe(runs, tmp_path).splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and notes[0].startswith("note: b-smoke is a smoke-profile run")
