"""`harness retest`: a run trained on generated bAbI data, tested on the official files after training, gives
exactly what a run trained the same way with the official test set attached from the start reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import UserError
from harness.runners.retest import retest
from tests.conftest import requires_real_babi

SMOKE = ["bench", "--task", "babi", "--model", "lstm", "--profile", "smoke", "task.source=generator",
         "train.limit_eval_batches=null"]  # whole test splits, as a retest evaluates them


@requires_real_babi
@pytest.mark.slow
def test_retest_on_official_files_equals_testing_on_them_from_the_start(env, tmp_path):
    plain, attached = tmp_path / "plain", tmp_path / "attached"
    assert main([*SMOKE, "--runs-dir", str(plain)]) == 0
    assert main([*SMOKE, "task.test_on=[files]", "--runs-dir", str(attached)]) == 0
    (run,) = plain.glob("*/*/*/results.json")
    (reference,) = attached.glob("*/*/*/results.json")
    assert run.parent.name != reference.parent.name  # other data attached: another run id
    added = retest(run.parent.name, ["task.test_on=[files]"], plain)
    expected = json.loads(reference.read_text())["metrics"]
    assert set(added) == {"test_files/acc", "test_files/loss", "test_files/error"}
    assert added["test_files/acc"] == pytest.approx(expected["test_files/acc"], abs=1e-6)
    assert added["test_files/loss"] == pytest.approx(expected["test_files/loss"], rel=1e-5)
    results = json.loads(run.read_text())
    assert results["metrics"]["test_files/acc"] == added["test_files/acc"]
    (record,) = results["retests"]
    assert record["splits"] == ["test_files"] and record["data"]["files"] and record["git"]["commit"]
    with pytest.raises(UserError, match="no new test split"):
        retest(run.parent.name, ["task.test_on=[files]"], plain)
    with pytest.raises(UserError, match="not a test setting"):
        retest(run.parent.name, ["optim.lr=1"], plain)
    assert main(["retest", "nope", "task.test_on=[files]", "--runs-dir", str(plain)]) == 2
    # `harness predict` writes the retest's split too, scored whole as the retest scored it
    from harness.runners.predictions import predict_run, read_predictions

    summary = predict_run(run.parent.name, plain)
    assert set(summary) == {"test", "test_files"}
    assert summary["test_files"]["acc"] == pytest.approx(added["test_files/acc"], abs=1e-6)
    assert summary["test"]["acc"] == pytest.approx(results["metrics"]["test/acc"], abs=1e-6)
    rows = read_predictions(run.parent / "predictions")
    assert sum(row["split"] == "test_files" for row in rows) == summary["test_files"]["examples"] == 1000


@requires_real_babi
def test_retest_refuses_a_run_without_a_checkpoint(env, tmp_path):
    runs = tmp_path / "runs"
    assert main([*SMOKE, "--runs-dir", str(runs)]) == 0
    (run,) = runs.glob("*/*/*/results.json")
    for ckpt in (run.parent / "checkpoints").glob("*.ckpt"):
        ckpt.unlink()
    with pytest.raises(UserError, match="no intact checkpoint"):
        retest(str(run.parent), ["task.test_on=[files]"], Path(runs))


def test_a_run_that_cannot_be_retested_says_what_it_is_before_judging_the_settings(tmp_path: Path,
                                                                                   capsys: pytest.CaptureFixture[str]):
    """A stepwise run (world-state streams) is not retested: the error names its kind, whatever settings were
    given, rather than first calling a task setting "not a test setting"."""
    from tests.test_report import write_run

    run = write_run(tmp_path, "lstm_recall", "stream_lstm", 0, metrics={"test/acc": 0.9})
    for args in (["task.n=2"], ["task.test_on=[x]"]):
        assert main(["retest", run.name, *args, "--runs-dir", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "only single-protocol supervised runs can be retested; " \
            f"{run.name} is a stepwise run" in err, err
    assert main(["predict", run.name, "--runs-dir", str(tmp_path)]) == 2
    assert f"{run.name} is a stepwise run" in capsys.readouterr().err


def test_retest_refuses_a_damaged_mini_set_in_one_line(env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]):
    """A Relations Game mini set damaged after training (a compressed array zlib cannot read) is named in one line,
    as bench names it, not a zlib traceback."""
    from tests.test_bad_inputs import damaged_deflate, npz

    mini = tmp_path / "data" / "relations_game" / "mini_between_hexos.npz"
    mini.parent.mkdir(parents=True)
    npz()(mini)
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    runs = tmp_path / "runs"
    assert main(["bench", "--task", "relations_game", "--model", "mlp1", "--profile", "smoke", "task.tasks=[between]",
                 "--runs-dir", str(runs)]) == 0
    (run,) = runs.glob("*/*/*/results.json")
    capsys.readouterr()
    damaged_deflate(mini)
    assert main(["retest", run.parent.name, "task.test_sets=[hexominoes,stripes,pentominoes]",
                 "--runs-dir", str(runs)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "mini_between_hexos.npz: unreadable array in the archive" in err, err


@requires_real_babi
@pytest.mark.slow
def test_a_run_whose_data_files_are_gone_says_so_not_what_training_would_do(env, tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch,
                                                                             capsys: pytest.CaptureFixture[str]):
    """A run trained on the official files, retested or predicted after they went: the files are named with what
    helps; not the task's advice to train on generated data (task.source), which retest and predict refuse."""
    import shutil

    from tests.conftest import SHARED_DATA

    folder = tmp_path / "data" / "babi" / "en-10k"
    folder.mkdir(parents=True)
    for split in ("train", "test"):
        name = f"qa1_single-supporting-fact_{split}.txt"
        shutil.copy(SHARED_DATA / "babi" / "en-10k" / name, folder / name)
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))
    runs = tmp_path / "runs"
    assert main(["bench", "--task", "babi", "--model", "lstm", "--profile", "smoke", "task.source=files",
                 "--runs-dir", str(runs)]) == 0
    (run,) = runs.glob("*/*/*/results.json")
    (folder / "qa1_single-supporting-fact_train.txt").unlink()
    capsys.readouterr()
    for command in (["predict", run.parent.name], ["retest", run.parent.name, "task.test_on=[generator]"]):
        assert main([*command, "--runs-dir", str(runs)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert (f"{run.parent.name} read data files not found now under {tmp_path / 'data'} (HARNESS_DATA_DIR): "
                "babi/en-10k/qa1_single-supporting-fact_train.txt; the run cannot be") in err, err
        assert "task.source" not in err
