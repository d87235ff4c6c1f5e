"""All 20 bAbI tasks at once (``task.babi_id: all``): the all-tasks setting of Schlag & Schmidhuber 2018
(§6: "the all-tasks model ... trained and tested on all tasks simultaneously"; Table 1, Appendix B Table 4).

One model is trained on the union of the 20 tasks' training questions, with one vocabulary built from all of
their training splits, and tested on each task's own test file:

    test/acc          over the 20 test files together (each holds 1,000 questions, so this is the mean of the
                      per-task accuracies: the paper's "all (0)" row as 100 - error)
    test_qa<N>/acc    on task N's test file alone (a row of the paper's Table 4)

Every task keeps its own story limit (its last 70 statements, 130 for task 3, as the single-task setting) and
its own validation split (the ``valid`` file, or ``task.val_fraction`` of its training stories); the tensors
of all tasks share one shape, [T, W] = the longest kept story and the longest sentence over every task, so the
ids of a single-task example are remapped to the joint vocabulary and padded to that shape (the reference
evaluates its all-tasks model per task the same way: ischlag/TPR-RNN, preprocessor/reader.py, 130 x 12).

The reference trains on ``qa0_*`` files that its authors' tarball adds to the release; we build the same
union from the 20 official files, so a user needs nothing beyond bAbI v1.2.

Batches are cut to their longest story (:class:`TrimmedStories`), which trains TPR-RNN about 4 times faster on
the joint data. The cut statements are padding, so this changes nothing for models that mask statements past
``story_len`` or drop padding (TPR-RNN, MemN2N, the LSTM, linear-logic and Transformer readers, the
Updater-Extractor). Of the entity adapters of ``models/adapters``, those of mlp1, mlp2, PrediNet, MHA and the
2-simplicial model read a fixed number of statement slots, so the launcher refuses them this mode
(``harness.runners.build_checks.check_model_output``); the relation net and the relational model read padded
statements as zero entities, and with the cut they see as many of them as the batch's longest story leaves, not a
fixed 130.

Memory: en-10k's 172,000 training questions padded to 130 x 12 int64 ids take 2.1 GB (3 GB with validation
and test), where one task takes at most a tenth of that.
"""

from __future__ import annotations

import re
from typing import Any

import torch
from omegaconf import OmegaConf, open_dict

from harness.data import TaskData, TensorDictDataset
from harness.errors import UserError
from harness.provenance import fingerprint
from tasks.babi.reader import Sample, read_samples
from tasks.babi.task import BabiTask, build_vocab, story_limit, vectorize

ALL = "all"
TASK_IDS = tuple(range(1, 21))


def open_babi_task(cfg: Any) -> BabiTask | JointBabiTask:
    """The task's registry entry: all 20 tasks when ``task.babi_id`` is ``all``, otherwise one task."""
    return JointBabiTask(cfg) if str(cfg.task.babi_id) == ALL else BabiTask(cfg)


def single_task_config(cfg: Any, babi_id: int) -> Any:
    """A copy of the run's config that names one task (every other setting is shared)."""
    one = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
    with open_dict(one):
        one.task.babi_id = babi_id
    return one


class TrimmedStories(TensorDictDataset):
    """Stories stored padded to the longest kept story of all 20 tasks (130 statements, task 3's limit), handed
    out cut to the longest story of each batch: a batch of task-1 questions (at most 10 statements) no longer
    carries 120 padded statements. The statements cut are padding of every story in the batch."""

    def __getitems__(self, indices: list[int]) -> dict[str, torch.Tensor]:
        batch = super().__getitems__(indices)
        longest = max(int(batch["story_len"].max()), 1) if len(indices) else 1
        batch["story"] = batch["story"][:, :longest]  # [B, T', W], T' <= T
        return batch


def joined(parts: list[TensorDictDataset]) -> TrimmedStories:
    """The examples of ``parts`` (same tensor shapes) in order, as one dataset."""
    return TrimmedStories({name: torch.cat([part.tensors[name] for part in parts]) for name in parts[0].tensors})


