"""The life of one run: find or create its directory, resume or skip it, train, and store the outcome.

* a completed run is reported, not retrained (``force=True`` retrains from scratch);
* an unfinished run (``running`` after a kill, ``failed``, ``diverged``) resumes from its last checkpoint;
* whatever happens, ``results.json`` ends with a status: ``completed``, ``failed`` (with the error) or
  ``diverged`` (non-finite loss).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf, open_dict

from harness import config as config_lib
from harness.config import Composed
from harness.errors import DivergedError, UserError
from harness.registry import load_entry
from harness.runs import Run, new_results, now_iso, owner_record, run_dir
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


def _start(run: Run, composed: Composed) -> dict[str, Any]:
    cfg = composed.cfg
    if run.exists():  # resuming an unfinished run
        results = run.read_results()
        results.update(status="running", error=None, attempts=results.get("attempts", 1) + 1,
                       owner=owner_record(), finished_at=None)
    else:
        summary = {"task": cfg.task.name, "model": cfg.model.name, "profile": cfg.profile, "seed": int(cfg.seed)}
        results = new_results(composed.run_id, summary, now_iso())
    config_lib.save(cfg, run.config_path)
    run.write_results(results)
    return results


def _device_description() -> str:
    import torch

    if torch.cuda.is_available():
        return f"cuda: {torch.cuda.get_device_name(0)}"
    return f"cpu, {torch.get_num_threads()} threads"


def prepare_task(composed: Composed) -> Any:
    """Build the task (it validates its settings) and pin what depends on this machine.

    A task may resolve ``task.source: auto`` to the source it will really use (official files or its
    generator); that goes into the config before the run id is computed, so the two never share a run.
    """
    task = load_entry(composed.task.entry)(composed.cfg)
    if hasattr(task, "resolve_source"):
        with open_dict(composed.cfg):
            composed.cfg.task.source = task.resolve_source()
    return task


def launch(composed: Composed, force: bool = False, runs_dir: Path | None = None) -> int:
    """Run (or resume, or report) one composed configuration; returns the process exit code."""
    cfg = composed.cfg
    if composed.task.kind not in ("supervised", "rl"):
        raise UserError(f"task kind '{composed.task.kind}' has no runner yet")
    if composed.task.kind == "rl":
        from harness.runners.rl import check_rl_config

        check_rl_config(cfg)
    if cfg.protocol.name not in PROTOCOLS:
        raise UserError(f"bad value for 'protocol.name': {cfg.protocol.name!r}; one of {', '.join(PROTOCOLS)}")
    if cfg.protocol.name == "curriculum":
        from harness.runners.curriculum import check_protocol_config

        check_protocol_config(cfg)
    task = prepare_task(composed)
    run = run_dir(cfg.task.name, cfg.model.name, composed.run_id, runs_dir)
    if run.owner_alive():
        owner = run.read_results()["owner"]
        raise UserError(f"run {composed.run_id} is in progress (pid {owner['pid']}); wait for it or stop it")
    if run.exists() and force:
        run.remove()
    if run.exists() and run.status == "completed":
        print("already completed (FORCE=1 retrains):")
        print(_summary_line(run, run.read_results()))
        return 0

    mode = configure_environment()
    results = _start(run, composed)
    previous_wall = float(results.get("wall_time_s") or 0.0)
    started = time.perf_counter()
    print(f"run {composed.run_id} ({'resuming' if results['attempts'] > 1 else 'new'}; W&B {mode})", flush=True)
    tracker = Tracker(run.path, composed.run_id, OmegaConf.to_container(cfg, resolve=True),  # type: ignore[arg-type]
                      project=cfg.tracking.project,
                      group=cfg.tracking.group or f"{cfg.task.name}-{cfg.model.name}",
                      tags=[f"task:{cfg.task.name}", f"model:{cfg.model.name}", f"profile:{cfg.profile}",
                            f"seed:{cfg.seed}", *cfg.tracking.tags])
    exit_code = 1
    try:
        summary = _train(cfg, task, composed, run, tracker, results)
        results.update(summary, status="completed")
        exit_code = 0
    except DivergedError as exc:
        results.update(status="diverged", error=str(exc))
    except UserError as exc:
        results.update(status="failed", error=str(exc))
        raise
    except (KeyboardInterrupt, SystemExit):  # Lightning turns Ctrl-C into sys.exit(1)
        results.update(status="failed", error="interrupted (the same command resumes the run)")
        raise KeyboardInterrupt from None
    except Exception as exc:
        results.update(status="failed", error=f"{type(exc).__name__}: {exc}")
        raise
    finally:
        results.update(wall_time_s=previous_wall + time.perf_counter() - started, finished_at=now_iso())
        run.write_results(results)
        tracker.summary(results.get("metrics") or {})
        tracker.finish(exit_code)
    print(_summary_line(run, results), flush=True)
    return exit_code


def _train(cfg: Any, task: Any, composed: Composed, run: Run, tracker: Tracker,
           results: dict[str, Any]) -> dict[str, Any]:
    import lightning.pytorch as pl
    import torch

    from harness.runners.supervised import train_and_test

    if cfg.train.threads:
        torch.set_num_threads(int(cfg.train.threads))
    results.update(device=_device_description())
    model_entry = composed.model.interfaces[composed.task.interface]
    if composed.task.kind == "rl":
        from harness.runners.rl import train_rl

        return train_rl(cfg, task, model_entry, run, tracker, results)
    if cfg.protocol.name == "curriculum":
        from harness.runners.curriculum import run_curriculum

        return run_curriculum(cfg, composed.task.entry, model_entry, run, tracker)
    data = task.load()
    print(f"data: {data.source}", flush=True)
    results.update(data_source=data.source)
    run.write_results(results)
    pl.seed_everything(int(cfg.seed), workers=True, verbose=False)
    model = load_entry(model_entry)(cfg.model, data.info)
    results["parameters"] = sum(p.numel() for p in model.parameters())
    return train_and_test(cfg, data, model, run, tracker)
