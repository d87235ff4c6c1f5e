"""The start-up benchmark times a command to its first-step marker and to its exit, and refuses a failed run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness import bench_start


def test_times_the_marker_line_and_the_exit():
    code = f"import time; print('loading'); time.sleep(0.2); print({bench_start.MARKER!r}, 1, flush=True); " \
           "time.sleep(0.3)"
    first_step, finished = bench_start.time_command([sys.executable, "-c", code], {})
    # the marker is read when it arrives, which a loaded machine can delay by tens of milliseconds, so the gap
    # between it and the exit can be under the 0.3 s slept; the exit itself comes after both sleeps
    assert 0.2 <= first_step < finished and finished >= 0.5


@pytest.mark.parametrize("code", ["print('trained nothing')", f"print({bench_start.MARKER!r}); raise SystemExit(3)"])
def test_a_run_that_fails_or_never_steps_is_an_error(code: str):
    with pytest.raises(RuntimeError, match="exited with code 3|never reached a training step"):
        bench_start.time_command([sys.executable, "-c", code], {})


def test_the_command_writes_its_runs_and_wandb_files_into_the_scratch_folder(tmp_path: Path):
    env = bench_start.child_environment(tmp_path, "offline")
    assert env["WANDB_MODE"] == "offline" and "FORCE" not in env
    for key in ("HARNESS_RUNS_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR", "WANDB_DATA_DIR", "WANDB_ARTIFACT_DIR"):
        assert Path(env[key]).parent == tmp_path


@pytest.mark.slow
def test_the_import_floor_is_timed_to_its_marker():
    """What every supervised run imports before its first step (torch, Lightning), timed like a command."""
    assert "lightning.pytorch" in bench_start.IMPORTS_CHILD
    imported, finished = bench_start.time_command([sys.executable, "-c", bench_start.IMPORTS_CHILD], {})
    assert 0 < imported <= finished


@pytest.mark.slow
def test_the_optimiser_floor_builds_a_torch_optimiser_and_so_imports_dynamo():
    """The floor under any training step: torch and one optimiser, whose construction imports torch._dynamo
    (the reason the floor holds; a torch release that stops doing so makes this fail and the floor moot)."""
    assert "torch.optim." in bench_start.OPTIMIZER_CHILD
    imported, finished = bench_start.time_command([sys.executable, "-c", bench_start.OPTIMIZER_CHILD], {})
    assert 0 < imported <= finished
    probe = bench_start.OPTIMIZER_CHILD.replace("print(", "import sys; print('torch._dynamo' in sys.modules, ", 1)
    seen = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True).stdout.split()
    assert seen[0] == "True"
