"""W&B tracking: one W&B run per harness run, offline by default, never waiting on the network.

The mode comes from the environment, chosen once before wandb (or ray) is imported:
``WANDB_MODE=offline`` unless the user set it (tests set ``disabled``). With ``disabled`` wandb is
not even imported. The offline run lives in the run directory (``<run>/wandb/``); ``make sync``
uploads it for a user who has network. W&B is a mirror for dashboards; the run store is the record.

Training does not wait for W&B to start: ``wandb.init`` (importing wandb, starting its service process and
building its settings take seconds) runs on one background thread while the run builds its trainer and takes its
first steps, and the calls made meanwhile (``log``, ``summary``) are kept and replayed in order once the W&B run is
open; ``finish`` waits for it. The inits of several trackers in one process (a stacked run's members) run one
after another on that thread. A W&B run that cannot start costs the mirror, not the run: one line on stderr, and
training goes on with its record in the run folder.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from harness.errors import UserError

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


WANDB_MODES = ("offline", "online", "disabled", "shared", "dryrun", "run")
"""The values W&B's own settings accept for ``WANDB_MODE`` (wandb 0.31's ``Settings.mode``)."""


def configure_environment() -> str:
    """Fill in the offline defaults (the user's own settings win) and return the W&B mode; a ``WANDB_MODE`` W&B
    would refuse is the user's mistake, refused before any run starts (W&B would only fail once the run trained on
    without its mirror)."""
    for key, value in _QUIET_DEFAULTS.items():
        os.environ.setdefault(key, value)
    mode = os.environ["WANDB_MODE"]
    if mode not in WANDB_MODES:
        raise UserError(f"WANDB_MODE={mode!r} is not a W&B mode; use offline (the default), disabled or online")
    return mode


_STARTER: ThreadPoolExecutor | None = None  # the one thread that runs wandb.init, created on first use


def _starter() -> ThreadPoolExecutor:
    global _STARTER
    if _STARTER is None:
        _STARTER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="wandb-init")
    return _STARTER


def _start_wandb(run_dir: Path, run_id: str, config: dict[str, Any], project: str, group: str, tags: list[str],
                 mode: str) -> Any:
    """Open the W&B run (on the starter thread)."""
    import wandb  # lazy: keeps `harness list` and error paths light

    return wandb.init(
        project=project,
        group=group,
        name=run_id,
        id=_wandb_id(run_id),
        resume="allow",
        tags=tags,
        config=config,
        dir=str(run_dir),
        mode=mode,  # type: ignore[arg-type]
        settings=wandb.Settings(init_timeout=60, x_disable_stats=True),
        # A stacked run (harness/runners/stacked.py) keeps one W&B run per member open in one process;
        # "finish_previous" would close member 0's run when member 1's starts.
        reinit="create_new",
    )


class Tracker:
    """Mirrors a run's config and metrics to W&B (a no-op when the mode is ``disabled``); W&B starts in the
    background (module docstring)."""

    def __init__(self, run_dir: Path, run_id: str, config: dict[str, Any], project: str, group: str,
                 tags: list[str]) -> None:
        self.mode = configure_environment()
        self._run: Any = None
        self._starting: Future[Any] | None = None
        self._waiting: list[tuple[str, tuple[Any, ...]]] = []  # calls made while W&B starts, replayed in order
        if self.mode == "disabled":
            return
        run_dir.mkdir(parents=True, exist_ok=True)
        self._starting = _starter().submit(_start_wandb, run_dir, run_id, config, project, group, tags, self.mode)

    def _open(self, wait: bool) -> bool:
        """True when the W&B run is open (the calls kept meanwhile replayed); False while it is starting (and
        ``wait`` is off), when W&B is disabled, or when it could not start."""
        starting = self._starting
        if starting is not None and (wait or starting.done()):
            self._starting = None
            try:
                self._run = starting.result()
            except Exception as exc:  # the mirror is lost, the run is not
                print(f"W&B could not start ({type(exc).__name__}: {exc}); the run goes on, recorded in its run "
                      "folder only", file=sys.stderr, flush=True)
            waiting, self._waiting = self._waiting, []
            if self._run is not None:
                for call, args in waiting:
                    getattr(self, "_" + call)(*args)
        return self._run is not None

    def log(self, metrics: dict[str, float], step: int) -> None:
        if self._open(wait=False):
            self._log(metrics, step)
        elif self._starting is not None:
            self._waiting.append(("log", (dict(metrics), step)))

    def summary(self, values: dict[str, Any]) -> None:
        if self._open(wait=False):
            self._summary(values)
        elif self._starting is not None:
            self._waiting.append(("summary", (dict(values),)))

    def finish(self, exit_code: int = 0) -> None:
        if self._open(wait=True):
            self._run.finish(exit_code=exit_code)
            self._run = None

    def _log(self, metrics: dict[str, float], step: int) -> None:
        self._run.log(metrics, step=step)

    def _summary(self, values: dict[str, Any]) -> None:
        for key, value in values.items():
            self._run.summary[key] = value


def close_service() -> None:
    """Shut down this process's W&B service, if a tracker used it: ``wandb.teardown`` waits for the offline
    runs to be written and stops the service process. A sweep's trial calls it before its Ray worker ends: in
    a worker that ends without it, wandb's own exit hook finds the connection to its service already lost and
    prints a 30-line ConnectionResetError traceback for every trial (the runs themselves are complete)."""
    if "wandb" not in sys.modules:
        return
    import wandb

    try:
        wandb.teardown()
    except Exception as exc:  # noqa: BLE001  the runs are stored; only the mirror's shutdown failed
        print(f"W&B did not shut down cleanly ({type(exc).__name__}: {exc})", file=sys.stderr, flush=True)


def server_problem(base_url: str | None = None, timeout_s: float = 5.0) -> str | None:
    """Why the W&B server (``base_url``, by default wandb's own setting, ``WANDB_BASE_URL``) cannot be reached within
    ``timeout_s`` seconds, or None. ``wandb sync`` without network waits without a word for minutes; ``make sync``
    asks this first."""
    import socket
    from urllib.parse import urlsplit

    if base_url is None:
        import wandb

        base_url = str(wandb.Settings().base_url)
    parts = urlsplit(base_url)
    if not parts.hostname:
        return f"the W&B server address {base_url!r} names no host (WANDB_BASE_URL)"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout_s):
            return None
    except OSError as exc:  # no route, no name resolution, refused, timed out
        why = exc.strerror or type(exc).__name__
        return f"cannot reach the W&B server {base_url} ({why}; no network?)"


def _wandb_id(run_id: str) -> str:
    """W&B ids allow letters, digits, '-' and '_' only, at most 64 characters."""
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in run_id)
    return safe[-64:]


if __name__ == "__main__":  # `make sync`: a one-line answer instead of a silent wait when there is no network
    problem = server_problem()
    if problem:
        print(f"{problem}; the offline W&B runs stay in the run folders: sync them where there is network",
              file=sys.stderr)
        sys.exit(1)
