"""The W&B mirror's documented rules (harness/tracking.py, module docstring), checked with a stand-in ``wandb``.

W&B's own settings (``Settings.mode``, ``WANDB_MODE``: wandb/sdk/wandb_settings.py in the public wandb/wandb
repository) and the run-id rule of ``_wandb_id`` (letters, digits, '-' and '_', at most 64 characters) decide what
the tracker may pass on:
the mode the user set reaches ``wandb.init`` unchanged, the quiet defaults never override a user's setting, a mode
W&B would refuse is refused before the run starts, calls kept while W&B starts are snapshots of what was logged, and
the reachability probe of ``make sync`` asks the scheme's default port (RFC 9110, section 4.2: 80 for http, 443 for
https).
"""

from __future__ import annotations

import socket
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from harness import tracking
from harness.errors import UserError


class _Run:
    def __init__(self) -> None:
        self.logged: list[tuple[dict[str, float], int]] = []

    def log(self, metrics: dict[str, float], step: int) -> None:
        self.logged.append((dict(metrics), step))

    def finish(self, exit_code: int) -> None:
        pass


def test_the_users_mode_reaches_wandb_init_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    fake = types.ModuleType("wandb")

    def init(**kwargs: Any) -> _Run:
        seen.update(kwargs)
        return _Run()

    fake.init = init  # type: ignore[attr-defined]
    fake.Settings = lambda **kwargs: kwargs  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "wandb", fake)
    monkeypatch.setenv("WANDB_MODE", "online")
    tracker = tracking.Tracker(tmp_path / "run", "t-m-s0", {"seed": 0}, "project", "group", ["a"])
    tracker.finish(0)
    assert seen["mode"] == "online"
    assert seen["dir"] == str(tmp_path / "run") and seen["name"] == "t-m-s0" and seen["config"] == {"seed": 0}


def test_quiet_defaults_fill_in_but_never_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "disabled")
    monkeypatch.setenv("WANDB_CONSOLE", "wrap")
    monkeypatch.delenv("WANDB_SILENT", raising=False)
    assert tracking.configure_environment() == "disabled"
    import os

    assert os.environ["WANDB_CONSOLE"] == "wrap" and os.environ["WANDB_SILENT"] == "true"
    monkeypatch.delenv("WANDB_MODE")
    assert tracking.configure_environment() == "offline"  # the documented default


def test_a_mode_wandb_would_refuse_is_refused_before_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "ofline")
    with pytest.raises(UserError, match="WANDB_MODE='ofline' is not a W&B mode"):
        tracking.configure_environment()


def test_a_kept_log_call_is_a_snapshot_of_what_was_logged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    release, run = threading.Event(), _Run()

    def slow_start(*args: Any) -> _Run:
        assert release.wait(10)
        return run

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setattr(tracking, "_start_wandb", slow_start)
    tracker = tracking.Tracker(tmp_path / "run", "t-m-s0", {}, "p", "g", [])
    metrics = {"train/loss": 1.0}
    tracker.log(metrics, step=1)
    metrics["train/loss"] = 0.25  # the caller reuses its dict for the next step
    tracker.log(metrics, step=2)
    release.set()
    tracker.finish(0)
    assert run.logged == [({"train/loss": 1.0}, 1), ({"train/loss": 0.25}, 2)]


def test_a_long_run_id_keeps_its_distinguishing_tail_within_64_characters() -> None:
    run_id = "relations_game_between-relational_bottleneck-paper-s3/" + "x" * 40 + "-a1b2c3"
    made = tracking._wandb_id(run_id)
    assert len(made) == 64
    assert made.endswith("x-a1b2c3")  # the run's distinct suffix (seed, hash) survives
    assert set(made) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
    assert tracking._wandb_id("a/b c") == "a_b_c"


@pytest.mark.parametrize(("url", "port"), [("http://wandb.example", 80), ("https://wandb.example", 443),
                                           ("https://wandb.example:8443", 8443)])
def test_the_server_probe_asks_the_schemes_port(url: str, port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, int]] = []

    def connect(address: tuple[str, int], timeout: float) -> Any:
        asked.append(address)
        raise OSError("unreachable")

    monkeypatch.setattr(socket, "create_connection", connect)
    assert tracking.server_problem(url, timeout_s=0.1) is not None
    assert asked == [("wandb.example", port)]
