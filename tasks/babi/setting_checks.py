"""Checks of a bAbI run's settings and of the generated files it would read, run before it starts
(``spec.data_check`` in ``task.yaml``).

A generated file cached under ``$HARNESS_CACHE_DIR/babi`` is named by the generator's settings, not by its bytes,
and the run's data fingerprint is made of those settings: a cached file cut short at a line end would be read as a
smaller data set under the run id of the whole one. The generator writes exactly the configured number of questions,
so a cached file holding another number is refused.

They only raise; they never change what a run computes (``harness/provenance.py`` leaves this module out of the
code fingerprint).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from harness.errors import UserError
from harness.paths import cache_dir, shown_path

MAX_GENERATED_QUESTIONS = 1_000_000
"""The most questions the generator writes for one split of one task (``harness data babi --n-train/--n-test``; the
same bound on ``task.generator_*_questions`` in ``task.yaml``): 100 times the en-10k release's 10,000; task 3's
million training questions fill about 0.5 GB."""


def check_settings(task_cfg: Any) -> None:
    """The run's settings (:func:`check_trim_batches`), the cached generated files it would read
    (:func:`check_generated_files`) and the official files it would pick (:func:`check_official_files`)."""
    check_trim_batches(task_cfg)
    check_generated_files(task_cfg)
    check_official_files(task_cfg)


def check_trim_batches(task_cfg: Any) -> None:
    """``task.trim_batches=true`` with ``task.babi_id=all`` is refused: the all-tasks mode always cuts its batches to
    their longest story (tasks/babi/joint.py), so the setting would name a second run id for the same run."""
    if str(task_cfg.babi_id) == "all" and task_cfg.get("trim_batches"):
        raise UserError("task.trim_batches=true changes nothing with task.babi_id=all: the all-tasks mode always cuts "
                        "its batches to their longest story (leave the setting out)")


def generated_folder(task_cfg: Any) -> Path:
    """The cache folder of the generated files for ``task_cfg``'s generator settings, as
    :class:`tasks.babi.task.BabiTask` writes and reads it."""
    from tasks.babi.task import generator_code_digest

    sizes = f"{int(task_cfg.generator_train_questions)}-{int(task_cfg.generator_test_questions)}"
    return cache_dir() / "babi" / f"generated-s{int(task_cfg.generator_seed)}-{sizes}-{generator_code_digest()}"


def single_tasks(task_cfg: Any) -> list[Any]:
    """A :class:`tasks.babi.task.BabiTask` for each task the run reads (all 20 with ``babi_id=all``)."""
    from tasks.babi.joint import single_task_config
    from tasks.babi.task import BabiTask

    ids = range(1, 21) if str(task_cfg.babi_id) == "all" else [int(task_cfg.babi_id)]
    run_cfg = OmegaConf.create({"task": OmegaConf.to_container(task_cfg, resolve=True)})
    return [BabiTask(single_task_config(run_cfg, babi_id)) for babi_id in ids]


def check_official_files(task_cfg: Any) -> None:
    """A UserError when the folder the run reads a task's official files from holds more than one file that could
    be one of its splits (``qa{N}_*{split}.txt``, which takes en-valid-10k's ``qa1_train.txt`` too; e.g. a renamed
    copy beside the original): the first in name order would be read without a word; or, for ``en-valid-10k``,
    lacks the task's validation file: the run would hold out training stories instead, without a word."""
    for task in single_tasks(task_cfg):
        if "files" not in (task.resolve_source(), *task.test_sources()):
            continue
        found = task._official_files()
        if found and task.cfg.data_set == "en-valid-10k" and "valid" not in found[0]:
            folder = shown_path(found[0]["test"].parent)
            raise UserError(f"{folder} has no qa{task.babi_id}_valid.txt: en-valid-10k's validation split is its own "
                            "file (without it the run would hold out training stories instead); put it back, or set "
                            "task.data_set=en-10k")
        for split, path in (found[0] if found else {}).items():
            matches = sorted(path.parent.glob(f"qa{task.babi_id}_*{split}.txt"))
            if len(matches) > 1:
                names = ", ".join(match.name for match in matches)
                raise UserError(f"{shown_path(path.parent)} holds {len(matches)} files that could be task "
                                f"{task.babi_id}'s {split} split ({names}); keep one of them there")


def generated_task_ids(task_cfg: Any) -> list[int]:
    """The tasks whose generated files the run reads: the run's task (all 20 with ``babi_id=all``) when it trains
    or tests on the generator (``source``, ``auto`` as resolved here, or ``test_on``)."""
    return [task.babi_id for task in single_tasks(task_cfg)
            if "generator" in (task.resolve_source(), *task.test_sources())]


def question_count(path: Path) -> int:
    """The question lines (those holding a tab) of a bAbI file."""
    return sum(b"\t" in line for line in path.read_bytes().splitlines())


def check_generated_files(task_cfg: Any) -> None:
    """Every cached generated file the run would read holds the number of questions its settings write
    (``generator_train_questions``, ``generator_test_questions``); a UserError names the first that does not.
    A task whose pair of files is not both cached is written afresh by the run, so it is not checked."""
    from tasks.babi.generator import file_name

    folder = generated_folder(task_cfg)
    expected = {"train": int(task_cfg.generator_train_questions), "test": int(task_cfg.generator_test_questions)}
    for babi_id in generated_task_ids(task_cfg):
        paths = {split: folder / file_name(babi_id, split) for split in expected}
        if not all(path.is_file() for path in paths.values()):
            continue
        for split, path in paths.items():
            found = question_count(path)
            if found != expected[split]:
                raise UserError(f"{shown_path(path)}: this cached generated file holds {found} questions, not the "
                                f"{expected[split]} the generator writes for these settings (cut short or "
                                "overwritten?); delete it and the next run writes it afresh")
