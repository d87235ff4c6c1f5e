"""Per-example predictions: every supervised run stores its test splits' targets and predictions; the accuracy
recomputed from the file is the one the run reported; bAbI's wrong answers read back as text; `harness
predict` writes the same file again from the checkpoint; the run page shows both."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.runners.predictions import FOLDER, predict_run, read_predictions
from reports.build import main as build_report
from tests.conftest import SHARED_DATA, only_run, requires_real_babi

FLOAT32 = 1e-6  # the run stores its metrics as float32
BABI = ["bench", "--task", "babi", "--model", "lstm", "--profile", "smoke", "task.source=generator"]
RELATIONS = ["bench", "--task", "relations_game", "--model", "mlp1", "--profile", "smoke",
             "task.tasks=[between]", "task.real_sets=false"]


def _rescored(rows: list[dict], split: str) -> float:
    chosen = [row for row in rows if row["split"] == split]
    assert all(row["correct"] == int(row["target"] == row["prediction"]) for row in chosen)
    return sum(row["correct"] for row in chosen) / len(chosen)


def test_a_babi_run_stores_its_predictions_and_its_wrong_answers_as_text(env, tmp_path):
    runs = tmp_path / "runs"
    assert main([*BABI, "--runs-dir", str(runs)]) == 0
    run = only_run(runs)
    results = json.loads((run / "results.json").read_text())
    rows = read_predictions(run / FOLDER)
    summary = json.loads((run / FOLDER / "summary.json").read_text())
    # the smoke profile tests 2 batches of 64: the file holds exactly the examples the test pass saw
    assert summary["test"]["examples"] == len(rows) == 100
    assert [row["example"] for row in rows] == list(range(100))
    assert _rescored(rows, "test") == pytest.approx(results["metrics"]["test/acc"], abs=FLOAT32)
    assert summary["test"]["acc"] == pytest.approx(summary["test"]["reported_acc"], abs=FLOAT32)
    wrong = json.loads((run / FOLDER / "wrong.json").read_text())
    wrong_ids = [row["example"] for row in rows if not row["correct"]]
    assert wrong and [w["example"] for w in wrong] == wrong_ids[: len(wrong)]
    for item in wrong:
        assert item["story"] and item["question"].endswith("?") and item["answer"] != item["said"]

    before = (run / FOLDER / "predictions.csv.gz").read_bytes()
    (run / FOLDER / "predictions.csv.gz").unlink()
    predict_run(run.name, runs)  # again from the best checkpoint: the same bytes
    assert (run / FOLDER / "predictions.csv.gz").read_bytes() == before

    site = tmp_path / "site"
    assert build_report(["--runs-dir", str(runs), "--results-dir", "", "--out", str(site)]) == 0
    page = (site / "runs" / f"{run.name}.html").read_text()
    assert "Wrong answers (a sample)" in page and wrong[0]["question"] in page and "the model said" in page


def test_held_out_splits_are_predicted_and_the_page_lists_wrong_ids(env, tmp_path):
    runs = tmp_path / "runs"
    assert main([*RELATIONS, "--runs-dir", str(runs)]) == 0
    run = only_run(runs)
    metrics = json.loads((run / "results.json").read_text())["metrics"]
    rows = read_predictions(run / FOLDER)
    splits = {row["split"] for row in rows}
    assert splits == {"test", "test_hexominoes", "test_stripes"}
    for split in splits:
        assert _rescored(rows, split) == pytest.approx(metrics[f"{split}/acc"], abs=FLOAT32)
    assert not (run / FOLDER / "wrong.json").exists()  # no text rendering for images
    site = tmp_path / "site"
    assert build_report(["--runs-dir", str(runs), "--results-dir", "", "--out", str(site)]) == 0
    page = (site / "runs" / f"{run.name}.html").read_text()
    assert "test_stripes" in page and "Predictions" in page


def test_predict_refuses_runs_it_cannot_predict(env, tmp_path, capsys):
    runs = tmp_path / "runs"
    assert main([*BABI, "--runs-dir", str(runs)]) == 0
    run = only_run(runs)
    for checkpoint in (run / "checkpoints").glob("*.ckpt"):
        checkpoint.unlink()
    capsys.readouterr()
    assert main(["predict", run.name, "--runs-dir", str(runs)]) == 2
    assert "no intact checkpoint" in capsys.readouterr().err
    assert main(["predict", "nope", "--runs-dir", str(runs)]) == 2
    assert main(["predict", run.name, "--runs-dir", str(Path(tmp_path / "elsewhere"))]) == 2


def test_predict_exits_1_when_its_predictions_do_not_give_the_reported_accuracy(env, tmp_path, capsys):
    """A reported figure its checkpoint no longer explains (here: results.json edited) is named, exit code 1."""
    runs = tmp_path / "runs"
    assert main([*BABI, "--runs-dir", str(runs)]) == 0
    run = only_run(runs)
    results = json.loads((run / "results.json").read_text())
    results["metrics"]["test/acc"] = results["metrics"]["test/acc"] / 2 + 0.01
    (run / "results.json").write_text(json.dumps(results))
    capsys.readouterr()
    assert main(["predict", run.name, "--runs-dir", str(runs)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (f"{run.name}: the predictions of test do not give the accuracy the run reported (see above): its "
                   "best checkpoint or its data no longer explain its figure"), err
    summary = json.loads((run / FOLDER / "summary.json").read_text())
    assert summary["test"]["acc"] != pytest.approx(summary["test"]["reported_acc"], abs=FLOAT32)


@requires_real_babi
def test_predict_refuses_data_that_changed_since_the_run_scored_it(env, tmp_path, monkeypatch, capsys):
    """Predictions of other data than the run's figures measured would stand beside figures they do not explain:
    a test file edited after training is named, and the stored predictions are left as they were."""
    data = tmp_path / "data" / "babi" / "en-10k"
    data.mkdir(parents=True)
    for path in (SHARED_DATA / "babi" / "en-10k").glob("qa1_*"):
        shutil.copy(path, data / path.name)
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    runs = tmp_path / "runs"
    assert main([*BABI[:-1], "task.source=files", "--runs-dir", str(runs)]) == 0
    run = only_run(runs)
    before = (run / FOLDER / "predictions.csv.gz").read_bytes()
    test_file = data / "qa1_single-supporting-fact_test.txt"
    test_file.write_text(test_file.read_text().replace("\tkitchen\t", "\tgarden\t"))
    capsys.readouterr()
    assert main(["predict", run.name, "--runs-dir", str(runs)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"error: {run.name} cannot be predicted: its data changed since it was scored "
                   "(babi/en-10k/qa1_single-supporting-fact_test.txt differs from what it measured); put back the "
                   "data it used, or train a run on this data"), err
    assert (run / FOLDER / "predictions.csv.gz").read_bytes() == before
