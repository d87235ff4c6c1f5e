"""Reading Long Range Arena's released Pathfinder-32 files.

Layout (the reference generator's output, drewlinsley/pathfinder ``snakes2.py`` ``from_wrapper``, as LRA
ships it in ``lra_release/pathfinder32/``; google-research/long-range-arena ``lra_benchmarks/data/pathfinder.py``
``Pathfinder32``)::

    <root>/pathfinder32/<level>/metadata/<batch>.npy   plain text, one image per line
    <root>/pathfinder32/<level>/imgs/<batch>/sample_<i>.png   32x32 8-bit grayscale

with ``<level>`` ``curv_baseline`` (easy), ``curv_contour_length_9`` (intermediate) or
``curv_contour_length_14`` (hard). A metadata line holds 11 space-separated fields: ``subpath filename idx
label continuity contour_length distractor_length paddle_length paddle_thickness paddle_margin
n_paddle_contrasts``; the label (field 4) is 1 when the two markers lie on the same snake.

LRA reads the metadata files in the order ``glob`` lists them and cuts the level at 80% / 90% into train / val /
test (``lra_benchmarks/image/input_pipeline.py``, ``get_pathfinder_base_datasets``); we sort the files by batch
number. It drops images whose file is empty; we drop those and images that are all zero, and count them.

A malformed line, a missing, unreadable or wrongly shaped PNG raises :class:`harness.errors.DataFormatError`
naming the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

from harness.errors import DataFormatError

LEVEL_FOLDERS = {"easy": "curv_baseline", "intermediate": "curv_contour_length_9",
                 "hard": "curv_contour_length_14"}
FIELDS = 11
SIZE = 32


@dataclass
class LevelFiles:
    """All images of one level in metadata order: uint8 [N, 32, 32], labels int64 [N], and the images left out."""

    images: np.ndarray
    labels: np.ndarray
    empty: int
    folder: Path


def _batch_key(path: Path) -> tuple[int, str]:
    return (int(path.stem), path.name) if path.stem.isdigit() else (1 << 60, path.name)


def read_metadata(path: Path) -> list[tuple[str, int]]:
    """(relative PNG path, label) per line of one metadata file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError) as exc:
        raise DataFormatError(f"{path}: cannot read it as text metadata ({exc.__class__.__name__})") from None
    rows = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) != FIELDS:
            raise DataFormatError(f"{path}:{lineno}: expected {FIELDS} space-separated fields (subpath filename idx "
                                  f"label ...), got {len(fields)}: {line[:60]!r}")
        if fields[3] not in ("0", "1"):
            raise DataFormatError(f"{path}:{lineno}: the label (4th field) must be 0 or 1, got {fields[3][:20]!r}")
        rows.append((f"{fields[0]}/{fields[1]}", int(fields[3])))
    return rows


def read_png(path: Path) -> np.ndarray | None:
    """uint8 [32, 32] of one image; None for an empty file (LRA leaves those out)."""
    if not path.is_file():
        raise DataFormatError(f"{path}: missing (named in the level's metadata)")
    if path.stat().st_size == 0:
        return None
    try:
        with Image.open(path) as image:
            image.load()
            if image.mode != "L" or image.size != (SIZE, SIZE):
                raise DataFormatError(f"{path}: expected a {SIZE}x{SIZE} 8-bit grayscale PNG, got mode "
                                      f"{image.mode} size {image.size[0]}x{image.size[1]}")
            return np.asarray(image, dtype=np.uint8)
    except (UnidentifiedImageError, OSError, SyntaxError) as exc:
        raise DataFormatError(f"{path}: not a readable PNG ({exc.__class__.__name__})") from None


def read_level(folder: Path) -> LevelFiles:
    """Every image of one level folder (``.../pathfinder32/<level>``), in metadata order."""
    metas = sorted((folder / "metadata").glob("*.npy"), key=_batch_key)
    if not metas:
        raise DataFormatError(f"{folder}: no metadata/*.npy files")
    images, labels, empty = [], [], 0
    for meta in metas:
        for rel, label in read_metadata(meta):
            pixels = read_png(folder / rel)
            if pixels is None or not pixels.any():
                empty += 1
                continue
            images.append(pixels)
            labels.append(label)
    if not images:
        raise DataFormatError(f"{folder}: no non-empty images")
    return LevelFiles(images=np.stack(images), labels=np.array(labels, dtype=np.int64), empty=empty, folder=folder)


def lra_split(n: int) -> dict[str, slice]:
    """LRA's cut of a level's n images: the first 80% train, the next 10% val, the last 10% test."""
    return {"train": slice(0, int(n * 0.8)), "val": slice(int(n * 0.8), int(n * 0.9)), "test": slice(int(n * 0.9), n)}
