"""Checks of a bAbI run's settings that run before it starts (``spec.data_check`` in ``task.yaml``).

They only raise; they never change what a run computes (``harness/provenance.py`` leaves this module out of the
code fingerprint).
"""

from __future__ import annotations

from typing import Any

from harness.errors import UserError


def check_settings(task_cfg: Any) -> None:
    """``task.trim_batches=true`` with ``task.babi_id=all`` is refused: the all-tasks mode always cuts its batches to
    their longest story (tasks/babi/joint.py), so the setting would name a second run id for the same run."""
    if str(task_cfg.babi_id) == "all" and task_cfg.get("trim_batches"):
        raise UserError("task.trim_batches=true changes nothing with task.babi_id=all: the all-tasks mode always cuts "
                        "its batches to their longest story (leave the setting out)")
