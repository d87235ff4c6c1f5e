"""What a resumed run's record says about the attempts before it. A run killed part-way, then resumed after a file
that computes it was edited, trained one run with two versions of the code while it recorded only the second (a
killed attempt recorded none) and read as fresh: each attempt now records its code as it starts, and the resume is
refused in one line while that code has changed. A killed attempt is closed when the run resumes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.runners import launch as launch_module

BENCH = ["bench", "--task", "listops", "--model", "lstm", "--profile", "smoke", "train.max_epochs=1",
         "train.limit_train_batches=1"]


def test_a_killed_attempt_leaves_its_code_on_record(env: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    on_disk: dict[str, Any] = {}  # results.json while the run trains: what a kill (SIGKILL) would leave
    train = launch_module._train

    def reading(*args: Any) -> dict[str, Any]:
        on_disk.update(args[3].read_results())
        return train(*args)

    monkeypatch.setattr(launch_module, "_train", reading)
    assert main(BENCH) == 0
    assert on_disk["status"] == "running" and "harness/runners/supervised.py" in on_disk["code"]["files"]
    assert on_disk["attempts"][-1]["code"] == on_disk["code"]["fingerprint"]


def test_an_unfinished_run_of_changed_code_is_not_resumed(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(BENCH) == 0
    (path,) = Path(env["HARNESS_RUNS_DIR"]).glob("*/*/*/results.json")
    results = json.loads(path.read_text())
    results["status"] = "running"  # killed; its attempt ran a supervised.py other than today's
    results["code"]["files"]["harness/runners/supervised.py"] = "0" * 16
    path.write_text(json.dumps(results))
    before = path.read_bytes()
    capsys.readouterr()
    assert main(BENCH) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "its last attempt ran code that has changed since " \
        "(harness/runners/supervised.py)" in err and "--force" in err, err
    assert path.read_bytes() == before


def test_a_killed_attempt_is_closed_when_the_run_resumes(env: Any) -> None:
    """An attempt killed (SIGKILL) stayed ``running`` in the record for good, and the run page listed it so beside
    the attempt that completed the run."""
    from harness.runners.killed_attempts import KILLED

    assert main(BENCH) == 0
    (path,) = Path(env["HARNESS_RUNS_DIR"]).glob("*/*/*/results.json")
    results = json.loads(path.read_text())
    results["status"] = results["attempts"][-1]["status"] = "running"  # as a kill leaves them
    results["owner"]["pid"] = 2**22 + 1  # a process that is gone
    path.write_text(json.dumps(results))
    assert main(BENCH) == 0
    attempts = json.loads(path.read_text())["attempts"]
    assert [(a["status"], a.get("error")) for a in attempts] == [("interrupted", KILLED), ("completed", None)]


def test_a_killed_attempt_s_time_counts_in_the_run_s_wall_time(env: Any) -> None:
    """A kill left the run's ``wall_time_s`` without the killed attempt's time (a run killed half way and resumed read
    as trained in the second half's time): its time up to the run's last file write is added when it resumes."""
    from datetime import UTC, datetime, timedelta

    assert main(BENCH) == 0
    (path,) = Path(env["HARNESS_RUNS_DIR"]).glob("*/*/*/results.json")
    results = json.loads(path.read_text())
    results["status"] = results["attempts"][-1]["status"] = "running"  # as a kill leaves them
    results["owner"]["pid"] = 2**22 + 1
    results["wall_time_s"] = 0.0  # a killed first attempt wrote no time
    results["attempts"][-1]["started_at"] = (datetime.now(UTC) - timedelta(seconds=100)).strftime("%Y-%m-%dT%H:%M:%SZ")
    path.write_text(json.dumps(results))
    assert main(BENCH) == 0
    resumed = json.loads(path.read_text())
    assert 100 <= resumed["wall_time_s"] < 200
    assert resumed["attempts"][0]["finished_at"] is not None


def test_a_killed_write_s_temporary_dates_the_killed_attempt_before_it_is_removed(env: Any) -> None:
    """The last write of a killed attempt may be the temporary file of a write the kill cut short: its time ends the
    attempt (the temporary is removed once the resumed attempt has closed the killed one)."""
    import os
    from datetime import UTC, datetime, timedelta

    assert main(BENCH) == 0
    (path,) = Path(env["HARNESS_RUNS_DIR"]).glob("*/*/*/results.json")
    started = (datetime.now(UTC) - timedelta(seconds=1000)).replace(microsecond=0)
    results = json.loads(path.read_text())
    results["status"] = results["attempts"][-1]["status"] = "running"  # as a kill leaves them
    results["owner"]["pid"] = 2**22 + 1
    results["wall_time_s"] = 0.0
    results["attempts"][-1]["started_at"] = started.strftime("%Y-%m-%dT%H:%M:%SZ")
    path.write_text(json.dumps(results))
    for file in path.parent.rglob("*"):
        if file.is_file():  # every file written 10 s after the attempt started
            os.utime(file, (started.timestamp() + 10, started.timestamp() + 10))
    temporary = path.parent / ".last.ckpt.a1b2c3d4.tmp"  # a checkpoint write cut short 30 s after the start
    temporary.write_bytes(b"partial")
    os.utime(temporary, (started.timestamp() + 30, started.timestamp() + 30))
    assert main(BENCH) == 0
    resumed = json.loads(path.read_text())
    assert resumed["attempts"][0]["finished_at"] == (started + timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert resumed["wall_time_s"] >= 30 and not temporary.exists()
