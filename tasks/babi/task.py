"""The bAbI task: official files when present, otherwise the built-in generator; tensors for the
``story`` interface.

One example (shapes for one question)::

    story      [T, W]  token ids of the last T statements before the question (0 = padding)
    story_len  []      number of real statements (the rest of the T slots are padding)
    query      [W]     token ids of the question
    target     []      token id of the answer word

T is the longest story (after keeping the last 70 statements, 130 for task 3, as the TPR-RNN
reference does) and W the longest sentence or question over the train, validation and test splits. The
vocabulary is built from the training split only; index 0 is padding and index 1 stands for a word never
seen in training (the reference has no such entry; bAbI's test words all occur in training).

``task.test_on`` adds the test split of another source (``files``: the official test file of the same task
and data set; ``generator``: the built-in generator's), reported as ``test_<source>/<metric>``: e.g. train on
generated data and test on the official files. Its examples use the training vocabulary and shapes (longer
stories keep their last T statements, as every split does).

``task.trim_batches=true`` hands out each batch cut to its longest story ([B, T', W], T' <= T): the same
statements for models that mask past ``story_len`` (TPR-RNN, MemN2N, the LSTM and linear-logic readers), at
the cost of the batch's stories instead of the task's longest (tasks 2, 6, 7 and 8 train about twice as fast).
The entity adapters of mlp1, mlp2, PrediNet, MHA and the 2-simplicial model read a fixed number of statement
slots, and the launcher refuses them cut batches in one line; the relation net and the relational model read
padded statements as zero entities, so for them it changes how many they see (the launcher says so). Off by
default: every stored bAbI run was trained on batches padded to T.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from harness.data import TaskData, TensorDictDataset
from harness.errors import UserError
from harness.paths import cache_dir, data_dir, data_dir_label, data_relative, shown_path
from harness.provenance import file_digest, fingerprint, source_digest
from tasks.babi.reader import Sample, read_samples

DATA_SETS = ("en", "en-10k", "en-valid-10k")
SOURCES = ("auto", "files", "generator")
PAD, UNK = "<pad>", "<unk>"


def story_limit(babi_id: int, configured: int | None) -> int:
    """Statements kept before each question: 70, or 130 for task 3 (ischlag/TPR-RNN, preprocessor/reader.py)."""
    if configured is not None:
        return int(configured)
    return 130 if babi_id == 3 else 70


def find_split_file(folder: Path, babi_id: int, split: str) -> Path | None:
    """``qa{N}_*_{split}.txt`` (en, en-10k) or ``qa{N}_{split}.txt`` (en-valid-10k)."""
    matches = sorted(folder.glob(f"qa{babi_id}_*{split}.txt"))
    return matches[0] if matches else None


def candidate_folders(root: Path, data_set: str) -> list[Path]:
    return [root / "babi" / data_set, root / "babi" / "tasks_1-20_v1-2" / data_set,
            root / "tasks_1-20_v1-2" / data_set]



def generator_code_digest() -> str:
    """A digest of the generator's modules (``tasks/babi/generator*.py``): the cache folder of generated files is
    keyed by it, so that files written by other generator code (its output for some tasks changed, while
    ``GENERATOR_VERSION`` stayed) are never read as this code's."""
    modules = sorted(Path(__file__).parent.glob("generator*.py"))
    return fingerprint({path.name: source_digest(path) for path in modules})[:8]

# A task whose generated output alone changed gets its own version, so that the run ids of the other tasks stay (the
# version is part of a run's data fingerprint; the generator's GENERATOR_VERSION is every other task's). Version 2
# of tasks 14, 18 and 19: they follow rules found in the released files (task 14's support distances, task 18's
# question blocks, task 19's map tellings); a run on their earlier output keeps its own data fingerprint.
TASK_VERSIONS: dict[int, int] = {14: 2, 18: 2, 19: 2}


def generator_version(babi_id: int) -> int:
    """The version of the generator's output for one task (part of a run's data fingerprint)."""
    from tasks.babi.generator import GENERATOR_VERSION

    return TASK_VERSIONS.get(babi_id, GENERATOR_VERSION)


