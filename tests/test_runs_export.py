"""``harness runs --format json|csv`` and ``harness.runs.run_table``: one record per run for other programs, on a
small hand-written store (tests/test_report.py's) and on the shipped reference store (results/)."""

from __future__ import annotations

import csv
import functools
import io
import json
import math
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cli import main
from harness.errors import UserError
from harness.publish import RESULTS_DIR
from harness.runners.tune import held_out
from harness.runs import GONE, LEADING_COLUMNS, run_table
from reports import store as store_module
from tests.test_report import make_store, write_run

KILLED = "babi-lstm-cpu-s3-k"
BROKEN = "babi-lstm-cpu-s4-u"
SWEPT = "babi-lstm-cpu-s5-w"
STALE = "babi-lstm-cpu-s6-o"
NAN = "babi-lstm-cpu-s7-n"
STACK = ["relations_game-mlp2-cpu-s0-a", "relations_game-mlp2-cpu-s1-a"]


def _edit(path: Path, name: str, **fields: Any) -> None:
    text = (path / name).read_text()
    data = json.loads(text) if name.endswith(".json") else yaml.safe_load(text)
    data.update(fields)
    (path / name).write_text(json.dumps(data) if name.endswith(".json") else yaml.safe_dump(data))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/test_report.py's store, with a killed run, an unreadable one, a sweep's trial, a stale run, a run whose
    test accuracy is NaN, and a stack of two."""
    runs = tmp_path_factory.mktemp("export") / "runs"
    make_store(runs)
    official = {"babi_id": 1, "source": "files", "data_set": "en-10k"}
    killed = write_run(runs, "babi", "lstm", 3, status="running", tag="k", task_cfg=official)
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    _edit(killed, "results.json", steps=0, epochs=0, wall_time_s=0.0,
          owner={"host": socket.gethostname(), "pid": int(ended.stdout)})
    (write_run(runs, "babi", "lstm", 4, tag="u", task_cfg=official) / "results.json").write_text("{not json")
    swept = write_run(runs, "babi", "lstm", 5, tag="w", task_cfg=official, metrics={"test/acc": 0.5})
    _edit(swept, "config.yaml", tracking={"group": "grid", "tags": ["sweep-grid"]})
    stale = write_run(runs, "babi", "lstm", 6, tag="o", task_cfg=official, metrics={"test/acc": 0.5})
    _edit(stale, "results.json", code={"fingerprint": "x", "files": {"harness/data.py": "0" * 16}})
    write_run(runs, "babi", "lstm", 7, tag="n", task_cfg=official, metrics={"test/acc": math.nan, "test/error": 0.5})
    for run_id in STACK:
        _edit(runs / "relations_game" / "mlp2" / run_id, "results.json", stack=STACK)
    return runs


def _runs(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["runs", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _export(args: list[str], capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    code, out, err = _runs([*args, "--format", "json"], capsys)
    assert code == 0, err
    return json.loads(out, parse_constant=lambda name: pytest.fail(f"{name} in the JSON"))


def _cell(value: Any) -> str:
    """How the csv module writes a record's value."""
    return "" if value is None else str(value)


def _same_as_csv(records: list[dict[str, Any]], text: str) -> None:
    """``text`` parses back with the csv module to ``records``: the same columns, in order, and the same cells (a
    number to the same number)."""
    reader = csv.DictReader(io.StringIO(text))
    rows = list(reader)
    assert reader.fieldnames == list(records[0])
    assert len(rows) == len(records)
    for row, record in zip(rows, records, strict=True):
        assert row == {key: _cell(value) for key, value in record.items()}
        for key, value in record.items():
            if isinstance(value, float):
                assert float(row[key]) == value


def test_json_has_one_record_per_listed_run_with_fixed_columns_then_sorted_metrics(store, capsys):
    records = _export(["--runs-dir", str(store)], capsys)
    _, table, _ = _runs(["--runs-dir", str(store)], capsys)
    listed = [line.split()[0] for line in table.splitlines()[1:len(records) + 1]]
    assert [record["run_id"] for record in records] == listed
    for record in records:
        assert list(record)[:len(LEADING_COLUMNS)] == list(LEADING_COLUMNS)
        assert list(record) == list(records[0])
    metrics = list(records[0])[len(LEADING_COLUMNS):]
    assert metrics == sorted(metrics)
    assert {"test/acc", "test_hexominoes/acc", "3_frozen_central/test/acc", "eval/win_rate", "eval/win_rate/1-0"} \
        <= set(metrics)
    assert not [name for name in metrics if name.startswith(("val/", "train/"))]  # held-out metrics only


