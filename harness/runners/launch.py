"""The life of one run: find or create its directory, resume or skip it, train, and store the outcome.

* Everything a user can get wrong is checked before the run directory exists: the config, the data (the
  task loads it), the model (built once from the config) or, for RL, the environment and the agent; the
  building itself, which decides the run's numbers, lives in :mod:`harness.runners.build`.
* A completed run is reported, not retrained (``force=True`` retrains from scratch, whatever state the
  directory is in).
* An unfinished run (``running`` after a kill, ``interrupted``, ``failed``, ``diverged``) resumes from its
  last intact checkpoint. A damaged ``results.json`` is set aside (renamed, never deleted) and the run
  resumes from its checkpoints; the runners do the same with a damaged checkpoint.
* SIGTERM is handled like Ctrl-C: the run is stored as ``interrupted`` and the same command resumes it.
* Whatever happens, ``results.json`` ends with a status and the attempt's provenance: code commit and dirty
  flag, package versions, machine, and the fingerprint of the code that ran (:mod:`harness.provenance`).
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from harness import config as config_lib
from harness.config import Composed
from harness.errors import DivergedError, UserError
from harness.provenance import attempt_record, code_files, fingerprint
from harness.runners.build import Prepared, build_before_start, prepare_task, train
from harness.runs import Run, attempt_count, new_results, now_iso, owner_record, run_dir
from harness.tracking import Tracker, configure_environment

PROTOCOLS = ("single", "curriculum")


def _summary_line(run: Run, results: dict[str, Any]) -> str:
    metrics = results.get("metrics") or {}
    shown = "  ".join(f"{k}={v:.4f}" for k, v in sorted(metrics.items())
                      if ("test" in k and k.endswith("/acc")) or k in ("eval/win_rate", "eval/episode_return"))
    throughput = results.get("throughput") or {}
    rate_text = ""
    if throughput.get("train/examples_per_s"):
        rate_text = f"  {throughput['train/examples_per_s']:.0f} train examples/s"
    elif throughput.get("env_steps_per_s"):
        rate_text = f"  {results.get('env_steps', 0):,} env steps at {throughput['env_steps_per_s']:.0f}/s"
    return (f"{results['status']}: {results['task']}/{results['model']} in {results['wall_time_s']:.0f} s: "
            f"{shown}{rate_text}\n  {run.path}")


def check_run_config(composed: Composed) -> None:
    """Settings that depend on each other, checked before anything is loaded or written."""
    cfg = composed.cfg
    if composed.task.kind == "rl":
        from harness.runners.rl import check_rl_config

        check_rl_config(cfg)
        return
    if cfg.protocol.name == "curriculum":
        from harness.runners.curriculum import check_protocol_config

        check_protocol_config(cfg)


def _start(run: Run, composed: Composed, prepared: Prepared, previous: dict[str, Any] | None) -> dict[str, Any]:
    """results.json for a new attempt: a fresh record, or the previous one with an attempt appended."""
    cfg = composed.cfg
    started = now_iso()
    if previous is not None:  # resuming an unfinished run
        results = previous
        attempts = results.get("attempts") if isinstance(results.get("attempts"), list) else []
        attempt = attempt_record(started)
        results.update(status="running", error=None, attempts=[*attempts, attempt], owner=owner_record(),
                       finished_at=None, git=attempt["git"], versions=attempt["versions"],
                       machine=attempt["machine"])
    else:
        summary = {"task": cfg.task.name, "model": cfg.model.name, "profile": cfg.profile, "seed": int(cfg.seed)}
        results = new_results(composed.run_id, summary, started)
    results["data"] = {"fingerprint": prepared.data.get("fingerprint"), "files": prepared.data.get("files") or {}}
    if prepared.data.get("source") and not results.get("data_source"):
        results["data_source"] = prepared.data["source"]
    config_lib.save(cfg, run.config_path)
    run.write_results(results)
    return results


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Inside the block, the first SIGTERM raises KeyboardInterrupt (as Ctrl-C does) and later ones are ignored,
    so the run is stored as interrupted. Only the main thread can own signal handlers; elsewhere (a Ray
    trial's thread) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    fired = False

    def handler(signum: int, frame: Any) -> None:
        nonlocal fired
        if fired:
            return
        fired = True
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _existing(run: Run, force: bool) -> dict[str, Any] | None:
    """The results of the run to resume, None for a new one; a damaged results.json is set aside."""
    if force and run.path.exists():
        run.remove()
    if not run.exists():
        return None
    problem = run.damage()
    if problem:
        aside = run.set_aside(run.results_path)
        print(f"{run.path}: {problem}; kept as {aside.name}. Resuming from the run's checkpoints "
              "(FORCE=1 starts afresh)", flush=True)
        return None
    return run.read_results()


def launch(composed: Composed, force: bool = False, runs_dir: Path | None = None) -> int:
    """Run (or resume, or report) one composed configuration; returns the process exit code."""
    cfg = composed.cfg
    if composed.task.kind not in ("supervised", "rl"):
        raise UserError(f"task kind '{composed.task.kind}' has no runner yet")
    check_run_config(composed)
    prepared = prepare_task(composed)
    run = run_dir(cfg.task.name, cfg.model.name, composed.run_id, runs_dir)
    if run.owner_alive():
        owner = run.read_results()["owner"]
        raise UserError(f"run {composed.run_id} is in progress (pid {owner['pid']}); wait for it or stop it")
    if not force and run.exists() and run.status == "completed":
        print("already completed (FORCE=1 retrains):")
        print(_summary_line(run, run.read_results()))
        return 0
    build_before_start(composed, prepared)
    previous = _existing(run, force)

    mode = configure_environment()
    results = _start(run, composed, prepared, previous)
    previous_wall = float(results.get("wall_time_s") or 0.0)
    started = time.perf_counter()
    print(f"run {composed.run_id} ({'resuming' if attempt_count(results) > 1 else 'new'}; W&B {mode})", flush=True)
    tracker = Tracker(run.path, composed.run_id, OmegaConf.to_container(cfg, resolve=True),  # type: ignore[arg-type]
                      project=cfg.tracking.project,
                      group=cfg.tracking.group or f"{cfg.task.name}-{cfg.model.name}",
                      tags=[f"task:{cfg.task.name}", f"model:{cfg.model.name}", f"profile:{cfg.profile}",
                            f"seed:{cfg.seed}", *cfg.tracking.tags])
    exit_code = 1
    with terminate_as_interrupt():
        try:
            summary = train(cfg, composed, prepared, run, tracker, results)
            results.update(summary, status="completed")
            exit_code = 0
        except DivergedError as exc:
            results.update(status="diverged", error=str(exc))
            print(f"diverged: {exc}. The last finite checkpoint is kept; the same command retries from it, and a "
                  "smaller learning rate (a new run) is the usual cure.", file=sys.stderr, flush=True)
        except UserError as exc:
            results.update(status="failed", error=str(exc))
            raise
        except (KeyboardInterrupt, SystemExit):  # Ctrl-C, SIGTERM; Lightning turns Ctrl-C into sys.exit(1)
            results.update(status="interrupted", error="interrupted (the same command resumes the run)")
            raise KeyboardInterrupt from None
        except Exception as exc:
            results.update(status="failed", error=f"{type(exc).__name__}: {exc}")
            raise
        finally:
            _finish(run, results, previous_wall + time.perf_counter() - started)
            tracker.summary(results.get("metrics") or {})
            tracker.finish(exit_code)
    print(_summary_line(run, results), flush=True)
    return exit_code


def _finish(run: Run, results: dict[str, Any], wall_time_s: float) -> None:
    """Close the attempt: its status, the code that ran (see harness.provenance), the times; then write."""
    files = code_files()
    code = {"fingerprint": fingerprint(files), "files": files}
    finished = now_iso()
    results.update(wall_time_s=wall_time_s, finished_at=finished, code=code)
    attempts = results.get("attempts")
    if isinstance(attempts, list) and attempts:
        attempts[-1].update(finished_at=finished, status=results.get("status"), error=results.get("error"),
                            code=code["fingerprint"])
    run.write_results(results)
