"""A generated-data cache file that cannot be read back whole is generated again, with one note, instead of a
traceback (harness/array_cache.py); the ListOps, Pathfinder and Relations Game tasks read their caches through it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.array_cache import cached_arrays, cached_splits
from harness.cli import main


def _make(calls: list[int]) -> dict[str, np.ndarray]:
    calls.append(1)
    return {"a": np.arange(6, dtype=np.int64), "b": np.ones((2, 3), dtype=np.uint8), "extra": np.zeros(1)}


def test_a_cache_is_written_once_then_read_and_holds_only_the_arrays_named(tmp_path):
    path, calls = tmp_path / "cache" / "x.npz", []
    made, cached = cached_arrays(path, ["a", "b"], lambda: _make(calls))
    assert not cached and sorted(made) == ["a", "b"]
    read, cached = cached_arrays(path, ["a", "b"], lambda: _make(calls))
    assert cached and calls == [1]
    assert all(np.array_equal(read[k], made[k]) and read[k].dtype == made[k].dtype for k in made)
    with np.load(path) as stored:
        assert sorted(stored.files) == ["a", "b"]


def test_splits_are_stored_flat_as_split_key_and_handed_back_nested(tmp_path):
    path, calls = tmp_path / "splits.npz", []

    def make() -> dict[str, np.ndarray]:
        calls.append(1)
        return {f"{split}_{key}": np.full(2, i * 10 + j) for i, split in enumerate(("train", "test"))
                for j, key in enumerate(("x", "y"))}

    for expect_cached in (False, True):
        splits, cached = cached_splits(path, ("train", "test"), ("x", "y"), make)
        assert cached is expect_cached and calls == [1]
        assert {split: {key: int(a[0]) for key, a in arrays.items()} for split, arrays in splits.items()} == {
            "train": {"x": 0, "y": 1}, "test": {"x": 10, "y": 11}}
    with np.load(path) as stored:
        assert sorted(stored.files) == ["test_x", "test_y", "train_x", "train_y"]


def _cut_short(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _flip_bytes(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for i in range(40, 60):  # inside the first member's compressed data
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def _not_a_zip(path: Path) -> None:
    path.write_text("not an npz file\n")


def _lacks_an_array(path: Path) -> None:
    np.savez_compressed(path, a=np.arange(6, dtype=np.int64))


@pytest.mark.parametrize("damage", [_cut_short, _flip_bytes, _not_a_zip, _lacks_an_array])
def test_a_damaged_cache_is_generated_again_with_one_note(tmp_path, capsys, damage):
    path, calls = tmp_path / "x.npz", []
    made, _ = cached_arrays(path, ["a", "b"], lambda: _make(calls))
    damage(path)
    again, cached = cached_arrays(path, ["a", "b"], lambda: _make(calls))
    assert not cached and calls == [1, 1]
    assert all(np.array_equal(again[k], made[k]) for k in made)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("note: the cached data ") and err[0].endswith("generating it again")
    assert cached_arrays(path, ["a", "b"], lambda: _make(calls))[1]  # written whole again


@pytest.mark.parametrize(("task", "model", "folder"), [("listops", "mlp1", "listops"),
                                                       ("pathfinder", "mlp1", "pathfinder"),
                                                       ("relations_game", "mlp1", "relations_game")])
def test_a_task_with_a_damaged_cache_validates_with_a_note(tmp_path, monkeypatch, capsys, task, model, folder):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HARNESS_DATA_DIR", str(tmp_path / "data"))  # no real files: the task generates its data
    (tmp_path / "data").mkdir()
    command = ["validate", "--task", task, "--model", model, "--profile", "smoke"]
    assert main(command) == 0
    first = capsys.readouterr().out.splitlines()[0]
    files = sorted((tmp_path / "cache" / folder).glob("*.npz"))
    assert files
    _cut_short(files[0])
    assert main(command) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0] == first  # the same data, so the same run id
    assert "cannot be read" in captured.err and "generating it again" in captured.err
