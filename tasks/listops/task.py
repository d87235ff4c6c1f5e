"""The ListOps task of Long Range Arena: LRA's files when present, otherwise the built-in generator; tensors for
the ``sequence`` interface.

One example::

    tokens  [max_len] int64  token ids of the expression, 0 = padding (tasks/listops/evaluate.py: 16 ids)
    length  []        int64  real tokens (operators, digits and closing brackets)
    target  []        int64  the expression's value, 0..9

Sources (``task.source``): ``files`` reads LRA's ``basic_{train,val,test}.tsv`` from ``$HARNESS_DATA_DIR/listops/``
(or its ``listops-1000/`` folder, as the LRA release unpacks); ``generator`` generates the three splits with LRA's
semantics (tasks/listops/generator.py) and caches them; ``auto`` is ``files`` when all three LRA files are
present, else ``generator``. The original ListOps test split (``test_d20s.tsv``, Nangia & Bowman 2018) is a test
set only: it never trains a run, and ``source: files`` without LRA's three files is an error that says so.

``task.test_on`` adds the test split of other sources, reported as ``test_<source>/<metric>``: ``original``
(``test_d20s.tsv``), ``files`` (LRA's test file) or ``generator``. Their examples are padded to the run's
``max_len``; those longer than it are left out (the source line says how many), so a run's model sees the shapes
it was built for (``harness retest`` needs that too).

``max_len`` is ``task.max_length`` for generated data (LRA pads to 2,000) and the longest expression of the
three files for LRA's files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from harness.array_cache import cached_splits
from harness.data import TaskData, TensorDictDataset
from harness.errors import UserError
from harness.paths import cache_dir, data_dir, data_dir_label, data_relative, shown_path
from harness.provenance import file_digest, fingerprint
from tasks.listops.evaluate import NUM_CLASSES, VOCAB, VOCAB_SIZE
from tasks.listops.generator import GENERATOR_VERSION, Settings, generate_splits
from tasks.listops.reader import Examples, pad, read_file

SOURCES = ("auto", "files", "generator")
TEST_SOURCES = ("original", "files", "generator")
SPLITS = ("train", "val", "test")
LRA_FILES = {"train": "basic_train.tsv", "val": "basic_val.tsv", "test": "basic_test.tsv"}
ORIGINAL_TEST = "test_d20s.tsv"


def candidate_folders(root: Path) -> list[Path]:
    """Where LRA's files may lie: ``listops/`` (LRA's dataset_setup.sh) or the release's ``listops-1000/``, with the
    release unpacked into the data folder or into its ``lra_release/`` (as Pathfinder's folders are looked for)."""
    return [root / "listops", root / "listops" / "listops-1000", root / "lra_release" / "listops-1000",
            root / "lra_release" / "lra_release" / "listops-1000"]


class ListOpsTask:
    """ListOps (``sequence`` interface): LRA's files or generated data, plus optional extra test sets."""

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg.task
        if self.cfg.source not in SOURCES:
            raise UserError(f"bad value for 'task.source': {self.cfg.source!r}; one of {', '.join(SOURCES)}")
        for source in self.cfg.get("test_on") or []:
            if source not in TEST_SOURCES:
                raise UserError(f"bad value in 'task.test_on': {source!r}; one of {', '.join(TEST_SOURCES)}")
        self.settings = Settings(min_length=int(self.cfg.min_length), max_length=int(self.cfg.max_length),
                                 max_depth=int(self.cfg.max_depth), max_args=int(self.cfg.max_args))
        self.settings.check()

    # locating the data ---------------------------------------------------------------------------
    def lra_files(self) -> dict[str, Path] | None:
        """LRA's three files, from the first folder that holds all three; None if no folder does."""
        for folder in candidate_folders(data_dir()):
            files = {split: folder / name for split, name in LRA_FILES.items()}
            if all(path.is_file() for path in files.values()):
                return files
        return None

    def original_file(self) -> Path | None:
        path = data_dir() / "listops" / ORIGINAL_TEST
        return path if path.is_file() else None

    def _missing_lra(self) -> UserError:
        for candidate in candidate_folders(data_dir()):
            present = [name for name in LRA_FILES.values() if (candidate / name).is_file()]
            if present:  # a folder with some of the three: name what it lacks
                missing = [name for name in LRA_FILES.values() if name not in present]
                return UserError(f"ListOps: {shown_path(candidate)} has {', '.join(present)} but not "
                                 f"{', '.join(missing)} ({data_dir_label()}); LRA's release has all three")
        note = ""
        if self.original_file() is not None:
            note = (f"; {ORIGINAL_TEST} (the original ListOps test split) is a test set only: train on the "
                    "generator (task.source=generator) and add it with task.test_on=[original]")
        searched = ", ".join(str(folder.relative_to(data_dir())) for folder in candidate_folders(data_dir()))
        return UserError(f"ListOps: no LRA files ({', '.join(LRA_FILES.values())}) in {data_dir()}'s {searched} "
                         f"({data_dir_label()}){note}")

    def resolve_source(self) -> str:
        """``files`` or ``generator``: what ``source: auto`` means on this machine (written into the run's config,
        so runs on LRA's files and on generated data never share a run id)."""
        if self.cfg.source != "auto":
            return str(self.cfg.source)
        return "files" if self.lra_files() is not None else "generator"

    def test_sources(self) -> list[str]:
        """The other sources to test on (``task.test_on``), without the one the run trains on."""
        main = self.resolve_source()
        return [str(s) for s in dict.fromkeys(self.cfg.get("test_on") or []) if s != main]

    def _generator_params(self) -> dict[str, str]:
        s = self.settings
        return {"generator": f"listops v{GENERATOR_VERSION}", "seed": str(self.cfg.generator_seed),
                "n": f"{self.cfg.n_train}/{self.cfg.n_val}/{self.cfg.n_test}",
                "lengths": f"{s.min_length}<L<{s.max_length}", "max_depth": str(s.max_depth),
                "max_args": str(s.max_args)}

    def _source_files(self, source: str) -> list[Path]:
        if source == "files":
            files = self.lra_files()
            if files is None:
                raise self._missing_lra()
            return list(files.values())
        if source == "original":
            path = self.original_file()
            if path is None:
                where = data_dir() / "listops" / ORIGINAL_TEST
                state = "a folder, not the file" if where.is_dir() else "missing"
                raise UserError(f"ListOps: task.test_on names 'original' but {where} is {state} "
                                f"({data_dir_label()}); get it from the ListOps release "
                                "(nyu-mll/spinn, branch listops-release)")
            return [path]
        return []

    def describe_data(self) -> dict[str, Any]:
        """The data this run reads and its fingerprint (part of the run id): the files' hashes, or the generator's
        version and settings (its output is a function of them); likewise for the sources of ``task.test_on``."""
        main = self.resolve_source()
        files: dict[str, str] = {}
        params: dict[str, str] = {}
        for source in [main, *self.test_sources()]:
            files.update({data_relative(p): file_digest(p) for p in self._source_files(source)})
            if source == "generator":
                params.update(self._generator_params())
        if main == "files":
            label = f"files: LRA ListOps {shown_path(self._source_files('files')[0].parent)}"
        else:
            label = f"generator: ListOps (LRA semantics) v{GENERATOR_VERSION}"
        return {"source": label, "files": files, "fingerprint": fingerprint({**files, **params})}

    # the splits ----------------------------------------------------------------------------------
    def _generated(self) -> tuple[dict[str, Examples], str]:
        s, seed = self.settings, int(self.cfg.generator_seed)
        sizes = {"train": int(self.cfg.n_train), "val": int(self.cfg.n_val), "test": int(self.cfg.n_test)}
        stem = (f"listops-s{seed}-n{sizes['train']}-{sizes['val']}-{sizes['test']}-len{s.min_length}-{s.max_length}"
                f"-d{s.max_depth}-a{s.max_args}-v{GENERATOR_VERSION}")
        path = cache_dir() / "listops" / f"{stem}.npz"
        keys = ("tokens", "lengths", "labels")

        def make() -> dict[str, np.ndarray]:
            made = generate_splits(sizes, seed, s)
            return {f"{name}_{key}": split[key] for name, split in made.items() for key in keys}

        splits, cached = cached_splits(path, SPLITS, keys, make)
        examples = {name: Examples(tokens=np.split(split["tokens"], np.cumsum(split["lengths"])[:-1]),
                                   labels=split["labels"]) for name, split in splits.items()}
        label = (f"generator: ListOps (LRA semantics) v{GENERATOR_VERSION}, seed {seed}, "
                 f"{sizes['train']}/{sizes['val']}/{sizes['test']} expressions of {s.min_length} < tokens < "
                 f"{s.max_length}, max_depth {s.max_depth}, max_args {s.max_args} "
                 f"({'cached' if cached else 'written'} in {shown_path(path.parent)})")
        return examples, label

    def _files(self) -> tuple[dict[str, Examples], str]:
        files = self.lra_files()
        if files is None:
            raise self._missing_lra()
        examples = {split: read_file(path, "lra") for split, path in files.items()}
        label = f"files: LRA ListOps {shown_path(files['train'].parent)} ({', '.join(LRA_FILES.values())})"
        return examples, label + _mismatch_note(examples, files)

    def _extra(self, source: str) -> tuple[Examples, str]:
        """The test examples of another source, and what to say about them."""
        if source == "original":
            (path,) = self._source_files("original")
            examples = read_file(path, "original")
            return examples, f"original ListOps test split {shown_path(path)}" + _mismatch_note(
                {"original": examples}, {"original": path})
        if source == "files":
            examples, label = self._files()
            return examples["test"], f"LRA's test file ({label})"
        examples, label = self._generated()
        return examples["test"], f"the generator's test split ({label})"

    def load(self) -> TaskData:
        main, label = self._files() if self.resolve_source() == "files" else self._generated()
        if self.resolve_source() == "files":
            max_len = max(examples.longest for examples in main.values())
        else:
            max_len = self.settings.max_length
        splits = {name: _to_dataset(main[name], max_len) for name in SPLITS}
        extra, notes = {}, []
        for source in self.test_sources():
            examples, what = self._extra(source)
            fits = [i for i, ids in enumerate(examples.tokens) if len(ids) <= max_len]
            if not fits:
                raise UserError(f"ListOps: no example of {what} has at most {max_len} tokens (the run's max_len); "
                                "raise task.max_length")
            kept = Examples(tokens=[examples.tokens[i] for i in fits], labels=examples.labels[fits])
            extra[source] = _to_dataset(kept, max_len)
            dropped = len(examples.tokens) - len(fits)
            notes.append(f"also tested on {what} as test_{source}" +
                         (f": {len(fits)} of {len(examples.tokens)} examples, those of at most {max_len} tokens"
                          if dropped else ""))
        info = {"max_len": int(max_len), "vocab_size": VOCAB_SIZE, "num_classes": NUM_CLASSES, "vocab": list(VOCAB)}
        return TaskData(train=splits["train"], val=splits["val"], test=splits["test"], info=info,
                        source="; ".join([label, *notes]), extra_test=extra)


def _mismatch_note(examples: dict[str, Examples], files: dict[str, Path]) -> str:
    wrong = [f"{files[name].name}: {ex.mismatched}" for name, ex in examples.items() if ex.mismatched]
    return f"; labels that differ from the expression's value (kept as given): {', '.join(wrong)}" if wrong else ""


def _to_dataset(examples: Examples, max_len: int) -> TensorDictDataset:
    tokens, lengths = pad(examples.tokens, max_len)  # [N, max_len], [N]
    return TensorDictDataset({"tokens": torch.from_numpy(tokens), "length": torch.from_numpy(lengths),
                              "target": torch.from_numpy(examples.labels.astype(np.int64))})
