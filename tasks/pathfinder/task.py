"""The Pathfinder-32 task of Long Range Arena: LRA's files when present, otherwise the built-in generator;
tensors for the ``image`` interface.

One example::

    image    [32, 32, 1] uint8  markers, target snakes and distractor snakes on black
    task_id  []          int64  always 0
    target   []          int64  1 when the two markers lie on the same snake

Sources (``task.source``): ``files`` reads a level of LRA's release (tasks/pathfinder/reader.py) from
``$HARNESS_DATA_DIR/pathfinder``, ``$HARNESS_DATA_DIR/lra_release`` or ``$HARNESS_DATA_DIR/lra_release/lra_release``
and cuts it 80/10/10 as LRA; ``n_train/n_val/n_test`` do not apply to files. ``generator`` makes the three splits
with tasks/pathfinder/generator.py and caches them; ``auto`` is ``files`` when the level's folder is found.
``task.test_on`` adds the test split of another source as ``test_files`` / ``test_generator``; for ``files``
that is the whole level (the run never trained on it), so a model trained on generated images is also tested
on the reference-generated images.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import torch

from harness.array_cache import cached_splits
from harness.data import TaskData, TensorDictDataset
from harness.errors import UserError
from harness.paths import cache_dir, data_dir, data_dir_label, data_relative, shown_path
from harness.provenance import file_digest, fingerprint
from tasks.pathfinder.generator import GENERATOR_VERSION, LEVELS, generate, level_settings
from tasks.pathfinder.reader import LEVEL_FOLDERS, lra_split, read_level

SOURCES = ("auto", "files", "generator")
TEST_SOURCES = ("files", "generator")
SPLITS = ("train", "val", "test")
IMAGE_SHAPE = (32, 32, 1)


def candidate_roots(root: Path) -> list[Path]:
    """Folders that may hold ``pathfinder32/``: ours, and where an LRA release download unpacks."""
    return [root / "pathfinder", root / "lra_release", root / "lra_release" / "lra_release"]


def _split_seed(seed: int, split: str, difficulty: str) -> int:
    digest = hashlib.sha256(f"pathfinder/{seed}/{split}/{difficulty}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


class PathfinderTask:
    """Pathfinder-32 (``image`` interface): LRA's files or generated images, plus optional extra test sets."""

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg.task
        if self.cfg.source not in SOURCES:
            raise UserError(f"bad value for 'task.source': {self.cfg.source!r}; one of {', '.join(SOURCES)}")
        if self.cfg.difficulty not in LEVELS:
            raise UserError(f"bad value for 'task.difficulty': {self.cfg.difficulty!r}; one of {', '.join(LEVELS)}")
        for source in self.cfg.get("test_on") or []:
            if source not in TEST_SOURCES:
                raise UserError(f"bad value in 'task.test_on': {source!r}; one of {', '.join(TEST_SOURCES)}")
        self.difficulty = str(self.cfg.difficulty)

    # locating the data ---------------------------------------------------------------------------
    def level_folder(self) -> Path | None:
        """The level's folder in the first root that has its metadata; None if none has."""
        for root in candidate_roots(data_dir()):
            folder = root / "pathfinder32" / LEVEL_FOLDERS[self.difficulty]
            if (folder / "metadata").is_dir():
                return folder
        return None

    def _folder_or_error(self) -> Path:
        folder = self.level_folder()
        if folder is None:
            where = ", ".join(shown_path(r) for r in candidate_roots(data_dir()))
            instead = ("use task.source=generator" if self.resolve_source() == "files"
                       else "drop files from task.test_on")
            raise UserError(f"Pathfinder: no pathfinder32/{LEVEL_FOLDERS[self.difficulty]}/metadata under {where} "
                            f"({data_dir_label()}); {instead} or get LRA's release")
        return folder

    def resolve_source(self) -> str:
        if self.cfg.source != "auto":
            return str(self.cfg.source)
        return "files" if self.level_folder() is not None else "generator"

    def test_sources(self) -> list[str]:
        main = self.resolve_source()
        return [str(s) for s in dict.fromkeys(self.cfg.get("test_on") or []) if s != main]

    def _sizes(self) -> dict[str, int]:
        return {"train": int(self.cfg.n_train), "val": int(self.cfg.n_val), "test": int(self.cfg.n_test)}

    def describe_data(self) -> dict[str, Any]:
        """The files' hashes (metadata only: they name every image) or the generator's version and settings."""
        main = self.resolve_source()
        files: dict[str, str] = {}
        params: dict[str, str] = {}
        for source in [main, *self.test_sources()]:
            if source == "files":
                folder = self._folder_or_error()
                files.update({data_relative(p): file_digest(p) for p in sorted((folder / "metadata").glob("*.npy"))})
            else:
                sizes = self._sizes()
                params.update({"generator": f"pathfinder v{GENERATOR_VERSION}", "seed": str(self.cfg.generator_seed),
                               "difficulty": self.difficulty,
                               "n": f"{sizes['train']}/{sizes['val']}/{sizes['test']}"})
        label = (f"files: LRA Pathfinder-32 {self.difficulty}" if main == "files"
                 else f"generator: Pathfinder-32 {self.difficulty} v{GENERATOR_VERSION}")
        return {"source": label, "files": files, "fingerprint": fingerprint({**files, **params})}

    # the splits ----------------------------------------------------------------------------------
    def _generated(self) -> tuple[dict[str, dict[str, np.ndarray]], str]:
        seed, sizes = int(self.cfg.generator_seed), self._sizes()
        settings = level_settings(self.difficulty)
        stem = (f"pathfinder32-{self.difficulty}-s{seed}-n{sizes['train']}-{sizes['val']}-{sizes['test']}"
                f"-v{GENERATOR_VERSION}")
        path = cache_dir() / "pathfinder" / f"{stem}.npz"
        keys = ("images", "labels")

        def make() -> dict[str, np.ndarray]:
            arrays = {}
            for name in SPLITS:
                batch = generate(sizes[name], _split_seed(seed, name, self.difficulty), settings)
                arrays.update({f"{name}_images": batch.images, f"{name}_labels": batch.labels})
            return arrays

        splits, cached = cached_splits(path, SPLITS, keys, make)
        label = (f"generator: Pathfinder-32 {self.difficulty} (contour length {settings.contour_length}) "
                 f"v{GENERATOR_VERSION}, seed {seed}, {sizes['train']}/{sizes['val']}/{sizes['test']} images "
                 f"({'cached' if cached else 'written'} in {shown_path(path.parent)})")
        return splits, label

    def _files(self) -> tuple[dict[str, dict[str, np.ndarray]], str, dict[str, np.ndarray]]:
        folder = self._folder_or_error()
        level = read_level(folder)
        n = len(level.labels)
        splits = {name: {"images": level.images[cut], "labels": level.labels[cut]}
                  for name, cut in lra_split(n).items()}
        label = (f"files: LRA Pathfinder-32 {self.difficulty} {shown_path(folder)}, {n} images cut 80/10/10 in "
                 f"metadata order ({level.empty} empty image{'' if level.empty == 1 else 's'} left out)")
        return splits, label, {"images": level.images, "labels": level.labels}

    def load(self) -> TaskData:
        main = self.resolve_source()
        if main == "files":
            splits, label, _ = self._files()
        else:
            splits, label = self._generated()
        extra, notes = {}, []
        for source in self.test_sources():
            if source == "files":
                _, what, whole = self._files()
                extra["files"] = _to_dataset(whole)
                notes.append(f"also tested on all images of {what.removeprefix('files: ')} as test_files")
            else:
                generated, what = self._generated()
                extra["generator"] = _to_dataset(generated["test"])
                notes.append(f"also tested on the generator's test split ({what}) as test_generator")
        info = {"image_shape": IMAGE_SHAPE, "num_classes": 2, "num_tasks": 1, "difficulty": self.difficulty}
        return TaskData(train=_to_dataset(splits["train"]), val=_to_dataset(splits["val"]),
                        test=_to_dataset(splits["test"]), info=info, source="; ".join([label, *notes]),
                        extra_test=extra)


def _to_dataset(split: dict[str, np.ndarray]) -> TensorDictDataset:
    images = np.ascontiguousarray(split["images"][..., None])  # [N, 32, 32, 1]
    labels = split["labels"].astype(np.int64)
    return TensorDictDataset({"image": torch.from_numpy(images), "task_id": torch.zeros(len(labels), dtype=torch.int64),
                              "target": torch.from_numpy(labels)})
