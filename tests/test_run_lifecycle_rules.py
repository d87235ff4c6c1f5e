"""The life of one run (``harness/runners/launch.py``: its module docstring and those of ``record_progress``,
``claim_run``, ``diverged_advice`` and ``interrupted_after_completion``; ``harness/runners/existing_run.py``:
``_existing``, ``already_completed`` and ``remove_leftover_temporaries``; ``harness/runners/killed_attempts.py``:
``close_killed_attempts``; docs/contributing.md), each checked against the documented rule written out by hand on a
tiny run folder:

* a resumed run's attempts still ``running`` were killed: each becomes ``interrupted`` with the KILLED error; the
  last of them ends at the run's last file write (the largest mtime under its folder), and the time from its start
  to then is added once to the run's ``wall_time_s`` (a lower bound); nothing written after its start: no time;
* an unfinished attempt records the step and epochs its curve reached (supervised: the last epoch row, epochs
  counted from 1; stepwise: the last validation row), in ``steps``/``epochs`` and in the attempt; a completed run
  or a damaged curve is left alone;
* a damaged ``results.json`` is set aside, never deleted, also with ``--force``; ``--force`` reports nothing as
  completed; an intact unfinished run resumes from its record;
* the command training a run holds its folder: a second claim is refused in one line;
* the diverged advice names the checkpoint the run resumes from (``last.ckpt`` before ``best.ckpt``), and says a
  resumed non-RL run repeats its steps; the line for a late Ctrl-C names missing predictions only when missing.
"""

from __future__ import annotations

import json
import os
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harness.errors import UserError
from harness.runners import existing_run, launch
from harness.runners.killed_attempts import KILLED, close_killed_attempts
from harness.runners.launch import record_progress
from harness.runs import KEPT, CurveWriter, Run, held_folder

ISO = "%Y-%m-%dT%H:%M:%SZ"