def test_each_field_as_the_run_records_it_and_none_where_it_records_nothing(store, capsys):
    by_id = {record["run_id"]: record for record in _export(["--runs-dir", str(store)], capsys)}
    babi = by_id["babi-tpr_rnn-cpu-s1-a"]
    assert {key: babi[key] for key in ("task", "model", "setting", "profile", "seed", "status", "stale", "steps",
                                       "max_steps", "epochs", "max_epochs", "wall_time_s", "sweep", "stack")} == {
        "task": "babi", "model": "tpr_rnn", "setting": "task 1, en-10k (files)", "profile": "cpu", "seed": 1,
        "status": "completed", "stale": False, "steps": 40, "max_steps": None, "epochs": 2, "max_epochs": 4,
        "wall_time_s": 12.5, "sweep": None, "stack": None}
    assert babi["test/acc"] == pytest.approx(0.997) and babi["test_hexominoes/acc"] is None
    assert babi["run_dir"] == str(store / "babi" / "tpr_rnn" / "babi-tpr_rnn-cpu-s1-a")
    other_seed = by_id["babi-tpr_rnn-cpu-s0-a"]  # seeds of one configuration: one config digest, one label
    assert babi["config"] == other_seed["config"] and babi["variant"] == other_seed["variant"] == "task 1 [cpu]"
    assert by_id["babi-lstm-cpu-s0-a"]["config"] != babi["config"]
    killed = by_id[KILLED]  # as `harness runs` lists it; its progress from its curves, no wall time yet
    assert (killed["status"], killed["steps"], killed["epochs"], killed["wall_time_s"]) == (GONE, 40, 1, None)
    assert by_id[BROKEN]["status"] == "unreadable" and "results.json unreadable" in by_id[BROKEN]["error"]
    assert babi["stopped_by"] is None and killed["stopped_by"] is None  # no rule ended it; not completed
    config = Path(by_id[SWEPT]["run_dir"]) / "config.yaml"
    stored = config.read_text()
    _edit(config.parent, "config.yaml", train={**yaml.safe_load(stored)["train"], "max_time_s": 600})
    capped = {record["run_id"]: record for record in _export(["--runs-dir", str(store)], capsys)}[SWEPT]
    config.write_text(stored)  # the module's store as it was
    assert capped["stopped_by"] == "10-minute cap"  # 2 of 4 epochs, no other rule: the cap
    assert {record["stopped_by"] for record in by_id.values() if record["run_id"].startswith("boxworld-")} == \
        {"env steps"}  # an RL run's own stop_reason
    assert by_id[BROKEN]["seed"] == 4 and by_id[BROKEN]["test/acc"] is None  # its seed from config.yaml
    failed = by_id["relations_game-predinet-cpu-s2-f"]
    assert failed["status"] == "failed" and failed["error"].startswith("RuntimeError: CUDA out of memory")
    assert by_id[SWEPT]["sweep"] == "grid" and by_id[STALE]["stale"] is True
    assert by_id[NAN]["test/acc"] is None and by_id[NAN]["test/error"] == 0.5  # a NaN is no number: null
    assert by_id[STACK[1]]["stack"] == " ".join(STACK)
    rl = by_id["boxworld-relational-cpu-s0-r"]
    assert (rl["steps"], rl["max_steps"], rl["max_epochs"], rl["eval/win_rate"]) == (8007, 8000, None, 0.6)
    assert by_id["relations_game-predinet-cpu-s0-c"]["3_frozen_central/test/acc"] == 0.97  # a curriculum stage's


def test_csv_parses_back_to_the_json_records_and_the_filters_hold(store, capsys):
    records = _export(["--runs-dir", str(store), "--task", "babi"], capsys)
    assert {record["task"] for record in records} == {"babi"}
    code, out, err = _runs(["--runs-dir", str(store), "--task", "babi", "--format", "csv"], capsys)
    assert code == 0 and not err
    _same_as_csv(records, out)
    assert [r["run_id"] for r in _export(["--runs-dir", str(store), "--model", "mlp2"], capsys)] == STACK
    assert [r["run_id"] for r in _export(["--runs-dir", str(store), "--stale"], capsys)] == [STALE]
    assert run_table(store, task="babi") == records  # the notebook's entry point: the same records


def test_stdout_holds_the_records_only(store, capsys):
    code, out, err = _runs(["--runs-dir", str(store), "--model", "mlp1", "--format", "json"], capsys)
    assert (code, out, err) == (0, "[]\n", "no runs found\n")
    code, out, err = _runs(["--runs-dir", str(store), "--stale", "--model", "tpr_rnn", "--format", "csv"], capsys)
    assert (code, out.splitlines(), err) == (0, [",".join(LEADING_COLUMNS)], "none of the 2 runs is stale\n")
    code, out, err = _runs(["--runs-dir", str(store), "--imports", "harness/runs.py", "--format", "csv"], capsys)
    assert (code, out.splitlines()) == (0, [",".join(LEADING_COLUMNS)]) and "computes nothing" in err


