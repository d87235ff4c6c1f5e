"""The Relations Game task: generated images for the ``image`` interface, plus the paper's released mini
test sets when they are present.

One example::

    image    [36, 36, 3] uint8   objects on a 3x3 grid of 12-pixel cells, black background
    task_id  []          int64   index into ``task.tasks`` (a one-hot of it is appended in multi-task runs)
    target   []          int64   the label (2 classes, 4 for colour_shape)

Splits: ``train`` and ``val`` on the training object set (pentominoes), ``test`` on the training set too,
and one extra test split per held-out object set (``test_hexominoes``, ``test_stripes``), reported as
``test_<set>/acc``. With ``task.real_sets``, the released mini sets that cover the run's tasks are added as
``test_real_<name>``. Every generated split is deterministic from ``task.data_seed`` and cached on disk.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import torch

from harness.array_cache import cached_arrays
from harness.data import TaskData, TensorDictDataset
from harness.errors import UserError
from harness.paths import cache_dir, data_dir, data_relative, shown_path
from harness.provenance import file_digest, fingerprint
from tasks.relations_game.generator import GENERATOR_VERSION, OBJECT_SETS, TASKS, can_draw, generate
from tasks.relations_game.real_data import MINI_SETS, load_mini

IMAGE_SHAPE = (36, 36, 3)


def _derived_seed(*parts: object) -> int:
    digest = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "little")


class RelationsGameTask:
    """Single- or multi-task Relations Game data from the built-in generator."""

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg.task
        self.tasks = [str(name) for name in self.cfg.tasks]
        if not self.tasks:
            raise UserError("task.tasks is empty; name at least one of " + ", ".join(TASKS))
        for name in self.tasks:
            if name not in TASKS:
                raise UserError(f"bad value in 'task.tasks': {name!r}; one of {', '.join(TASKS)}")
        vocabulary = self.cfg.get("task_vocabulary") or self.tasks
        self.vocabulary = [str(name) for name in vocabulary]
        missing = [name for name in self.tasks if name not in self.vocabulary]
        if missing:
            raise UserError(f"task.task_vocabulary lacks {', '.join(missing)} from task.tasks")
        for key, sets in (("task.train_set", [self.cfg.train_set]), ("task.test_sets", list(self.cfg.test_sets))):
            for name in sets:
                if name not in OBJECT_SETS:
                    raise UserError(f"bad value in '{key}': {name!r}; one of {', '.join(OBJECT_SETS)}")
        undrawable = [name for name in self.tasks if not can_draw(name, str(self.cfg.train_set))]
        if undrawable:
            raise UserError(f"task.train_set {self.cfg.train_set!r} cannot draw {', '.join(undrawable)} "
                            "(it needs two shapes); train on pentominoes or hexominoes")
        for key in ("n_train", "n_val", "n_test"):
            if int(self.cfg[key]) < len(self.tasks):
                raise UserError(f"bad value for 'task.{key}': {self.cfg[key]} (at least one example per task)")

    def resolve_source(self) -> str:
        return "generator"

    def _real_files(self) -> list:
        """The released mini sets that hold examples of this run's tasks and are present."""
        if not self.cfg.real_sets:
            return []
        folder = data_dir() / "relations_game"
        return [folder / mini.file_name for mini in MINI_SETS.values()
                if (folder / mini.file_name).exists() and set(mini.task_names) & set(self.tasks)]

    def describe_data(self) -> dict[str, Any]:
        """The generator's version and settings (its images are a function of them) and the hashes of the real
        mini sets the run tests on: the run's data fingerprint."""
        params = {"generator": f"relations_game v{GENERATOR_VERSION}", "data_seed": str(self.cfg.data_seed)}
        files = {data_relative(path): file_digest(path) for path in self._real_files()}
        return {"source": f"generator: Relations Game v{GENERATOR_VERSION}", "files": files,
                "fingerprint": fingerprint({**params, **files})}

    # generated splits --------------------------------------------------------------------------
    def _split(self, split: str, object_set: str, n: int, tasks: list[str] | None = None) -> dict[str, np.ndarray]:
        """``n`` examples spread evenly over ``tasks`` (default: the run's), each part cached as its own file."""
        tasks = tasks or self.tasks
        counts = [n // len(tasks) + (1 if i < n % len(tasks) else 0) for i in range(len(tasks))]
        parts = [self._cached(name, split, object_set, count) for name, count in zip(tasks, counts, strict=True)]
        images = np.concatenate([p["images"] for p in parts])
        labels = np.concatenate([p["labels"] for p in parts]).astype(np.int64)
        ids = [self.vocabulary.index(name) for name in tasks]
        task_id = np.concatenate([np.full(len(p["labels"]), i, dtype=np.int64)
                                  for i, p in zip(ids, parts, strict=True)])
        return {"image": images, "task_id": task_id, "target": labels}

    def _cached(self, name: str, split: str, object_set: str, n: int) -> dict[str, np.ndarray]:
        seed = _derived_seed(self.cfg.data_seed, split, name, object_set)
        stem = f"{name}-{object_set}-{split}-{n}-s{self.cfg.data_seed}-v{GENERATOR_VERSION}"
        path = cache_dir() / "relations_game" / f"{stem}.npz"
        return cached_arrays(path, ("images", "labels"), lambda: generate(name, n, object_set, seed))[0]

    # real mini sets ----------------------------------------------------------------------------
    def _missing_real_files(self) -> list[str]:
        """The released mini sets that hold examples of this run's tasks and are not in the data folder."""
        folder = data_dir() / "relations_game"
        return [mini.file_name for mini in MINI_SETS.values()
                if not (folder / mini.file_name).exists() and set(mini.task_names) & set(self.tasks)]

    def _real_sets(self) -> dict[str, dict[str, np.ndarray]]:
        """The released mini sets' examples whose task is one of this run's tasks."""
        found: dict[str, dict[str, np.ndarray]] = {}
        folder = data_dir() / "relations_game"
        for name, mini in MINI_SETS.items():
            path = folder / mini.file_name
            wanted = {file_id: self.vocabulary.index(task)
                      for file_id, task in mini.tasks.items() if task in self.tasks}
            if not path.exists() or not wanted:
                continue
            data = load_mini(path)
            keep = np.isin(data["tasks"], list(wanted))
            if not keep.any():
                continue
            task_id = np.array([wanted[int(t)] for t in data["tasks"][keep]], dtype=np.int64)
            found[f"real_{name}"] = {"image": data["images"][keep], "task_id": task_id,
                                     "target": data["labels"][keep].astype(np.int64)}
        return found

    def load(self) -> TaskData:
        n_train, n_val, n_test = int(self.cfg.n_train), int(self.cfg.n_val), int(self.cfg.n_test)
        train_set = str(self.cfg.train_set)
        splits = {
            "train": self._split("train", train_set, n_train),
            "val": self._split("val", train_set, n_val),
            "test": self._split("test", train_set, n_test),
        }
        extra, skipped = {}, []
        for object_set in (str(s) for s in self.cfg.test_sets if s != train_set):
            drawable = [name for name in self.tasks if can_draw(name, object_set)]
            if drawable:
                extra[object_set] = self._split("test", object_set, n_test, drawable)
            skipped += [f"{name} on {object_set}" for name in self.tasks if name not in drawable]
        real = self._real_sets() if self.cfg.real_sets else {}
        extra.update(real)
        source = (f"generator: Relations Game {'+'.join(self.tasks)}, seed {self.cfg.data_seed}, {n_train} "
                  f"{train_set} training images (cached in {shown_path(cache_dir() / 'relations_game')})")
        if skipped:
            source += f"; not tested (the object set has one shape): {', '.join(skipped)}"
        if real:
            source += f"; real mini sets from {shown_path(data_dir() / 'relations_game')}: {', '.join(sorted(real))}"
        missing = self._missing_real_files() if self.cfg.real_sets else []
        if missing:
            source += (f"; not tested on the real mini sets missing from {shown_path(data_dir() / 'relations_game')}: "
                       f"{', '.join(missing)} (task.real_sets=false leaves them out)")
        info = {
            "image_shape": IMAGE_SHAPE,
            "num_classes": max(TASKS[name] for name in self.tasks),
            "num_tasks": len(self.vocabulary),
            "tasks": list(self.vocabulary),
        }
        return TaskData(train=_to_dataset(splits["train"]), val=_to_dataset(splits["val"]),
                        test=_to_dataset(splits["test"]), info=info, source=source,
                        extra_test={name: _to_dataset(split) for name, split in extra.items()})


def _to_dataset(split: dict[str, np.ndarray]) -> TensorDictDataset:
    return TensorDictDataset({name: torch.from_numpy(np.ascontiguousarray(array)) for name, array in split.items()})
