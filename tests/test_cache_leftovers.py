"""A run killed while it wrote generated data to the cache (``$HARNESS_CACHE_DIR``) left the write's temporary file
there for good (as large as the data: a Relations Game training set at the cpu profile is hundreds of MB); the next
command that prepares a task removes such files, never one a live process is writing."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import Any

import pytest

from harness.paths import check_data_dir
from harness.runs import atomic_write


def _leftover(folder: Path, name: str, age_s: float) -> Path:
    """A temporary file named as an atomic write names it, last changed ``age_s`` seconds ago."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(b"part of a data set")
    then = time.time() - age_s
    os.utime(path, (then, then))
    return path


def test_a_killed_cache_writes_temporary_file_is_removed(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    cache = Path(env["HARNESS_CACHE_DIR"]) / "relations_game"
    killed = _leftover(cache, ".same-pentominoes-train-200-s0-v1.npz.gws9o00k.tmp", 3600)
    fresh = _leftover(cache, ".same-pentominoes-val-50-s0-v1.npz.abcd1234.tmp", 1)  # perhaps being written now
    held = _leftover(cache, ".same-stripes-test-50-s0-v1.npz.wxyz5678.tmp", 3600)
    kept = _leftover(cache, "same-stripes-test-50-s0-v1.npz", 3600)  # data, not a temporary file
    handle = os.open(held, os.O_RDONLY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)  # a slow write in progress holds its file
        check_data_dir()
    finally:
        os.close(handle)
    assert not killed.exists() and fresh.exists() and held.exists() and kept.exists()
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "removed 1 temporary file(s) left by killed writes" in out and killed.name in out


def test_an_atomic_write_holds_its_temporary_file_while_it_writes(tmp_path: Path) -> None:
    seen: list[bool] = []

    def write(handle: Any) -> None:
        (temporary,) = tmp_path.glob(".data.npz.*.tmp")
        other = os.open(temporary, os.O_RDONLY)
        try:
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            seen.append(False)
        except BlockingIOError:
            seen.append(True)
        finally:
            os.close(other)
        handle.write(b"data")

    atomic_write(tmp_path / "data.npz", write)
    assert seen == [True] and (tmp_path / "data.npz").read_bytes() == b"data"
