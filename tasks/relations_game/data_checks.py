"""Checks of the released mini sets that run before a run starts (``spec.data_check`` in ``task.yaml``).

:func:`tasks.relations_game.real_data.load_mini` already rejects a file that is not an ``.npz`` archive or
whose arrays have the wrong keys, shapes, dtypes or value ranges. What it cannot know is which task ids a
file should hold: a file with no examples, or whose ``tasks`` column holds ids the file does not define
(``MINI_SETS``), would otherwise be skipped silently and the run would report no ``test_real_*`` numbers; so
would a file that lacks one of its tasks (a ``tasks`` column written as zeros would also score every image as
task 0's).
These checks only raise; they never change what a run computes (``harness/provenance.py`` leaves this module
out of the code fingerprint).
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from harness.errors import DataFormatError
from harness.paths import data_dir
from tasks.relations_game.real_data import MINI_SETS, load_mini


def check_mini_sets(task_cfg: Any) -> None:
    """Every mini set the run would test on (``task.real_sets``, a task of ``task.tasks``, the file present)
    holds examples, labels 0 and 1 only, and the task ids its file defines: only those, and each of them."""
    if not task_cfg.real_sets:
        return
    tasks = set(task_cfg.tasks)
    folder = data_dir() / "relations_game"
    for mini in MINI_SETS.values():
        path = folder / mini.file_name
        if not path.exists() or not tasks & set(mini.task_names):
            continue
        try:
            arrays = load_mini(path)
        except zlib.error as exc:  # a damaged compressed array: load_mini names the zip's own errors, not zlib's
            raise DataFormatError(f"{path}: unreadable array in the archive ({exc})") from None
        ids, labels = arrays["tasks"], arrays["labels"]  # [N], [N]
        if not len(ids):
            raise DataFormatError(f"{path}: holds no examples")
        if labels.min() < 0 or labels.max() > 1:  # every relation is a yes/no question
            raise DataFormatError(f"{path}: 'labels' holds {sorted(set(np.unique(labels).tolist()) - {0, 1})}; "
                                  "a mini set's labels are 0 (no) and 1 (yes)")
        held = set(np.unique(ids).tolist())
        known = ", ".join(f"{i} ({task})" for i, task in mini.tasks.items())
        foreign = sorted(held - set(mini.tasks))
        if foreign:
            raise DataFormatError(f"{path}: 'tasks' holds id(s) {foreign}; this file's task ids are {known}")
        absent = [f"{i} ({task})" for i, task in mini.tasks.items() if i not in held]
        if absent:  # the released files hold every task of theirs (about a third each in the three-task files)
            raise DataFormatError(f"{path}: 'tasks' holds no example of task id(s) {', '.join(absent)}; the released "
                                  f"file holds each of {known}")
