"""A command that reads a run and writes it back (``harness retest``, ``harness predict``) holds the run's folder as
a training of it does: it never writes an old record over a training that ``bench --force`` started meanwhile
(the store then said ``completed``, with the old figures, beside the new attempt's checkpoints, and the bench
command reported it as completed instead of resuming it)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import UserError
from harness.runs import Run, holding_run
from tests.test_report import write_run


@contextmanager
def held(folder: Path) -> Iterator[None]:
    """The folder's lock taken as a training takes it (another open file description: flock treats it as another
    holder, in this process too)."""
    handle = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield
    finally:
        os.close(handle)


@pytest.mark.parametrize("command", [["retest", "task.test_on=[original]"], ["predict"]])
def test_retest_and_predict_refuse_a_run_another_process_holds(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               command: list[str]) -> None:
    run = write_run(tmp_path, "listops", "lstm", 0, metrics={"test/acc": 0.5})
    before = (run / "results.json").read_bytes()
    with held(run):
        assert main([command[0], run.name, *command[1:], "--runs-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    doing = "retested" if command[0] == "retest" else "predicted"
    assert err.count("\n") == 1 and f"{run.name} cannot be {doing} now: another process holds it" in err, err
    assert (run / "results.json").read_bytes() == before


def test_holding_run_lets_go_after_its_block(tmp_path: Path) -> None:
    run = Run(write_run(tmp_path, "listops", "lstm", 0, metrics={"test/acc": 0.5}))
    with holding_run(run, "retested"):
        with pytest.raises(UserError, match="another process holds it"), holding_run(run, "retested"):
            pass
    with held(run.path):  # the run's folder is free again
        pass
