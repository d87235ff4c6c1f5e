"""The life of one run: find or create its directory, resume or skip it, train, and store the outcome.

* Everything a user can get wrong is checked before the run directory exists: the config, the data (the
  task loads it), the model (built once from the config) or, for RL, the environment and the agent.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf, open_dict

from harness import config as config_lib
from harness.config import Composed
from harness.errors import DivergedError, UserError
from harness.paths import check_data_dir
from harness.provenance import attempt_record, code_files, fingerprint
from harness.registry import load_entry
from harness.runs import Run, attempt_count, new_results, now_iso, owner_record, run_dir
from harness.tracking import Tracker, configure_environment

PROTOCOLS = ("single", "curriculum")


@dataclass
class Prepared:
    """A run's task object, the data it will read, and what was built before its directory exists."""

    task: Any
    data: dict[str, Any] = field(default_factory=dict)  # source, files, fingerprint (a task's describe_data)
    loaded: Any = None  # supervised single runs: the TaskData
    model: Any = None  # supervised single runs: the model, built after seeding


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


def prepare_task(composed: Composed) -> Prepared:
    """Build the task (it validates its settings) and pin what depends on this machine.

    A task may resolve ``task.source: auto`` to the source it will really use (official files or its
    generator), and describes the data it will read (``describe_data``): its fingerprint goes into the
    config as ``data.fingerprint`` before the run id is computed, so runs on different data (official files
    and generated ones, or a corrupted copy of the files) never share a run id.
    """
    check_data_dir()
    task = load_entry(composed.task.entry)(composed.cfg)
    data: dict[str, Any] = task.describe_data() if hasattr(task, "describe_data") else {}
    with open_dict(composed.cfg):
        if hasattr(task, "resolve_source"):
            composed.cfg.task.source = task.resolve_source()
        composed.cfg.data.fingerprint = data.get("fingerprint")
    return Prepared(task=task, data=data)


def _model_error(composed: Composed, exc: Exception) -> UserError:
    return UserError(f"{composed.model.name} cannot be built from this config: {exc}")


def build_before_start(composed: Composed, prepared: Prepared) -> None:
    """Load the data and build the model (RL: the env and the agent) so that a bad data file or a bad model
    setting fails before the run directory exists."""
    import torch

    cfg = composed.cfg
    model_entry = composed.model.interfaces[composed.task.interface]
    if composed.kind == "rl":
        env = prepared.task.env_creator(prepared.task.env_config())
        try:
            shape = tuple(int(d) for d in env.observation_space.shape)
            load_entry(model_entry)(cfg.model, cfg.agent, shape, int(env.action_space.n))
        except ValueError as exc:
            raise _model_error(composed, exc) from None
        finally:
            env.close()
        return
    if cfg.train.threads:
        torch.set_num_threads(int(cfg.train.threads))
    if cfg.protocol.name == "curriculum":
        return  # each stage loads its own data and builds its own model
    import lightning.pytorch as pl

    from harness.runners.analysis import check_analysis_split

    prepared.loaded = prepared.task.load()
    check_analysis_split(cfg, prepared.loaded)
    pl.seed_everything(int(cfg.seed), workers=True, verbose=False)
    try:
        prepared.model = load_entry(model_entry)(cfg.model, prepared.loaded.info)
    except ValueError as exc:
        raise _model_error(composed, exc) from None


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


def _device_description() -> str:
    import torch

    if torch.cuda.is_available():
        return f"cuda: {torch.cuda.get_device_name(0)}"
    return f"cpu, {torch.get_num_threads()} threads"


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
            summary = _train(cfg, composed, prepared, run, tracker, results)
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


def _train(cfg: Any, composed: Composed, prepared: Prepared, run: Run, tracker: Tracker,
           results: dict[str, Any]) -> dict[str, Any]:
    from harness.runners.supervised import train_and_test

    results.update(device=_device_description())
    model_entry = composed.model.interfaces[composed.task.interface]
    if composed.task.kind == "rl":
        from harness.runners.rl import train_rl

        return train_rl(cfg, prepared.task, model_entry, run, tracker, results)
    if cfg.protocol.name == "curriculum":
        from harness.runners.curriculum import run_curriculum

        return run_curriculum(cfg, composed.task.entry, model_entry, run, tracker)
    data, model = prepared.loaded, prepared.model
    print(f"data: {data.source}", flush=True)
    results.update(data_source=data.source)
    run.write_results(results)
    results["parameters"] = sum(p.numel() for p in model.parameters())
    return train_and_test(cfg, data, model, run, tracker)