def test_a_mistake_is_one_line_and_nothing_on_stdout(store, capsys):
    code, out, err = _runs(["--runs-dir", str(store / "babi"), "--format", "csv"], capsys)
    assert (code, out) == (2, "") and err.count("\n") == 1 and "a task's folder of a run store" in err
    code, out, err = _runs(["--runs-dir", str(store), "--task", "bab", "--format", "json"], capsys)
    assert (code, out) == (2, "") and err.count("\n") == 1 and "did you mean 'babi'" in err
    with pytest.raises(SystemExit) as stopped:
        main(["runs", "--runs-dir", str(store), "--format", "xlsx"])
    out, err = capsys.readouterr()
    assert stopped.value.code == 2 and out == "" and err.count("\n") == 1 and "choose from: table, json, csv" in err


def _exported(metrics: dict[str, Any]) -> dict[str, Any]:
    """The metrics of a results.json the export carries: the held-out ones and the rollout's."""
    return {key: value for key, value in metrics.items() if key in held_out(metrics) or key.startswith("rollout/")}


@pytest.mark.slow
def test_the_reference_store_exports_its_results_json_values(capsys, monkeypatch):
    # each run read once for both formats (the store's 379 runs take seconds to read)
    monkeypatch.setattr(store_module, "load_run", functools.cache(store_module.load_run))
    records = _export(["--reference"], capsys)
    stored = sorted(RESULTS_DIR.glob("*/*/*/results.json"))
    assert [Path(record["run_dir"]) / "results.json" for record in records] == stored
    for record, path in zip(records, stored, strict=True):
        results = json.loads(path.read_text())
        assert {key: record[key] for key in ("run_id", "task", "model", "profile", "seed", "status")} == \
            {key: results[key] for key in ("run_id", "task", "model", "profile", "seed", "status")}
        metrics = _exported(results["metrics"])
        assert {key: value for key, value in record.items() if key not in LEADING_COLUMNS and value is not None} \
            == metrics, record["run_id"]
        assert record["setting"]  # every reference run is named as the README's tables name it
    code, out, err = _runs(["--reference", "--format", "csv"], capsys)
    assert code == 0 and not err
    _same_as_csv(records, out)


def test_a_store_with_reproduction_checks_names_each_runs_latest(tmp_path, capsys):
    """``reproduced``: the latest ``harness reproduce --record`` check of a run in its store's reproductions.json,
    in one phrase (an older bit-for-bit check does not hide a newer one that differs); ``harness runs`` counts the
    checked runs under its table, and the report's run page shows the same phrase."""
    from reports.build import build_report

    runs = tmp_path / "results"
    checked, later = (write_run(runs, "babi", "lstm", seed, task_cfg={"babi_id": 1}, metrics={"test/acc": 0.9}).name
                      for seed in (0, 1))
    write_run(runs, "babi", "lstm", 2, task_cfg={"babi_id": 1}, metrics={"test/acc": 0.9})  # never checked
    check = {"figures": 5, "equal": 5, "cpu": "same", "checked_at": "2026-11-30T10:00:00Z"}
    (runs / "reproductions.json").write_text(json.dumps([
        {**check, "run_id": checked},
        {**check, "run_id": later, "checked_at": "2026-12-01T10:00:00Z", "equal": 3, "cpu": "other"},
        {**check, "run_id": later}]))  # the older check, listed after the newer one
    records = {record["run_id"]: record["reproduced"] for record in _export(["--runs-dir", str(runs)], capsys)}
    assert records == {checked: "bit for bit (5 figures; CPU: same kind; 2026-11-30)",
                       later: "3 of 5 figures equal (CPU: another kind; 2026-12-01)", "babi-lstm-cpu-s2-a": None}
    code, out, _ = _runs(["--runs-dir", str(runs)], capsys)
    assert code == 0 and "2 of these 3 runs were trained again (harness reproduce --record), 1 bit for bit at " \
        "their latest check" in out
    build_report(tmp_path / "mine", tmp_path / "site", results_dir=runs)
    page = (tmp_path / "site" / "runs" / f"reference-{later}.html").read_text()
    assert "<tr><th>trained again</th><td>3 of 5 figures equal (CPU: another kind; 2026-12-01)" in page
    (runs / "reproductions.json").write_text("{")
    code, out, err = _runs(["--runs-dir", str(runs)], capsys)
    assert code == 2 and "reproductions.json: not a readable JSON list of checks" in err and err.count("\n") == 1


def test_reference_with_runs_dir_is_refused(tmp_path, capsys):
    """``--reference`` lists results/ and ``--runs-dir`` another store: together, the second went unread and the
    reference runs were listed as if they were that store's."""
    (tmp_path / "store").mkdir()
    for form in ("table", "csv"):
        code, out, err = _runs(["--reference", "--runs-dir", str(tmp_path / "store"), "--format", form], capsys)
        assert code == 2 and not out and err.count("\n") == 1
        assert err.startswith("error: --reference lists the reference store") and "give one of them" in err
    with pytest.raises(UserError, match="give one of them"):
        run_table(tmp_path / "store", reference=True)
