"""Clearing a run (``bench --force``) deletes its ``results.json`` first: a process killed part-way leaves a folder
without a record (trained afresh by the same command), never a ``completed`` record beside files that are gone."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.runs import KEPT, Run


def _run(tmp_path: Path, damaged: bool) -> Run:
    run = Run(tmp_path / "babi" / "lstm" / "babi-lstm-smoke-s0-00000000")
    (run.path / "checkpoints").mkdir(parents=True)
    run.results_path.write_text('{"status": "completed"}\n')
    (run.path / "checkpoints" / "last.ckpt").write_bytes(b"weights")
    if damaged:
        (run.path / f"metrics.csv{KEPT}1").write_text("set aside\n")
    return run


def test_a_removal_killed_part_way_leaves_no_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = _run(tmp_path, damaged=False)

    def killed(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(shutil, "rmtree", killed)
    with pytest.raises(KeyboardInterrupt):
        run.clear()
    assert not run.results_path.exists() and (run.path / "checkpoints" / "last.ckpt").exists()


def test_a_clear_killed_part_way_leaves_no_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = _run(tmp_path, damaged=True)
    unlink = Path.unlink

    def killed_after_the_record(path: Path, missing_ok: bool = False) -> None:
        if path.name != "results.json":
            raise KeyboardInterrupt
        unlink(path, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", killed_after_the_record)
    with pytest.raises(KeyboardInterrupt):
        run.clear()
    assert not run.results_path.exists() and (run.path / "checkpoints" / "last.ckpt").exists()
    monkeypatch.setattr(Path, "unlink", unlink)
    assert [p.name for p in run.clear()] == [f"metrics.csv{KEPT}1"]  # the damaged file is kept, the rest gone
    assert sorted(p.name for p in run.path.rglob("*")) == [f"metrics.csv{KEPT}1"]
