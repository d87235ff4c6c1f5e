"""Generated data cached on disk as one compressed ``.npz`` file of named arrays.

A generator's output is a function of its settings, so the cache is derived data: a file that cannot be read
back whole (cut short, damaged on disk, written by an older layout without some array) is generated again and
written over, with one line on stderr saying so, instead of stopping the run with numpy's or zlib's traceback.
Files are written atomically (:func:`harness.runs.atomic_write`), so a killed process never leaves half a file.
"""

from __future__ import annotations

import sys
import zipfile
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from harness.paths import shown_path
from harness.runs import atomic_write

Arrays = dict[str, np.ndarray]
# What reading a damaged .npz raises: a bad zip directory (BadZipFile), a damaged member (zlib.error, a CRC
# mismatch as BadZipFile), a member cut short (EOFError), a damaged array header (ValueError), a missing array
# (KeyError).
UNREADABLE = (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile, zlib.error)


def read_arrays(path: Path, names: Iterable[str]) -> Arrays | None:
    """The arrays ``names`` of the cache file ``path``; None when it is missing or cannot be read back whole."""
    if not path.exists():
        return None
    try:
        with np.load(path) as stored:
            return {name: stored[name] for name in names}
    except UNREADABLE as exc:
        said = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"note: the cached data {shown_path(path)} cannot be read ({said}); generating it again",
              file=sys.stderr, flush=True)
        return None


def cached_arrays(path: Path, names: Iterable[str], make: Callable[[], Arrays]) -> tuple[Arrays, bool]:
    """The arrays ``names`` read from ``path``, or those of ``make()`` (which holds them, and may hold more) written
    there; and whether they came from the cache. The arrays made are returned as made, not read back."""
    names = list(names)
    stored = read_arrays(path, names)
    if stored is not None:
        return stored, True
    made = make()
    arrays = {name: made[name] for name in names}
    atomic_write(path, lambda handle: np.savez_compressed(handle, **arrays))
    return arrays, False


def cached_splits(path: Path, splits: Iterable[str], keys: Iterable[str],
                  make: Callable[[], Arrays]) -> tuple[dict[str, Arrays], bool]:
    """:func:`cached_arrays` for data cut into splits: the arrays ``keys`` of each split, stored flat in the file as
    ``<split>_<key>`` (what ``make()`` returns too); and whether they came from the cache."""
    splits, keys = list(splits), list(keys)
    arrays, cached = cached_arrays(path, [f"{split}_{key}" for split in splits for key in keys], make)
    return {split: {key: arrays[f"{split}_{key}"] for key in keys} for split in splits}, cached
