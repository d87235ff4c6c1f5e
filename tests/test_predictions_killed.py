"""Predictions written again (``harness predict``, e.g. to add a retest's split) and stopped part-way leave no
``summary.json`` (which marks them whole: the bench command then says they are missing), never the old summary
beside a new table, nor a summary without the wrong answers a bAbI run's page shows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.runners import predictions
from harness.runners.predictions import FOLDER, SUMMARY, WRONG, predict_run

BABI = ["bench", "--task", "babi", "--model", "lstm", "--profile", "smoke"]


class Killed(BaseException):
    """Stands for the kill: nothing after it runs."""


@pytest.mark.parametrize("stopped_at", [WRONG, SUMMARY])
@pytest.mark.slow
def test_predictions_stopped_part_way_read_as_missing(env: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str], stopped_at: str) -> None:
    runs = tmp_path / "runs"
    assert main([*BABI, "--runs-dir", str(runs)]) == 0
    (run,) = (path.parent for path in runs.glob("*/*/*/results.json"))
    assert (run / FOLDER / WRONG).is_file() and (run / FOLDER / SUMMARY).is_file()
    write_text = predictions.atomic_write_text

    def stopping(path: Path, text: str) -> None:
        if path.name == stopped_at:
            raise Killed
        write_text(path, text)

    monkeypatch.setattr(predictions, "atomic_write_text", stopping)
    with pytest.raises(Killed):
        predict_run(run.name, runs)
    monkeypatch.undo()
    assert not (run / FOLDER / SUMMARY).exists()
    capsys.readouterr()
    assert main([*BABI, "--runs-dir", str(runs)]) == 0
    assert "its predictions are missing" in capsys.readouterr().out