class JointBabiTask:
    """The 20 bAbI tasks as one task; each single task is read by a :class:`BabiTask` (same files, same
    generator, same validation split)."""

    def __init__(self, cfg: Any) -> None:
        self.cfg = cfg.task
        if list(self.cfg.get("test_on") or []):
            raise UserError("task.test_on is for one bAbI task; with task.babi_id=all every task's own test file "
                            "is already reported (test_qa<N>/acc)")
        self.tasks = [BabiTask(single_task_config(cfg, babi_id)) for babi_id in TASK_IDS]

    def resolve_source(self) -> str:
        """``files`` or ``generator``, the same for every task (a mix would make a run no one could name)."""
        sources = {task.resolve_source() for task in self.tasks}
        if len(sources) > 1:
            with_files = [task.babi_id for task in self.tasks if task.resolve_source() == "files"]
            raise UserError(f"task.babi_id=all: official files were found for tasks {_ids(with_files)} only; "
                            "stage all 20 or set task.source=generator")
        return sources.pop()

    def describe_data(self) -> dict[str, Any]:
        """Every task's files (or generator settings) and one fingerprint over all of them."""
        files: dict[str, str] = {}
        params: dict[str, str] = {}
        labels = []
        for task in self.tasks:
            label, task_files, task_params = task._describe_source(self.resolve_source())
            files.update(task_files)
            params.update({f"qa{task.babi_id}.{key}": value for key, value in task_params.items()})
            labels.append(label)
        return {"source": f"all 20 tasks ({labels[0]} ... {labels[-1]})", "files": files,
                "fingerprint": fingerprint({**files, **params})}

    def read_splits(self) -> tuple[dict[int, dict[str, list[Sample]]], list[str]]:
        """Per task: its train, val and test samples; and where each task's data came from."""
        splits: dict[int, dict[str, list[Sample]]] = {}
        labels = []
        for task in self.tasks:
            files, label = task.locate()
            train = read_samples(files["train"])
            if "valid" in files:
                val = read_samples(files["valid"])
            else:
                train, val = task._split_train(train)
            splits[task.babi_id] = {"train": train, "val": val, "test": read_samples(files["test"])}
            labels.append(label)
        return splits, labels

    def load(self) -> TaskData:
        splits, labels = self.read_splits()
        configured = self.cfg.max_story_sentences
        limits = {babi_id: story_limit(babi_id, configured) for babi_id in TASK_IDS}
        vocab = build_vocab([s for babi_id in TASK_IDS for s in splits[babi_id]["train"]])
        kept = [(babi_id, s.story[-limits[babi_id]:], s.question)
                for babi_id in TASK_IDS for samples in splits[babi_id].values() for s in samples]
        max_story = max(1, max(len(story) for _, story, _ in kept))  # T
        max_words = max(1, max(max((len(x) for x in story), default=1) for _, story, _ in kept),
                        max(len(question) for _, _, question in kept))  # W
        tensors: dict[str, dict[int, TensorDictDataset]] = {"train": {}, "val": {}, "test": {}}
        for babi_id in TASK_IDS:
            for name, samples in splits[babi_id].items():
                tensors[name][babi_id] = vectorize(samples, vocab, limits[babi_id], max_story, max_words)
        info = {
            "vocab_size": len(vocab),
            "num_classes": len(vocab),
            "max_story_len": max_story,
            "max_sent_len": max_words,
            "babi_id": ALL,
            "answers": sorted({s.answer for babi_id in TASK_IDS for s in splits[babi_id]["train"]}),
        }
        source = f"all 20 tasks, one vocabulary of {len(vocab)} words: {summary(labels)}"
        return TaskData(train=joined(list(tensors["train"].values())), val=joined(list(tensors["val"].values())),
                        test=joined(list(tensors["test"].values())), info=info, source=source,
                        extra_test={f"qa{babi_id}": joined([tensors["test"][babi_id]]) for babi_id in TASK_IDS})


def summary(labels: list[str]) -> str:
    """The 20 tasks' data labels (``files: <folder> task <N>[; note]``) as one line: each folder once, with the
    tasks read from it, then the notes of single tasks."""
    folders: dict[str, list[int]] = {}
    notes = []
    for babi_id, label in zip(TASK_IDS, labels, strict=True):
        head, _, note = label.partition("; ")
        folder = re.sub(rf" task {babi_id}$", "", head)
        folders.setdefault(folder, []).append(babi_id)
        if note:
            notes.append(f"task {babi_id}: {note}")
    return "; ".join([f"{folder} tasks {_ids(ids)}" for folder, ids in folders.items()] + notes)


def _ids(ids: list[int]) -> str:
    return ", ".join(map(str, ids)) if ids else "none"


_READ: dict[str, dict[int, dict[str, list[Sample]]]] = {}  # the last run's samples, by its task config


def describe_joint(cfg: Any, split: str, examples: list[int], said: list[tuple[int, int]]) -> list[dict[str, str]]:
    """Story, question, answer and what the model said for examples of ``test`` (the 20 test files in task
    order) or ``test_qa<N>`` (task N's), read again from the run's files with the joint vocabulary rebuilt
    as :meth:`JointBabiTask.load` builds it; ``said`` holds each example's (target id, predicted id)."""
    from tasks.babi.examples import described_sample

    key = OmegaConf.to_yaml(cfg.task, resolve=True)
    if key not in _READ:  # a run page describes every test split in turn: read the 20 tasks once
        _READ.clear()
        _READ[key] = JointBabiTask(cfg).read_splits()[0]
    splits = _READ[key]
    words = {index: word for word, index in
             build_vocab([s for babi_id in TASK_IDS for s in splits[babi_id]["train"]]).items()}
    if split == "test":
        tested = [(babi_id, s) for babi_id in TASK_IDS for s in splits[babi_id]["test"]]
    else:
        babi_id = int(split.removeprefix("test_qa"))
        tested = [(babi_id, s) for s in splits[babi_id]["test"]]
    limits = {babi_id: story_limit(babi_id, cfg.task.max_story_sentences) for babi_id in TASK_IDS}
    return [described_sample(tested[example][1], words, target, prediction, limits[tested[example][0]], split,
                             example) for example, (target, prediction) in zip(examples, said, strict=True)]
