"""Reading the released Relations Game mini test sets (``.npz``).

Each released file holds 5,000 test images of the held-out object sets, with keys ``images``
(N, 36, 36, 3) int64 pixel values in {0, 64, 144, 192}, ``labels`` (N, 1) in {0, 1} and ``tasks``
(N, 1), the task id of each image. The four staged files (measured, see ``generator.py``):

* ``mini_between_{hexos,stripes}.npz``: one task (id 0), ``between``; 3 objects per image.
* ``mini_3task_col_patts_{hexos,stripes}.npz``: three tasks interleaved, about 1/3 each; id 0 = column
  pattern ABA, 1 = AAB, 2 = ABB (top to bottom), i.e. our ``col_aba``, ``col_aab``, ``col_abb``; 3
  objects in one column, the label refers to the image's own task.
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.errors import DataFormatError, UserError

IMAGE_SHAPE = (36, 36, 3)
KEYS = ("images", "labels", "tasks")


class MissingDataError(UserError, FileNotFoundError):
    """A data file that should exist does not."""


@dataclass(frozen=True)
class MiniSet:
    """One released mini test file."""

    file_name: str  # inside the data folder's ``relations_game`` directory
    object_set: str  # our object-set name (see generator.OBJECT_SETS)
    task_names: tuple[str, ...]  # our task name for each task id in the file

    @property
    def tasks(self) -> dict[int, str]:
        """Task id in the file -> our task name."""
        return dict(enumerate(self.task_names))


_COL_TASKS = ("col_aba", "col_aab", "col_abb")  # task ids 0, 1, 2 of the 3task_col_patts files
MINI_SETS: dict[str, MiniSet] = {
    "between_hexominoes": MiniSet("mini_between_hexos.npz", "hexominoes", ("between",)),
    "between_stripes": MiniSet("mini_between_stripes.npz", "stripes", ("between",)),
    "col_patterns_hexominoes": MiniSet("mini_3task_col_patts_hexos.npz", "hexominoes", _COL_TASKS),
    "col_patterns_stripes": MiniSet("mini_3task_col_patts_stripes.npz", "stripes", _COL_TASKS),
}


def mini_path(name: str, data_dir: str | Path) -> Path:
    """Path of the staged mini set ``name`` under ``data_dir`` (the folder holding ``relations_game/``)."""
    if name not in MINI_SETS:
        raise UserError(f"unknown Relations Game mini set {name!r}; valid: {', '.join(MINI_SETS)}")
    return Path(data_dir) / "relations_game" / MINI_SETS[name].file_name


def _column(path: Path, name: str, arr: np.ndarray, n: int) -> np.ndarray:
    """A (N,) or (N, 1) integer array as int64 [N]."""
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1 or len(arr) != n:
        raise DataFormatError(f"{path}: '{name}' should have shape ({n}, 1) or ({n},), got {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise DataFormatError(f"{path}: '{name}' should hold integers, got dtype {arr.dtype}")
    if n and arr.min() < 0:
        raise DataFormatError(f"{path}: '{name}' has negative values")
    return arr.astype(np.int64)


def load_mini(path: str | Path) -> dict[str, np.ndarray]:
    """Read a released mini file: {"images": uint8 [N, 36, 36, 3], "labels": int64 [N], "tasks": int64 [N]}.

    A missing file raises :class:`MissingDataError`; anything malformed (not an npz archive, a missing
    key, a wrong shape, dtype or value range) raises ``DataFormatError`` naming the file and the problem.
    """
    path = Path(path)
    if not path.is_file():
        raise MissingDataError(f"{path}: Relations Game data file not found")
    with path.open("rb") as handle:
        head = handle.read(6)
    if not head.startswith((b"PK", b"\x93NUMPY")):  # neither a zip of arrays nor one array (numpy would suggest
        # allow_pickle, which would not help)
        raise DataFormatError(f"{path}: not an .npz archive (a zip of .npy arrays); it starts with {head!r}")
    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise DataFormatError(f"{path}: not a readable .npz archive ({exc})") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise DataFormatError(f"{path}: a single .npy array, expected an .npz archive with keys {', '.join(KEYS)}")
    with archive:
        missing = [k for k in KEYS if k not in archive.files]
        if missing:
            found = ", ".join(archive.files) or "none"
            raise DataFormatError(f"{path}: missing key(s) {', '.join(missing)} (found: {found})")
        try:
            raw = {k: archive[k] for k in KEYS}
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
            raise DataFormatError(f"{path}: unreadable array in the archive ({exc})") from None
    images = raw["images"]
    if images.ndim != 4 or images.shape[1:] != IMAGE_SHAPE:
        raise DataFormatError(f"{path}: 'images' should have shape (N, 36, 36, 3), got {images.shape}")
    if not np.issubdtype(images.dtype, np.integer):
        raise DataFormatError(f"{path}: 'images' should hold integer pixel values, got dtype {images.dtype}")
    if images.size and (images.min() < 0 or images.max() > 255):
        raise DataFormatError(f"{path}: 'images' values should be in 0..255, got {images.min()}..{images.max()}")
    n = len(images)
    return {
        "images": images.astype(np.uint8),
        "labels": _column(path, "labels", raw["labels"], n),
        "tasks": _column(path, "tasks", raw["tasks"], n),
    }
