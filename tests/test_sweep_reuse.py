"""``reuse_processes: true``: a finished trial's worker process runs the next trial (Tune's ``reuse_actors``).
The matrix smoke sweep (tests/test_matrix_sweep.py) runs every cell that way; these check the option itself
without starting Ray (tests/test_sweep.py checks the file's value)."""

from __future__ import annotations

import sys
import types
from typing import Any

import ray
import torch

from harness.runners import tune as tune_runner
from harness.runners.sweep_file import load_sweep
from tests.conftest import ROOT


def test_reuse_is_off_unless_a_sweep_asks_and_the_matrix_smoke_sweep_asks():
    assert load_sweep(ROOT / "sweeps" / "babi_smoke.yaml").reuse_processes is False
    assert load_sweep(ROOT / "sweeps" / "matrix_smoke.yaml").reuse_processes is True


def test_a_trial_in_a_reused_process_starts_with_the_processs_first_thread_count(monkeypatch):
    """An earlier trial's ``train.threads`` (torch.set_num_threads in the runner) does not carry over."""
    seen: list[int] = []
    reported: list[dict[str, Any]] = []

    def fake_run_trial(trial: dict[str, Any], sweep: Any, store: Any = None) -> dict[str, Any]:
        seen.append(torch.get_num_threads())
        torch.set_num_threads(trial["threads"])  # what a run with train.threads does
        return {"status": "completed"}

    fake_tune = types.ModuleType("ray.tune")
    fake_tune.report = reported.append  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ray.tune", fake_tune)  # `from ray import tune` in the trial finds it
    monkeypatch.setattr(ray, "tune", fake_tune, raising=False)
    monkeypatch.setattr(tune_runner, "run_trial", fake_run_trial)
    monkeypatch.setattr(tune_runner, "_PROCESS_THREADS", [])
    before = torch.get_num_threads()
    try:
        for threads in (1, 2, 1):
            tune_runner._run_trial({"threads": threads}, sweep=None, env={})  # type: ignore[arg-type]
    finally:
        torch.set_num_threads(before)
    assert seen == [before, before, before] and len(reported) == 3
