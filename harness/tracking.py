"""W&B tracking: one W&B run per harness run, offline by default, never waiting on the network.

The mode comes from the environment, chosen once before wandb (or ray) is imported:
``WANDB_MODE=offline`` unless the user set it (tests set ``disabled``). With ``disabled`` wandb is
not even imported. The offline run lives in the run directory (``<run>/wandb/``); ``make sync``
uploads it for a user who has network. W&B is a mirror for dashboards; the run store is the record.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# Settings that keep wandb from touching the network or spending CPU on system metrics.
_QUIET_DEFAULTS = {
    "WANDB_MODE": "offline",
    "WANDB_ERROR_REPORTING": "false",
    "WANDB_X_DISABLE_STATS": "true",
    "WANDB_DISABLE_GIT": "true",
    "WANDB_DISABLE_CODE": "true",
    "WANDB_CONSOLE": "off",
    "WANDB_SILENT": "true",
}


def configure_environment() -> str:
    """Fill in the offline defaults (the user's own settings win) and return the W&B mode."""
    for key, value in _QUIET_DEFAULTS.items():
        os.environ.setdefault(key, value)
    return os.environ["WANDB_MODE"]


class Tracker:
    """Mirrors a run's config and metrics to W&B (a no-op when the mode is ``disabled``)."""

    def __init__(self, run_dir: Path, run_id: str, config: dict[str, Any], project: str, group: str,
                 tags: list[str]) -> None:
        self.mode = configure_environment()
        self._run: Any = None
        if self.mode == "disabled":
            return
        import wandb  # lazy: keeps `harness list` and error paths light

        run_dir.mkdir(parents=True, exist_ok=True)
        self._run = wandb.init(
            project=project,
            group=group,
            name=run_id,
            id=_wandb_id(run_id),
            resume="allow",
            tags=tags,
            config=config,
            dir=str(run_dir),
            mode=self.mode,  # type: ignore[arg-type]
            settings=wandb.Settings(init_timeout=60, x_disable_stats=True),
            # A stacked run (harness/runners/stacked.py) keeps one W&B run per member open in one process;
            # "finish_previous" would close member 0's run when member 1's starts.
            reinit="create_new",
        )

    def log(self, metrics: dict[str, float], step: int) -> None:
        if self._run is not None:
            self._run.log(metrics, step=step)

    def summary(self, values: dict[str, Any]) -> None:
        if self._run is not None:
            for key, value in values.items():
                self._run.summary[key] = value

    def finish(self, exit_code: int = 0) -> None:
        if self._run is not None:
            self._run.finish(exit_code=exit_code)
            self._run = None


def _wandb_id(run_id: str) -> str:
    """W&B ids allow letters, digits, '-' and '_' only, at most 64 characters."""
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in run_id)
    return safe[-64:]
