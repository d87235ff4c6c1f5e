"""The report built from a researcher's own run store: what its index and run pages say about runs that did not
complete (a killed run's steps and wall time), and the index's line when no store holds a run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from reports.build import build_report, main
from tests.test_report import write_run


def _row(index: str, run_id: str) -> list[str]:
    """The cells of ``run_id``'s row in the index's runs table, tags stripped."""
    row = re.search(rf'<tr><td><a href="runs/{re.escape(run_id)}\.html">.*?</tr>', index, re.S)
    assert row, run_id
    return [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row.group(0), re.S)]


def test_a_run_still_running_shows_the_steps_of_its_curves_and_no_wall_time(tmp_path: Path) -> None:
    """``results.json`` of a running (or killed) run holds 0 steps and 0 s until its attempt ends: the index and
    the run page must not show those as its progress and its time."""
    runs = tmp_path / "runs"
    path = write_run(runs, "babi", "lstm", 0, status="running")
    results = json.loads((path / "results.json").read_text())
    results.update(steps=0, epochs=0, wall_time_s=0.0, finished_at=None)
    (path / "results.json").write_text(json.dumps(results))
    done = write_run(runs, "babi", "lstm", 1, metrics={"test/acc": 0.5})
    out = tmp_path / "site"
    build_report(runs, out, results_dir=None, jobs=1)
    index = (out / "index.html").read_text()
    _, status, _, _, acc, steps, wall, finished = _row(index, path.name)
    assert status.startswith("running") and acc == "–" and finished == "–"
    assert steps == "40 (its curves so far)" and wall == "–"
    assert _row(index, done.name)[5:7] == ["40", "12"]  # a completed run keeps what it recorded
    page = (out / "runs" / f"{path.name}.html").read_text()
    assert "<th>wall time</th><td>–</td>" in page and "0.0 s" not in page


def test_the_index_says_which_store_is_empty_and_which_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    empty, missing, out = tmp_path / "empty", tmp_path / "missing", tmp_path / "site"
    empty.mkdir()
    build_report(empty, out, results_dir=None, jobs=1)
    assert f"No runs: your run store {empty} holds no runs yet." in (out / "index.html").read_text()
    build_report(missing, out, results_dir=empty, jobs=1)
    assert (
        f"No runs: the reference store {empty} holds no runs yet; your run store {missing} does not exist."
        in (out / "index.html").read_text()
    )
    capsys.readouterr()
    # --results-dir '' reads no reference store: the note must not say that one is missing
    monkeypatch.setenv("HARNESS_RUNS_DIR", str(missing))
    assert main(["--results-dir", "", "--out", str(out), "--files-root", str(tmp_path), "--jobs", "1"]) == 0
    err = capsys.readouterr().err
    assert f"report: {missing} does not exist and no reference store was read" in err
    assert "nor the reference store exists" not in err


def test_a_smoke_run_is_never_coloured_against_a_published_number(tmp_path: Path) -> None:
    """A smoke-profile run (a few batches, a sample of the test set) at a paper's settings stands beside the
    published cell with its profile named, never as a match; the same run at the cpu profile is compared."""
    runs = tmp_path / "runs"
    official = {"babi_id": 1, "source": "files", "data_set": "en-10k"}
    for seed in (0, 1):
        path = write_run(runs, "babi", "tpr_rnn", seed, task_cfg=official, metrics={"test/acc": 0.1, "test/error": 0.9})
        for name in ("results.json", "config.yaml"):
            text = (path / name).read_text()
            (path / name).write_text(
                text.replace('"profile": "cpu"', '"profile": "smoke"').replace("profile: cpu", "profile: smoke")
            )
    out = tmp_path / "site"
    build_report(runs, out, results_dir=None, jobs=1)
    page = (out / "tpr_rnn.html").read_text()
    assert "beside: profile smoke (a few batches) ≠ a full run: 90.00 (n=2, yours)" in page
    assert not re.search(r'class="num match-(green|amber|red)"', page)
    cpu = write_run(runs, "babi", "tpr_rnn", 2, task_cfg=official, metrics={"test/acc": 0.1, "test/error": 0.9})
    build_report(runs, out, results_dir=None, jobs=1)
    assert f'class="num match-red" title="task 1 [cpu]: {cpu.name}"' in (out / "tpr_rnn.html").read_text()


@pytest.mark.parametrize("inside", ["babi", "babi/lstm", "babi/lstm/babi-lstm-cpu-s0-a"])
def test_a_folder_inside_a_store_is_refused_with_the_store_to_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, inside: str
) -> None:
    """A task's, model's or run's folder named as the store would give an index without its runs: exit 2, one
    line naming the store, nothing written."""
    runs, out = tmp_path / "runs", tmp_path / "site"
    write_run(runs, "babi", "lstm", 0, metrics={"test/acc": 0.5})
    assert main(["--runs-dir", str(runs / inside), "--results-dir", "", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.endswith(f"name the store itself, e.g. --runs-dir {runs.resolve()}")
    monkeypatch.setenv("HARNESS_RUNS_DIR", str(runs / inside))
    assert main(["--results-dir", "", "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip().endswith(f"e.g. HARNESS_RUNS_DIR={runs.resolve()}")
    assert main(["--runs-dir", str(runs), "--results-dir", str(runs / inside), "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip().endswith(f"e.g. --results-dir {runs.resolve()}")
    assert not out.exists()


def test_runs_refuses_a_task_folder_named_as_the_store(tmp_path, capsys):
    from harness.cli import main

    run = tmp_path / "store" / "babi" / "lstm" / "babi-lstm-smoke-s0-00000000"
    run.mkdir(parents=True)
    (run / "results.json").write_text('{"run_id": "babi-lstm-smoke-s0-00000000", "status": "completed"}')
    assert main(["runs", "--runs-dir", str(tmp_path / "store" / "babi")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is a task's folder of a run store" in err[0] and str(tmp_path / "store") in err[0]