def _iso(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime(ISO)


def _composed(kind: str = "supervised", protocol: str = "single") -> Any:
    """What the functions under test read of a Composed: its kind, run id and protocol."""
    return SimpleNamespace(kind=kind, run_id="babi-lstm-smoke-s0-0123abcd",
                           cfg=SimpleNamespace(protocol=SimpleNamespace(name=protocol)))


def _touch(path: Path, at: int, text: str = "x") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.utime(path, ns=(at * 10**9, at * 10**9))


# close_killed_attempts ---------------------------------------------------------------------------------------------


def _killed_run(tmp_path: Path, start: int, writes: list[int]) -> tuple[Run, dict[str, Any]]:
    """A run whose attempt 0 failed and attempts 1 and 2 were killed (both still ``running``); its files last
    written at ``writes`` (seconds since the epoch)."""
    run = Run(tmp_path / "run")
    results = {"status": "running", "wall_time_s": 100.0, "attempts": [
        {"status": "failed", "started_at": _iso(start - 900), "finished_at": _iso(start - 800), "error": "E"},
        {"status": "running", "started_at": _iso(start - 500)},
        {"status": "running", "started_at": _iso(start)},
    ]}
    _touch(run.results_path, writes[0], json.dumps(results))
    for index, at in enumerate(writes[1:]):
        _touch(run.path / "checkpoints" / f"file{index}", at)
    return run, results


def test_killed_attempts_are_closed_and_the_last_ones_time_counted_once(tmp_path: Path) -> None:
    start = int(time.time()) - 3600
    run, results = _killed_run(tmp_path, start, [start + 30, start + 50, start + 10])
    attempts = results["attempts"]
    close_killed_attempts(run, results, attempts)
    assert attempts[0] == {"status": "failed", "started_at": _iso(start - 900), "finished_at": _iso(start - 800),
                           "error": "E"}
    assert attempts[1] == {"status": "interrupted", "started_at": _iso(start - 500), "error": KILLED}
    assert attempts[2] == {"status": "interrupted", "started_at": _iso(start), "error": KILLED,
                           "finished_at": _iso(start + 50)}  # the last write under the run's folder
    assert results["wall_time_s"] == 100.0 + 50


def test_a_killed_attempt_with_no_write_after_its_start_gets_no_time(tmp_path: Path) -> None:
    start = int(time.time()) - 3600
    run, results = _killed_run(tmp_path, start, [start - 20, start - 5])
    close_killed_attempts(run, results, results["attempts"])
    assert results["wall_time_s"] == 100.0 and "finished_at" not in results["attempts"][2]
    assert [a["status"] for a in results["attempts"]] == ["failed", "interrupted", "interrupted"]


def test_a_killed_attempt_without_a_recorded_time_starts_its_run_at_zero(tmp_path: Path) -> None:
    start = int(time.time()) - 3600
    run, results = _killed_run(tmp_path, start, [start + 7])
    results["wall_time_s"] = None
    close_killed_attempts(run, results, results["attempts"])
    assert results["wall_time_s"] == 7.0


# record_progress ---------------------------------------------------------------------------------------------------


def _curve(run: Run, rows: list[tuple[int, int, dict[str, float]]]) -> None:
    run.path.mkdir(parents=True, exist_ok=True)
    curve = CurveWriter(run.metrics_path)
    for step, epoch, values in rows:
        curve.append(step, epoch, values)
    curve.flush()


SUPERVISED_ROWS = [(4, 0, {"train/loss": 2.0}), (4, 0, {"train/examples_per_s": 9.0}),
                   (8, 1, {"train/examples_per_s": 8.0}), (9, 2, {"train/loss": 1.0})]  # epoch 2 never ended


def test_an_unfinished_supervised_attempt_records_its_last_ended_epoch(tmp_path: Path) -> None:
    run = Run(tmp_path / "run")
    _curve(run, SUPERVISED_ROWS)
    results = {"status": "interrupted", "steps": 0, "epochs": 0, "attempts": [{"status": "completed"}, {}]}
    record_progress(run, results, "supervised")
    assert (results["steps"], results["epochs"]) == (8, 2)  # epoch 1, counted from 1
    assert results["attempts"] == [{"status": "completed"}, {"steps": 8, "epochs": 2}]


def test_an_unfinished_stepwise_attempt_records_its_last_validation(tmp_path: Path) -> None:
    run = Run(tmp_path / "run")
    _curve(run, [(5, 0, {"val/acc": 0.1}), (10, 1, {"val/acc": 0.2}), (12, 1, {"train/loss": 1.0})])
    results = {"status": "failed", "attempts": [{}]}
    record_progress(run, results, "stepwise")
    assert (results["steps"], results["epochs"], results["attempts"]) == (10, 1, [{"steps": 10, "epochs": 1}])


def test_a_completed_run_or_a_damaged_curve_is_left_alone(tmp_path: Path) -> None:
    run = Run(tmp_path / "run")
    _curve(run, SUPERVISED_ROWS)
    completed = {"status": "completed", "steps": 12, "epochs": 3, "attempts": [{"steps": 12}]}
    record_progress(run, completed, "supervised")
    assert completed == {"status": "completed", "steps": 12, "epochs": 3, "attempts": [{"steps": 12}]}
    run.metrics_path.write_text(run.metrics_path.read_text()[:-3])  # cut short
    damaged = run.metrics_path.read_text()
    unfinished = {"status": "interrupted", "steps": 0, "attempts": [{}]}
    record_progress(run, unfinished, "supervised")
    assert unfinished == {"status": "interrupted", "steps": 0, "attempts": [{}]}
    assert run.metrics_path.read_text() == damaged  # the resume, not this, sets it aside


# _existing / already_completed / claim_run -------------------------------------------------------------------------


def _stored(tmp_path: Path, results: str) -> Run:
    run = Run(tmp_path / "babi" / "lstm" / "run")
    _touch(run.results_path, int(time.time()), results)
    _touch(run.metrics_path, int(time.time()), "step,epoch\n1,0\n")
    _touch(run.path / "checkpoints" / "algorithm", int(time.time()), "state")
    return run


def test_force_keeps_a_damaged_record_aside_and_clears_the_rest(tmp_path: Path) -> None:
    run = _stored(tmp_path, '{"status": "runn')
    assert existing_run._existing(run, True, _composed("rl")) is None
    (aside,) = [p for p in run.path.rglob("*") if p.is_file()]
    assert re.fullmatch(r"results\.json\.damaged-\d{8}T\d{6}", aside.name) and KEPT in aside.name
    assert aside.read_text() == '{"status": "runn'


def test_a_damaged_record_is_set_aside_and_the_run_resumes_without_it(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    run = _stored(tmp_path, "[]")
    assert existing_run._existing(run, False, _composed("rl")) is None
    (aside,) = run.path.glob("results.json.damaged-*")
    assert aside.read_text() == "[]" and run.metrics_path.exists() and (run.checkpoint_dir / "algorithm").exists()
    assert "resuming from the run's checkpoints" in capsys.readouterr().out


def test_an_intact_unfinished_run_resumes_from_its_record_and_force_starts_afresh(tmp_path: Path) -> None:
    record = {"run_id": "run", "task": "babi", "model": "lstm", "status": "interrupted", "wall_time_s": 5.0}
    run = _stored(tmp_path, json.dumps(record))
    assert existing_run._existing(run, False, _composed("rl")) == record
    assert existing_run._existing(run, True, _composed("rl")) is None and not run.path.exists()


def test_force_never_reports_a_run_as_completed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = {"run_id": "run", "task": "babi", "model": "lstm", "status": "completed", "wall_time_s": 5.0}
    run = _stored(tmp_path, json.dumps(record))
    assert existing_run.already_completed(run, _composed(), force=True) is False
    for status in ("running", "interrupted", "failed", "diverged"):
        run.write_results({**record, "status": status, "owner": {"host": "elsewhere.example", "pid": 1}})
        assert existing_run.already_completed(run, _composed(), force=False) is False
    assert capsys.readouterr().out == ""


def test_a_second_claim_on_a_run_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(launch.WAIT_FOR_RUN, raising=False)
    run = Run(tmp_path / "babi" / "lstm" / "run")
    try:
        assert launch.claim_run(run, _composed(), force=False) is False  # nothing stored: not completed
        with pytest.raises(UserError, match="is being trained by another process"):
            launch.claim_run(run, _composed(), force=False)  # another open descriptor, as another command's
        with held_folder(run.path) as free:  # a retest or predict of it is refused too
            assert not free
    finally:
        launch.release_claims()
    with held_folder(run.path) as free:
        assert free


# diverged_advice / interrupted_after_completion / remove_leftover_temporaries --------------------------------------


def test_the_diverged_advice_names_the_checkpoint_the_run_resumes_from(tmp_path: Path) -> None:
    run = Run(tmp_path / "run")
    run.path.mkdir()
    assert "starts it again from the first step" in launch.diverged_advice(run, _composed())
    _touch(run.best_checkpoint, int(time.time()))
    assert "(checkpoints/best.ckpt)" in launch.diverged_advice(run, _composed())
    _touch(run.last_checkpoint, int(time.time()))
    advice = launch.diverged_advice(run, _composed())
    assert "resumes from its last checkpoint (checkpoints/last.ckpt)" in advice
    assert "repeats the same steps (runs are deterministic), so it diverges again" in advice
    for kind in ("supervised", "stepwise"):
        assert "repeats the same steps" in launch.diverged_advice(run, _composed(kind))
    rl = launch.diverged_advice(run, _composed("rl"))
    assert "may diverge again" in rl and "repeats" not in rl


def test_a_late_ctrl_c_names_missing_predictions_only_when_missing(tmp_path: Path) -> None:
    from harness.runners.predictions import FOLDER, SUMMARY, TABLE

    run = Run(tmp_path / "run")
    run.path.mkdir()
    line = launch.interrupted_after_completion(run, _composed())
    assert line == (f"interrupted after run {_composed().run_id} completed: it is stored as completed (the same "
                    f"command reports it); its predictions were not written: the same command writes them (or "
                    f"`harness predict run`)")
    _touch(run.path / FOLDER / TABLE, int(time.time()))
    _touch(run.path / FOLDER / SUMMARY, int(time.time()))
    assert launch.interrupted_after_completion(run, _composed()).endswith("(the same command reports it)")
    assert "predictions" not in launch.interrupted_after_completion(Run(tmp_path / "rl"), _composed("rl"))


def test_leftover_temporaries_are_removed_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = Run(tmp_path / "run")
    _touch(run.path / ".results.json.abcd1234.tmp", int(time.time()))
    _touch(run.path / "checkpoints" / ".last.ckpt.zz_9y8x7.tmp", int(time.time()))
    existing_run.remove_leftover_temporaries(run)
    assert capsys.readouterr().out == (f"{run.path}: removed 2 temporary file(s) left by a killed write "
                                       "(.last.ckpt.zz_9y8x7.tmp, .results.json.abcd1234.tmp)\n")
    assert not [p for p in run.path.rglob("*") if p.is_file()]
    existing_run.remove_leftover_temporaries(run)
    assert capsys.readouterr().out == ""