class BabiTask:
    """Loads one of the 20 bAbI tasks (``task.babi_id``) and turns it into tensors."""

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg.task
        self.babi_id = int(self.cfg.babi_id)
        if not 1 <= self.babi_id <= 20:
            raise UserError(f"bad value for 'task.babi_id': {self.babi_id} (bAbI has tasks 1..20)")
        if self.cfg.data_set not in DATA_SETS:
            raise UserError(f"bad value for 'task.data_set': {self.cfg.data_set!r}; one of {', '.join(DATA_SETS)}")
        if self.cfg.source not in SOURCES:
            raise UserError(f"bad value for 'task.source': {self.cfg.source!r}; one of {', '.join(SOURCES)}")
        if not 0.0 < float(self.cfg.val_fraction) < 1.0:
            raise UserError(f"bad value for 'task.val_fraction': {self.cfg.val_fraction} (must be in (0, 1))")
        for source in self.cfg.get("test_on") or []:
            if source not in ("files", "generator"):
                raise UserError(f"bad value in 'task.test_on': {source!r}; one of files, generator")

    # locating the files ------------------------------------------------------------------------
    def _official_files(self) -> tuple[dict[str, Path], str] | None:
        root = data_dir()
        for folder in candidate_folders(root, self.cfg.data_set):
            test = find_split_file(folder, self.babi_id, "test")
            if test is None:
                continue
            files = {"test": test}
            notes = []
            train = find_split_file(folder, self.babi_id, "train")
            if train is None:  # en-10k ships without task 3's train file in some copies: use the 1k one
                fallback = folder.parent / "en"
                train = find_split_file(fallback, self.babi_id, "train")
                if train is None:
                    continue
                notes.append(f"train file missing from {self.cfg.data_set}; using {fallback.name}'s")
            files["train"] = train
            valid = find_split_file(folder, self.babi_id, "valid")
            if valid is not None:
                files["valid"] = valid
            label = f"files: {shown_path(folder)} task {self.babi_id}"
            return files, label + (f"; {'; '.join(notes)}" if notes else "")
        return None

    def _generated_files(self) -> tuple[dict[str, Path], str]:
        from tasks.babi.generator import SUPPORTED_TASKS, write_dataset

        if self.babi_id not in SUPPORTED_TASKS:
            raise UserError(
                f"bAbI task {self.babi_id}: no official files under {data_dir()} ({data_dir_label()}) and the "
                f"built-in generator covers tasks {', '.join(map(str, sorted(SUPPORTED_TASKS)))}; "
                "point HARNESS_DATA_DIR at the official v1.2 files"
            )
        n_train, n_test = int(self.cfg.generator_train_questions), int(self.cfg.generator_test_questions)
        seed = int(self.cfg.generator_seed)
        folder = cache_dir() / "babi" / f"generated-s{seed}-{n_train}-{n_test}-{generator_code_digest()}"
        files = {"train": folder / _generated_name(self.babi_id, "train"),
                 "test": folder / _generated_name(self.babi_id, "test")}
        cached = all(path.exists() for path in files.values())
        if not cached:
            written = write_dataset(folder, self.babi_id, seed=seed, n_train=n_train, n_test=n_test)
            files = {"train": written["train"], "test": written["test"]}
        label = (f"generator: bAbI task {self.babi_id}, seed {seed}, {n_train} train / {n_test} test questions "
                 f"({'cached' if cached else 'written'} in {shown_path(folder)})")
        return files, label

    def _generator_params(self) -> dict[str, str]:
        return {"generator": f"babi v{generator_version(self.babi_id)}", "babi_id": str(self.babi_id),
                "seed": str(self.cfg.generator_seed), "train": str(self.cfg.generator_train_questions),
                "test": str(self.cfg.generator_test_questions)}

    def _describe_source(self, source: str) -> tuple[str, dict[str, str], dict[str, str]]:
        """(label, data files with their hashes, generator settings) of one source."""
        if source == "files":
            found = self._official_files()
            if found is None:
                raise UserError(self._missing_files(testing=self.resolve_source() != "files"))
            files, label = found
            return label, {data_relative(path): file_digest(path) for path in sorted(set(files.values()))}, {}
        return f"generator: bAbI task {self.babi_id}", {}, self._generator_params()

    def describe_data(self) -> dict[str, Any]:
        """The data this run will read and its fingerprint (part of the run id): the official files' hashes,
        or the generator's version and settings (its output is a function of them); likewise for the sources
        of ``task.test_on``."""
        label, files, params = self._describe_source(self.resolve_source())
        for source in self.test_sources():
            _, more_files, more_params = self._describe_source(source)
            files.update(more_files)
            params.update({f"{source}.{key}": value for key, value in more_params.items()})
        return {"source": label, "files": files, "fingerprint": fingerprint({**files, **params})}

    def test_sources(self) -> list[str]:
        """The other sources to test on (``task.test_on``), without the one the run trains on."""
        main = self.resolve_source()
        return [str(s) for s in dict.fromkeys(self.cfg.get("test_on") or []) if s != main]

    def resolve_source(self) -> str:
        """``files`` or ``generator``: what ``source: auto`` means on this machine. The launcher writes it
        into the run's config, so runs on official files and on generated data never share a run id."""
        if self.cfg.source != "auto":
            return str(self.cfg.source)
        return "files" if self._official_files() is not None else "generator"

    def locate(self) -> tuple[dict[str, Path], str]:
        if self.cfg.source in ("auto", "files"):
            found = self._official_files()
            if found is not None:
                return found
            if self.cfg.source == "files":
                raise UserError(self._missing_files(testing=False))
        return self._generated_files()

    def _missing_files(self, testing: bool) -> str:
        """Why no official files were found, for training on them or (``testing``) for ``task.test_on``: the data
        folder's first bAbI folder and the file it lacks, or where the folder was expected; and what helps."""
        name = f"qa{self.babi_id}_*"
        for folder in candidate_folders(data_dir(), self.cfg.data_set):
            if not folder.is_dir():
                continue
            if find_split_file(folder, self.babi_id, "test") is None:
                missing = f"{name}_test.txt"
            else:
                missing = f"{name}_train.txt (nor has {shown_path(folder.parent / 'en')})"
            where = f"{shown_path(folder)} has no {missing}"
            break
        else:
            where = (f"no {self.cfg.data_set} folder under {data_dir()} ({data_dir_label()}); expected e.g. "
                     f"{data_dir()}/babi/{self.cfg.data_set}/")
        instead = "drop files from task.test_on" if testing else "task.source=generator trains on generated ones"
        return (f"bAbI task {self.babi_id}: {where}; `harness data fetch babi` downloads the official files, or "
                f"{instead}")

    # building the tensors ----------------------------------------------------------------------
    def _split_train(self, samples: list[Sample]) -> tuple[list[Sample], list[Sample]]:
        """Hold out whole stories, so no statement is shared between train and validation."""
        stories = sorted({s.story_id for s in samples})
        random.Random(int(self.cfg.split_seed)).shuffle(stories)
        n_val = max(1, round(len(stories) * float(self.cfg.val_fraction)))
        val_ids = set(stories[:n_val])
        return [s for s in samples if s.story_id not in val_ids], [s for s in samples if s.story_id in val_ids]

    def load(self) -> TaskData:
        files, source = self.locate()
        train = read_samples(files["train"])
        if "valid" in files:
            val = read_samples(files["valid"])
        else:
            train, val = self._split_train(train)
        test = read_samples(files["test"])
        limit = story_limit(self.babi_id, self.cfg.max_story_sentences)
        vocab = build_vocab(train)
        splits = {"train": train, "val": val, "test": test}
        max_story = max(min(len(s.story), limit) for samples in splits.values() for s in samples)
        max_words = max(
            max((len(sentence) for s in samples for sentence in s.story[-limit:]), default=1)
            for samples in splits.values()
        )
        max_words = max(max_words, *(len(s.question) for samples in splits.values() for s in samples))
        tensors = {name: vectorize(samples, vocab, limit, max(max_story, 1), max_words)
                   for name, samples in splits.items()}
        extra, notes = {}, []
        for other in self.test_sources():
            files_other, label_other = self._official_files() if other == "files" else self._generated_files()
            samples = read_samples(files_other["test"])
            extra[other] = vectorize(samples, vocab, limit, max(max_story, 1), max_words)
            notes.append(f"also tested on {label_other}")
        if self.cfg.get("trim_batches"):  # absent from the configs of runs stored before the key: false
            tensors = {name: cut_to_longest_story(split) for name, split in tensors.items()}
            extra = {name: cut_to_longest_story(split) for name, split in extra.items()}
        info = {
            "vocab_size": len(vocab),
            "num_classes": len(vocab),
            "max_story_len": max(max_story, 1),
            "max_sent_len": max_words,
            "babi_id": self.babi_id,
            "answers": sorted({s.answer for s in train}),
        }
        return TaskData(train=tensors["train"], val=tensors["val"], test=tensors["test"], info=info,
                        source="; ".join([source, *notes]), extra_test=extra)


