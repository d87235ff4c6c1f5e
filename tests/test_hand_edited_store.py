"""Mistakes in what the harness reads from the user's side: folder variables set to an empty value, an integer
override no int64 holds, a run's results.json or config.yaml edited by hand into another shape. Each ends in one
``error:`` line with exit code 2 (no traceback), names the file and what is wrong, and leaves the other runs of the
store listed; nothing is trained or written for a command that cannot run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cli import main
from harness.errors import UserError
from harness.runs import Run, index
from harness.schema import INT64_MAX, KeyType, check_value
from reports.store import UNREADABLE, load_run

BABI_LSTM = ("--task", "babi", "--model", "lstm", "--profile", "smoke")


def refused(capsys: pytest.CaptureFixture[str], args: list[str], fragment: str) -> str:
    """Run ``harness <args>``: exit code 2 and one ``error:`` line on stderr containing ``fragment`` (argparse's own
    refusals exit through SystemExit)."""
    try:
        code = main(args)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: ") and fragment in err[0], (code, err)
    return err[0]


# folder variables set to an empty value ------------------------------------------------------------------------
@pytest.mark.parametrize(("variable", "args"), [
    ("HARNESS_RUNS_DIR", ["runs"]),
    ("HARNESS_RUNS_DIR", ["bench", *BABI_LSTM]),
    ("HARNESS_CACHE_DIR", ["validate", *BABI_LSTM]),
    ("HARNESS_DATA_DIR", ["validate", *BABI_LSTM]),
])
def test_a_folder_variable_set_empty_is_refused_not_read_as_the_current_folder(
        env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        variable: str, args: list[str]) -> None:
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.setenv(variable, "")
    refused(capsys, args, f"{variable} is set but empty; unset it for the default")
    assert not any(here.iterdir()), "a run or a cache was written into the current folder"


# integers beyond int64 -----------------------------------------------------------------------------------------
def test_an_integer_override_beyond_int64_is_refused_before_a_run(env: dict[str, str],
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    refused(capsys, ["bench", *BABI_LSTM, f"train.batch_size={'9' * 23}"],
            "bad value for 'train.batch_size' (command line): an integer of 23 digits is beyond the int64 range")
    assert not Path(env["HARNESS_RUNS_DIR"]).exists()


def test_check_value_keeps_the_largest_int64_and_refuses_one_more() -> None:
    kind = KeyType(("int",), minimum=1)
    check_value("k", INT64_MAX, kind)
    with pytest.raises(UserError, match="beyond the int64 range"):
        check_value("k", INT64_MAX + 1, kind)


# results.json of the wrong shape --------------------------------------------------------------------------------
def stored_run(runs: Path, run_id: str, **changes: Any) -> Path:
    """A completed bAbI lstm run's folder as the harness writes it (results.json and config.yaml), with ``changes``
    made to its results by hand (a value of None: the key deleted)."""
    path = runs / "babi" / "lstm" / run_id
    path.mkdir(parents=True)
    results: dict[str, Any] = {"schema_version": 2, "run_id": run_id, "task": "babi", "model": "lstm",
                               "profile": "smoke", "seed": 0, "status": "completed", "metrics": {"test/acc": 0.5},
                               "best": None, "steps": 8, "epochs": 2, "data": {}, "code": {}, "attempts": []}
    results.update(changes)
    (path / "results.json").write_text(json.dumps({k: v for k, v in results.items() if v is not None}))
    (path / "config.yaml").write_text(yaml.safe_dump({"seed": 0, "task": {"name": "babi"}, "model": {"name": "lstm"}}))
    return path


EDITS = {
    "metrics not a mapping": ({"metrics": "x"}, 'metrics "x"'),
    "a metric that is no number": ({"metrics": {"test/acc": "high"}}, 'metrics {"test/acc": "high"}'),
    "seed not an integer": ({"seed": "x"}, 'seed "x"'),
    "data not a mapping": ({"data": "x"}, 'data "x"'),
}


@pytest.mark.parametrize("edit", EDITS.values(), ids=EDITS.keys())
def test_a_results_record_of_the_wrong_shape_is_named_by_every_command_that_reads_it(
        env: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        edit: tuple[dict[str, Any], str]) -> None:
    runs = Path(env["HARNESS_RUNS_DIR"])
    changes, shown = edit
    damaged = stored_run(runs, "babi-lstm-smoke-s0-edited", **changes)
    stored_run(runs, "babi-lstm-smoke-s0-intact")
    said = f"results.json has a value of the wrong type: {shown}"
    assert Run(damaged).damage() == said  # bench sets such a record aside and resumes the run, as an unreadable one
    assert main(["runs"]) == 0
    listing = capsys.readouterr().out
    assert "babi-lstm-smoke-s0-edited  unreadable" in listing and "babi-lstm-smoke-s0-intact  completed" in listing
    assert (f"1 run cannot be read (babi-lstm-smoke-s0-edited: {said}): the bench command that trained a run keeps "
            "its damaged results.json aside and resumes it") in listing  # what is wrong, and what mends it
    row = next(row for row in index(runs) if row["run_id"] == damaged.name)
    assert row["status"] == "unreadable" and said in row["error"]
    assert load_run(damaged / "results.json", runs).status == UNREADABLE
    for args, doing in ((["predict", damaged.name], "predicted"),
                        (["retest", damaged.name, "task.test_on=[generator]"], "retested"),
                        (["publish", damaged.name, "--to", str(tmp_path / "published")], "published"),
                        (["reproduce", str(damaged), "--results-dir", "", "--runs-dir", str(tmp_path / "again")],
                         "reproduced")):
        refused(capsys, args, f"{damaged}: {said}; cannot be {doing}")
    assert not (tmp_path / "published").exists() and not (tmp_path / "again").exists()


def test_reproduce_refuses_a_damaged_config_rather_than_train_the_defaults(
        env: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = stored_run(Path(env["HARNESS_RUNS_DIR"]), "babi-lstm-smoke-s0-edited")
    (run / "config.yaml").write_text("")
    refused(capsys, ["reproduce", str(run), "--results-dir", "", "--runs-dir", str(tmp_path / "again")],
            f"{run / 'config.yaml'} is damaged (no task.name or model.name); the run cannot be reproduced")
    (run / "config.yaml").write_text("task: [unclosed\n")
    refused(capsys, ["reproduce", str(run), "--results-dir", "", "--runs-dir", str(tmp_path / "again")],
            f"{run / 'config.yaml'} is damaged (ParserError")
    assert not (tmp_path / "again").exists()


@pytest.mark.slow
def test_a_trained_run_edited_by_hand_resumes_and_its_config_cut_short_is_named_by_predict(
        env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", *BABI_LSTM]) == 0
    run = Run(next(Path(env["HARNESS_RUNS_DIR"]).glob("babi/lstm/*")))
    results = run.read_results()
    run.results_path.write_text(json.dumps({**results, "metrics": "x"}))
    capsys.readouterr()
    assert main(["bench", *BABI_LSTM]) == 0  # the damaged record kept aside, the run resumed from its checkpoint
    out = capsys.readouterr().out
    assert "results.json has a value of the wrong type: metrics" in out and "kept as results.json.damaged-" in out
    assert run.read_results()["metrics"] == results["metrics"]
    config = yaml.safe_load(run.config_path.read_text())
    run.config_path.write_text(yaml.safe_dump({key: value for key, value in config.items() if key != "train"}))
    refused(capsys, ["predict", run.path.name], f"{run.config_path} lacks train, which the model or its evaluation "
            "needs (damaged, or written by an older harness); the run cannot be predicted")


def test_data_fetch_dest_empty_is_refused_not_read_as_the_data_folder(env: dict[str, str],
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    refused(capsys, ["data", "fetch", "mnist", "--dest", ""],
            "argument --dest: an empty path; leave the option out for the default")
