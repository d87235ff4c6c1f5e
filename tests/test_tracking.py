"""The W&B mirror starts in the background: calls made meanwhile are replayed in order, and a W&B run that
cannot start costs the mirror, not the run (harness/tracking.py)."""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness import tracking


class FakeRun:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.summary = _Summary(self.calls)

    def log(self, metrics: dict[str, float], step: int) -> None:
        self.calls.append(("log", (metrics, step)))

    def finish(self, exit_code: int) -> None:
        self.calls.append(("finish", exit_code))


class _Summary:
    def __init__(self, calls: list[tuple[str, Any]]) -> None:
        self.calls = calls

    def __setitem__(self, key: str, value: Any) -> None:
        self.calls.append(("summary", (key, value)))


def _tracker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str,
             start: Callable[..., FakeRun]) -> tracking.Tracker:
    """A tracker in W&B mode ``mode`` whose W&B run is opened by ``start`` (on the starter thread)."""
    monkeypatch.setenv("WANDB_MODE", mode)
    monkeypatch.setattr(tracking, "_start_wandb", start)
    return tracking.Tracker(tmp_path / "run", "task-model-smoke-s0-abc", {"seed": 0}, "project", "group", [])


def test_calls_made_while_wandb_starts_are_replayed_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    release, run = threading.Event(), FakeRun()

    def slow_start(*args: Any) -> FakeRun:
        assert release.wait(10)
        return run

    tracker = _tracker(tmp_path, monkeypatch, "offline", slow_start)
    tracker.log({"train/loss": 1.0}, step=1)  # W&B still starting: kept, not lost, and training is not held up
    tracker.log({"train/loss": 0.5}, step=2)
    assert run.calls == []
    release.set()
    tracker.summary({"test/acc": 0.9})
    tracker.finish(0)
    assert run.calls == [("log", ({"train/loss": 1.0}, 1)), ("log", ({"train/loss": 0.5}, 2)),
                         ("summary", ("test/acc", 0.9)), ("finish", 0)]
    tracker.log({"late": 1.0}, step=3)  # after finish: a no-op
    assert run.calls[-1] == ("finish", 0)


def test_a_wandb_run_that_cannot_start_leaves_the_run_going(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    def broken_start(*args: Any) -> FakeRun:
        raise RuntimeError("no service")

    tracker = _tracker(tmp_path, monkeypatch, "offline", broken_start)
    tracker.log({"train/loss": 1.0}, step=1)
    tracker.summary({"test/acc": 0.9})
    tracker.finish(0)
    err = capsys.readouterr().err
    assert err.count("W&B could not start (RuntimeError: no service)") == 1


def test_disabled_wandb_starts_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def must_not_start(*args: Any) -> FakeRun:
        raise AssertionError("W&B started although disabled")

    tracker = _tracker(tmp_path, monkeypatch, "disabled", must_not_start)
    tracker.log({"train/loss": 1.0}, step=1)
    tracker.finish(0)
    assert not (tmp_path / "run").exists()


def test_closing_the_service_waits_for_wandb_only_where_it_was_used(monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A sweep's trial shuts its W&B service down before its Ray worker ends (harness/runners/tune.py); a
    process that never imported wandb starts nothing, and a failing shutdown costs one line, not the trial."""
    monkeypatch.delitem(sys.modules, "wandb", raising=False)
    tracking.close_service()  # nothing to close: must not import wandb
    assert "wandb" not in sys.modules

    calls: list[str] = []
    fake = types.ModuleType("wandb")
    fake.teardown = lambda: calls.append("teardown")  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "wandb", fake)
    tracking.close_service()
    assert calls == ["teardown"]

    def broken() -> None:
        raise ConnectionResetError("Connection lost")

    fake.teardown = broken  # type: ignore[attr-defined]
    tracking.close_service()
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["W&B did not shut down cleanly (ConnectionResetError: Connection lost)"]