def _generated_name(babi_id: int, split: str) -> str:
    from tasks.babi.generator import file_name

    return file_name(babi_id, split)


def build_vocab(train: list[Sample]) -> dict[str, int]:
    words = {w for s in train for sentence in s.story for w in sentence} | {w for s in train for w in s.question}
    words |= {s.answer for s in train}
    return {word: i for i, word in enumerate([PAD, UNK, *sorted(words - {PAD, UNK})])}


def cut_to_longest_story(split: TensorDictDataset) -> TensorDictDataset:
    """``split``, handing out each batch cut to the longest story in it (``task.trim_batches``): the statements
    cut are padding of every story in the batch, which models that mask statements past ``story_len`` never
    read, so the step's cost follows the batch's stories, not the task's longest one (tasks/babi/README.md)."""
    from tasks.babi.joint import TrimmedStories  # the all-tasks mode's batches; joint.py imports this module

    return TrimmedStories(split.tensors)


def vectorize(samples: list[Sample], vocab: dict[str, int], limit: int, max_story: int,
              max_words: int) -> TensorDictDataset:
    n = len(samples)
    story = np.zeros((n, max_story, max_words), dtype=np.int64)  # [N, T, W]
    story_len = np.zeros(n, dtype=np.int64)  # [N]
    query = np.zeros((n, max_words), dtype=np.int64)  # [N, W]
    target = np.zeros(n, dtype=np.int64)  # [N]
    unk = vocab[UNK]
    for i, sample in enumerate(samples):
        kept = sample.story[-min(limit, max_story):]
        story_len[i] = len(kept)
        for t, sentence in enumerate(kept):
            story[i, t, : min(len(sentence), max_words)] = [vocab.get(w, unk) for w in sentence[:max_words]]
        query[i, : min(len(sample.question), max_words)] = [vocab.get(w, unk) for w in sample.question[:max_words]]
        target[i] = vocab.get(sample.answer, unk)
    arrays = {"story": story, "story_len": story_len, "query": query, "target": target}
    return TensorDictDataset({name: torch.from_numpy(array) for name, array in arrays.items()})
