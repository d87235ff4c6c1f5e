"""The life of one run: find or create its directory, resume or skip it, train, and store the outcome.

* Everything a user can get wrong is checked before the run directory exists: the config
  (:mod:`harness.runners.run_checks`), the data (the task loads it), the model (built once from the config,
  :mod:`harness.runners.build_checks`) or, for RL, the environment and the agent; the building itself, which decides
  the run's numbers, lives in :mod:`harness.runners.build`.
* A completed run is reported, not retrained (``force=True`` retrains from scratch, whatever state the
  directory is in), also from a read-only store; a missing or damaged ``config.yaml`` of it is written again from
  the command's config, which its run id hashes (:func:`restore_config`).
* An unfinished run (``running`` after a kill, ``interrupted``, ``failed``, ``diverged``) resumes from its
  last intact checkpoint. A damaged ``results.json`` is set aside (renamed, never deleted) and the run
  resumes from its checkpoints; the runners do the same with a damaged checkpoint.
* SIGTERM is handled like Ctrl-C: the run is stored as ``interrupted`` and the same command resumes it. While the
  final status is written, Ctrl-C and SIGTERM wait (:mod:`harness.runners.signals`; ``harness/runners/stacked.py``
  still imports ``signals_deferred`` from this module, as it did when the stacked reference runs recorded its digest),
  so a second Ctrl-C cannot leave ``running`` behind; an unfinished attempt records the step and epoch its curve
  reached. A Ctrl-C that lands once the run is stored as completed (while its summary or predictions are written) ends
  the command with code 130, as any Ctrl-C, and a line saying that the run completed and what, if anything, is
  missing.
* The command training a run holds its folder (an exclusive ``flock``, :func:`claim_run`): a second command of the
  same config, started before the first stored anything, stops in one line instead of training into it too.
* An unfinished member of a stack (``--seeds``) is resumed by its stack's command only; the solo command says so
  before writing anything. Temporary files left by a killed atomic write are removed when a run starts or resumes.
* Whatever happens, ``results.json`` ends with a status and the attempt's provenance: code commit and dirty
  flag, package versions, machine, and the fingerprint of the code that ran (:mod:`harness.provenance`).
* The CPU vector-math functions are warmed up on one thread first (:mod:`harness.vector_math`), so that two
  runs of the same config, or a resumed run and its uninterrupted twin, agree bit for bit.
"""

from __future__ import annotations

import fcntl
import importlib
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from harness import config as config_lib
from harness.config import Composed
from harness.errors import INTERRUPTED, DivergedError, UserError
from harness.paths import check_writable_folder
from harness.provenance import (
    attempt_record,
    code_files,
    code_status,
    edited_since_loaded,
    fingerprint,
    recorded_files,
    run_code_status,
    snapshot_code,
)
from harness.runners.build import Prepared, train
from harness.runners.build_checks import build_and_check, prepare_checked
from harness.runners.killed_attempts import close_killed_attempts
from harness.runners.run_checks import check_ray_address
from harness.runners.signals import signals_deferred, terminate_as_interrupt
from harness.runs import (
    KEPT,
    CurveWriter,
    Run,
    attempt_count,
    curve_damage,
    default_runs_dir,
    free_name,
    new_results,
    now_iso,
    owner_record,
    run_dir,
)
from harness.tracking import Tracker, configure_environment

PROTOCOLS = ("single", "curriculum")


def force_hint(does: str) -> str:
    """What ``--force`` would do here, for the command line and for ``make``: ``--force retrains it (make:
    FORCE=1)``."""
    return f"--force {does} (make: FORCE=1)"


def _summary_line(run: Run, results: dict[str, Any]) -> str:
    metrics = results.get("metrics") or {}
    shown = "  ".join(f"{k}={v:.4f}" for k, v in sorted(metrics.items())
                      if ("test" in k and k.endswith("/acc") and k.count("/") <= 2)
                      or k in ("eval/win_rate", "eval/episode_return"))
    throughput = results.get("throughput") or {}
    rate_text = ""
    if throughput.get("train/world_steps_per_s"):
        rate_text = f"  {throughput['train/world_steps_per_s']:.0f} world-steps/s"
    elif throughput.get("train/examples_per_s"):
        rate_text = f"  {throughput['train/examples_per_s']:.0f} train examples/s"
    elif throughput.get("env_steps_per_s"):
        rate_text = f"  {results.get('env_steps', 0):,} env steps at {throughput['env_steps_per_s']:.0f}/s"
    said = f"{shown}{rate_text}".strip()
    return (f"{results['status']}: {results['task']}/{results['model']} in {results['wall_time_s']:.0f} s"
            f"{f': {said}' if said else ''}\n  {run.path}")


def _start(run: Run, composed: Composed, prepared: Prepared, previous: dict[str, Any] | None) -> dict[str, Any]:
    """results.json for a new attempt: a fresh record, or the previous one with an attempt appended."""
    cfg = composed.cfg
    started = now_iso()
    if previous is not None:  # resuming an unfinished run
        results = previous
        attempts = results.get("attempts") if isinstance(results.get("attempts"), list) else []
        close_killed_attempts(run, results, attempts)
        attempt = attempt_record(started)
        results.update(status="running", error=None, attempts=[*attempts, attempt], owner=owner_record(),
                       finished_at=None, git=attempt["git"], versions=attempt["versions"],
                       machine=attempt["machine"])
    else:
        summary = {"task": cfg.task.name, "model": cfg.model.name, "profile": cfg.profile, "seed": int(cfg.seed)}
        results = new_results(composed.run_id, summary, started)
    results["data"] = {"fingerprint": prepared.data.get("fingerprint"), "files": prepared.data.get("files") or {}}
    record_started_code(results, composed)
    if prepared.data.get("source") and not results.get("data_source"):
        results["data_source"] = prepared.data["source"]
    config_lib.save(cfg, run.config_path)
    run.write_results(results)
    return results


def record_started_code(results: dict[str, Any], composed: Composed) -> None:
    """The code this attempt loaded, recorded as it starts (and again as it ends, :func:`_finish`): an attempt that is
    killed leaves its code on record, which :func:`refuse_mixed_code` compares with the code that would resume it."""
    files = snapshot_run_code(composed)
    results["code"] = {"fingerprint": fingerprint(files), "files": files}
    attempts = results.get("attempts")
    if isinstance(attempts, list) and attempts and isinstance(attempts[-1], dict):
        attempts[-1]["code"] = results["code"]["fingerprint"]


def refuse_mixed_code(composed: Composed, previous: dict[str, Any] | None) -> None:
    """An unfinished run whose last attempt ran code that has changed since (a file that computes the run edited, and
    not carried over as computing nothing differently, ``harness carry``) is not resumed: its numbers would come
    from two versions of the code while it records one, and it would read as fresh. A UserError naming the files,
    before the run is written."""
    if previous is None or previous.get("status") == "completed":
        return
    changed = code_status(recorded_files(previous)).stale
    if changed:
        raise UserError(f"run {previous.get('run_id')} is unfinished and its last attempt ran code that has changed "
                        f"since ({', '.join(changed)}): resuming would train one run with two versions of the code; "
                        f"put that code back to resume it, or {force_hint('trains it afresh with this code')}")


def _damaged_checkpoint(path: Path) -> str | None:
    """Why a supervised checkpoint does not load, or None."""
    from harness.runners.supervised import load_checkpoint

    try:
        load_checkpoint(path)
    except Exception as exc:  # truncated or foreign file: torch raises several kinds
        return f"{type(exc).__name__}"
    return None


def _set_aside_damaged(run: Run, composed: Composed) -> bool:
    """Set aside (rename, never delete) the files of an unfinished run that cannot be used, one line each; returns
    whether a supervised run must train from the start: its curves (``metrics.csv``) or its best checkpoint are
    damaged, and neither can be rebuilt by resuming from a later checkpoint. Its intact checkpoints are then
    kept as ``*.unused-<time>``. An RL run resumes from its checkpoint with the curve restarting (RL runs are
    not reproducible anyway). A damaged ``last.ckpt`` is the runner's to handle: it resumes from ``best.ckpt``."""
    restart = False
    problem = curve_damage(run.metrics_path)
    if problem:
        aside = run.set_aside(run.metrics_path)
        then = "training from the start" if composed.kind == "supervised" else "the curve restarts"
        print(f"{run.path}: metrics.csv is damaged ({problem}); kept as {aside.name}; {then}", flush=True)
        restart = composed.kind == "supervised"
    if composed.kind == "supervised" and composed.cfg.protocol.name == "single" and run.best_checkpoint.exists():
        problem = _damaged_checkpoint(run.best_checkpoint)
        if problem:
            aside = run.set_aside(run.best_checkpoint)
            print(f"{run.path}: checkpoints/best.ckpt is damaged ({problem}); kept as {aside.name}; training from "
                  "the start (a resumed run cannot rebuild its best checkpoint)", flush=True)
            restart = True
    if restart:
        for path in (run.last_checkpoint, run.best_checkpoint):
            if path.exists():
                run.set_aside(path, "unused")
    return restart


def _existing(run: Run, force: bool, composed: Composed) -> dict[str, Any] | None:
    """The results of the run to resume, None for a new one; damaged files are set aside, never deleted (also
    with ``force``, which otherwise clears the run)."""
    if force and run.path.exists():
        if run.exists() and run.damage():
            run.set_aside(run.results_path)
        if curve_damage(run.metrics_path):
            run.set_aside(run.metrics_path)
        for path in (run.last_checkpoint, run.best_checkpoint):
            if composed.kind == "supervised" and path.exists() and _damaged_checkpoint(path):
                run.set_aside(path)
        keep_offline_wandb(run)
        kept = run.clear(KEPT)
        if kept:
            print(f"{run.path}: starting afresh; kept {len(kept)} damaged file(s) ({', '.join(p.name for p in kept)})",
                  flush=True)
    if not run.path.exists():
        return None
    restart = _set_aside_damaged(run, composed)
    if not run.exists():
        return None
    problem = run.damage()
    if problem:
        aside = run.set_aside(run.results_path)
        then = ("resuming from the run's checkpoints" if has_checkpoint(run) and not restart else
                "training from the start")
        print(f"{run.path}: {problem}; kept as {aside.name}; {then}; {force_hint('starts afresh')}", flush=True)
        return None
    return run.read_results()


def keep_offline_wandb(run: Run) -> Path | None:
    """``--force`` starts a run afresh; the W&B runs its earlier attempts wrote offline (``<run>/wandb/
    offline-run-*``, perhaps never uploaded) are moved out of it first, not deleted: to a hidden folder beside the
    run (``.<run id>.wandb-<time>``), where ``make sync`` still finds them. Returns that folder, or None."""
    wandb_dir = run.path / "wandb"
    offline = sorted(wandb_dir.glob("offline-run-*"))
    if not offline:
        return None
    target = free_name(run.path.parent / f".{run.path.name}.wandb-{time.strftime('%Y%m%dT%H%M%S')}")
    wandb_dir.rename(target)
    print(f"{run.path}: starting afresh; its {len(offline)} offline W&B run(s) are kept in {target} "
          "(make sync uploads them)", flush=True)
    return target


def already_completed(run: Run, composed: Composed, force: bool, complete: bool = True) -> bool:
    """True (after printing its summary) when the run completed and ``force`` is off; a run that another live
    process owns is a UserError. ``complete``: write the predictions a kill kept it from writing
    (:func:`complete_predictions`); off where this process holds the run's folder (:func:`claim_run`), which the
    writing would need: the line then says how to write them."""
    if run.owner_alive():
        owner = run.read_results()["owner"]
        raise UserError(f"run {composed.run_id} is in progress (pid {owner['pid']}); wait for it or stop it")
    if not force and run.exists() and run.status == "completed":
        results = run.read_results()
        changed = run_code_status(results).stale
        stale = (f", but stale: the code that computed it has changed since ({', '.join(changed)})" if changed else
                 "")
        print(f"already completed{stale}; {force_hint('retrains it')}:")
        print(_summary_line(run, results))
        restore_config(run, composed)
        if complete:
            complete_predictions(run, composed)
        elif _predictions_missing(run, composed):
            print(f"its predictions are missing (the run was stopped before it wrote them): `harness predict "
                  f"{run.path.name}` writes them from its checkpoint", flush=True)
        return True
    return False


def complete_predictions(run: Run, composed: Composed) -> None:
    """Write the predictions of a completed supervised single run that lacks them (a kill landed between its
    completion and their writing) from its checkpoint, as ``harness predict`` does, so that the command that
    trained it, run again, leaves nothing missing. A read-only store, a run another process holds or a failed
    write get one line with the ``harness predict`` command instead: the run itself stands either way."""
    if not _predictions_missing(run, composed):
        return
    hint = f"`harness predict {run.path.name}` writes them from its checkpoint"
    if not os.access(run.path, os.W_OK):
        print(f"{run.path.name}: its predictions are missing (the run was stopped before it wrote them) and the "
              f"store is read-only here; {hint}", flush=True)
        return
    print(f"{run.path.name}: its predictions are missing (the run was stopped before it wrote them); writing them "
          "from its checkpoint", flush=True)
    from harness.runners.predictions import predict_run

    try:
        predict_run(str(run.path))
    except Exception as exc:  # noqa: BLE001  the predictions describe the run; the run itself stands
        print(f"predictions not written ({type(exc).__name__}: {exc}); {hint}", flush=True)


def restore_config(run: Run, composed: Composed) -> None:
    """Write a completed run's ``config.yaml`` again when it is missing or damaged (retest, predict and publish need
    it), from the command's config: the run id hashes the whole resolved config, so it is the one the run trained
    with. A damaged file is set aside first (renamed, never deleted); one line says what was done."""
    from harness.runners.retest import read_config

    problem = read_config(run.config_path)[1]
    if problem is None:
        return
    try:
        aside = run.set_aside(run.config_path) if run.config_path.exists() else None
        config_lib.save(composed.cfg, run.config_path)
    except OSError as exc:
        print(f"{problem}; it could not be written again ({exc.strerror or type(exc).__name__})", flush=True)
        return
    kept = f"; the damaged one is kept as {aside.name}" if aside else ""
    print(f"{problem}: written again from this command's config (the run id hashes it){kept}", flush=True)


def has_checkpoint(run: Run) -> bool:
    """Whether the run has a checkpoint its runner resumes from: ``last.ckpt`` or ``best.ckpt`` (supervised and
    stepwise runs), ``algorithm`` (RL runs), a curriculum's stage."""
    own = (run.last_checkpoint, run.best_checkpoint, *(run.checkpoint_dir / name for name in ("algorithm",
                                                                                            "algorithm.old")))
    stages = run.path / "stages"
    return any(path.exists() for path in own) or any(stages.glob("*/checkpoints/*.ckpt"))


def start_word(run: Run, results: dict[str, Any]) -> str:
    """How the run's header says it starts: ``resuming`` from a checkpoint (also after a damaged results.json was
    set aside), ``starting again`` when an earlier attempt stopped before its first checkpoint, else ``new``."""
    if has_checkpoint(run):
        return "resuming"
    return "starting again: no checkpoint was saved" if attempt_count(results) > 1 else "new"


def _predictions_missing(run: Run, composed: Composed) -> bool:
    """Whether a completed supervised single run lacks the predictions the launcher writes after it completes."""
    if composed.kind != "supervised" or composed.cfg.protocol.name != "single":
        return False
    return predictions_may_be_missing(run)


def predictions_may_be_missing(run: Run) -> bool:
    """Whether the run's folder lacks whole predictions (:mod:`harness.runners.predictions`' table and summary);
    whether it should have them, its config says (:func:`_predictions_missing`)."""
    from harness.runners.predictions import FOLDER, SUMMARY, TABLE

    folder = run.path / FOLDER
    return not ((folder / TABLE).is_file() and (folder / SUMMARY).is_file())


def refuse_stack_member(run: Run, composed: Composed, force: bool) -> None:
    """An unfinished member of a stack (``--seeds``) resumes with its stack's command only: the solo runner cannot
    read the stacked trainer's checkpoints. A UserError naming that command, before anything is written."""
    if force or not run.exists() or run.damage():
        return
    results = run.read_results()
    stack = results.get("stack")
    if results.get("status") == "completed" or not (isinstance(stack, list) or _stacked_checkpoint(run)):
        return
    seeds = _stack_seeds(run, stack if isinstance(stack, list) else [])
    seeds = seeds or [int(composed.cfg.seed)]
    raise UserError(f"run {composed.run_id} is an unfinished member of a stack ({len(seeds)} seeds): its checkpoint "
                    f"is the stacked trainer's, which this command cannot resume; resume it with the command that "
                    f"started it, --seeds {','.join(map(str, seeds))} in place of --seed {composed.cfg.seed} "
                    "(or --force to retrain this seed alone from scratch)")


def _stacked_checkpoint(run: Run) -> bool:
    """Whether a checkpoint of the run was written by the stacked trainer (read only: nothing is set aside)."""
    from harness.runners.supervised import load_checkpoint

    for path in (run.last_checkpoint, run.best_checkpoint):
        if not path.exists():
            continue
        try:
            harness_state = load_checkpoint(path).get("harness")
        except Exception:  # noqa: BLE001  a damaged checkpoint: the resume deals with it
            continue
        return isinstance(harness_state, dict) and "stacked" in harness_state
    return False


def _stack_seeds(run: Run, stack: list[Any]) -> list[int]:
    """The seeds of a stack's members (their run ids, beside ``run``), in the stack's order."""
    seeds = []
    for member in stack:
        sibling = Run(run.path.parent / str(member))
        try:
            seeds.append(int(sibling.read_results()["seed"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return seeds


def remove_leftover_temporaries(run: Run) -> None:
    """Delete what killed atomic writes left in the run (``.NAME.XXXXXXXX.tmp``), with one line saying so."""
    removed = run.remove_leftover_temporaries()
    if removed:
        print(f"{run.path}: removed {len(removed)} temporary file(s) left by a killed write "
              f"({', '.join(sorted(p.name for p in removed))})", flush=True)


def record_progress(run: Run, results: dict[str, Any], kind: str = "supervised") -> None:
    """For an unfinished supervised or stepwise attempt: the step and epochs its curve (``metrics.csv``) reached,
    as a completed run records them, in ``steps``/``epochs`` and in the attempt's record. Supervised: the last
    epoch row (epochs counted from 1); stepwise: the last validation row, written with the checkpoint the run
    resumes from (its epochs are the validations done; the curve is flushed only then, so its last training row may
    lie behind that checkpoint, and a resume drops any row after it)."""
    if results.get("status") == "completed" or not run.metrics_path.exists() or curve_damage(run.metrics_path):
        return
    marker = "train/examples_per_s" if kind == "supervised" else "val/acc"
    rows = [row for row in CurveWriter(run.metrics_path).rows if marker in row]
    if not rows:
        return
    epochs = int(rows[-1]["epoch"]) + (1 if kind == "supervised" else 0)
    reached = {"steps": int(rows[-1]["step"]), "epochs": epochs}
    results.update(reached)
    attempts = results.get("attempts")
    if isinstance(attempts, list) and attempts and isinstance(attempts[-1], dict):
        attempts[-1].update(reached)


def diverged_advice(run: Run, composed: Composed) -> str:
    """What a diverged run's owner can do, truthfully: the same command resumes from the last checkpoint (or the
    start) and, runs being deterministic, repeats the steps that diverged; a changed setting is a new run."""
    checkpoint = next((path for path in (run.last_checkpoint, run.best_checkpoint, run.checkpoint_dir / "algorithm")
                       if path.exists()), None)
    where = (f"resumes from its last checkpoint ({checkpoint.relative_to(run.path)})" if checkpoint else
             "starts it again from the first step (no checkpoint was written before the loss turned non-finite)")
    if composed.kind == "rl":  # RLlib samples asynchronously: a resumed RL run does not replay its steps
        return (f"The same command {where} and may diverge again; a change of setting (e.g. a smaller learning "
                "rate, optim.lr) makes a new run, the usual cure.")
    return (f"The same command {where} and repeats the same steps (runs are deterministic), so it diverges again, "
            "as does --force; a change of setting (e.g. a smaller learning rate, optim.lr) makes a new run that "
            "can get past it.")


def open_tracker(run: Run, composed: Composed) -> Tracker:
    """The run's W&B mirror (a no-op when W&B is disabled)."""
    cfg = composed.cfg
    return Tracker(run.path, composed.run_id, OmegaConf.to_container(cfg, resolve=True),  # type: ignore[arg-type]
                   project=cfg.tracking.project,
                   group=cfg.tracking.group or f"{cfg.task.name}-{cfg.model.name}",
                   tags=[f"task:{cfg.task.name}", f"model:{cfg.model.name}", f"profile:{cfg.profile}",
                         f"seed:{cfg.seed}", *cfg.tracking.tags])


WAIT_FOR_RUN = "HARNESS_WAIT_FOR_RUN"  # 1: a run folder another process holds is waited for, not refused
_CLAIMS: list[int] = []  # the run folders this process holds (an open descriptor each, flock-ed)


def claim_run(run: Run, composed: Composed, force: bool) -> bool:
    """Take the run's folder for this process before anything is written into it: an exclusive ``flock`` on the
    folder itself, which the kernel lets go when the process ends, however it ends. The owner check of
    :func:`already_completed` reads ``results.json``, written only once the data is loaded and the model built, so
    two commands of one config started seconds apart both passed it and trained into one folder; the second now
    stops in one line. A sweep's trial (``$HARNESS_WAIT_FOR_RUN`` set to 1 by :mod:`harness.runners.tune`) waits
    instead: a sweep that samples (``choice``, ``randint``) may draw one config twice, and the second trial then
    reports the run the first trained. True (its summary printed) when the run completed while this command built
    it or waited. A file system without locks (some network ones) is trained into as before."""
    run.path.mkdir(parents=True, exist_ok=True)
    handle = os.open(run.path, os.O_RDONLY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        if os.environ.get(WAIT_FOR_RUN) != "1":
            os.close(handle)
            raise UserError(f"run {composed.run_id} is being trained by another process (the same config, started "
                            "moments before), or retested or predicted; wait for it or stop it") from None
        print(f"run {composed.run_id} is being trained by another trial (the sweep drew its config twice); "
              "waiting for it", flush=True)
        fcntl.flock(handle, fcntl.LOCK_EX)
        _CLAIMS.append(handle)
    except OSError:  # no locks here
        os.close(handle)
    else:
        _CLAIMS.append(handle)
    return already_completed(run, composed, force, complete=False)


def release_claims() -> None:
    """Let go of the run folders this process holds (a process may train one run after another: tests, sweeps)."""
    while _CLAIMS:
        os.close(_CLAIMS.pop())


def launch(composed: Composed, force: bool = False, runs_dir: Path | None = None) -> int:
    """Run (or resume, or report) one composed configuration; returns the process exit code."""
    try:
        return _launch(composed, force, runs_dir)
    finally:
        release_claims()


def _launch(composed: Composed, force: bool, runs_dir: Path | None) -> int:
    cfg = composed.cfg
    if composed.task.kind not in ("supervised", "rl", "stepwise"):
        raise UserError(f"task kind '{composed.task.kind}' has no runner yet")
    prepared = prepare_checked(composed)
    run = run_dir(cfg.task.name, cfg.model.name, composed.run_id, runs_dir)
    if already_completed(run, composed, force):  # before the store must be writable: reported from a read-only one
        return 0
    check_writable_folder(runs_dir or default_runs_dir(), "runs folder")
    if composed.kind == "supervised":
        refuse_stack_member(run, composed, force)
    build_and_check(composed, prepared)
    if composed.kind == "rl":
        check_ray_address(cfg)
    mode = configure_environment()  # a WANDB_MODE W&B refuses is refused before the run's folder exists
    if claim_run(run, composed, force):  # completed meanwhile, by the command that held it
        return 0
    previous = _existing(run, force, composed)
    refuse_mixed_code(composed, previous)

    results = _start(run, composed, prepared, previous)
    remove_leftover_temporaries(run)  # after _start: a killed write's temporary dates its attempt's last write
    previous_wall = float(results.get("wall_time_s") or 0.0)
    started = time.perf_counter()
    print(f"run {composed.run_id} ({start_word(run, results)}; W&B {mode})", flush=True)
    tracker = open_tracker(run, composed)
    exit_code = 1
    deferred: list[int] = []
    with terminate_as_interrupt():
        try:
            summary = _train(cfg, composed, prepared, run, tracker, results)
            results.update(summary, status="completed")
            exit_code = 0
        except DivergedError as exc:
            results.update(status="diverged", error=str(exc))
            print(f"diverged: {exc}. {diverged_advice(run, composed)}", file=sys.stderr, flush=True)
        except UserError as exc:
            results.update(status="failed", error=str(exc))
            raise
        except (KeyboardInterrupt, SystemExit):  # Ctrl-C, SIGTERM; Lightning turns Ctrl-C into sys.exit(1)
            results.update(status="interrupted", error="interrupted (the same command resumes the run)")
            raise KeyboardInterrupt from None
        except BrokenPipeError:  # `harness bench ... | head -3`: the reader went away; stopped as by Ctrl-C
            results.update(status="interrupted", error="interrupted: the reader of its output went away (the same "
                                                       "command resumes the run)")
            raise
        except Exception as exc:
            results.update(status="failed", error=f"{type(exc).__name__}: {exc}")
            raise
        finally:
            with signals_deferred() as deferred:  # a second Ctrl-C waits until the final status is stored
                if composed.kind == "stepwise" or (composed.kind == "supervised" and cfg.protocol.name == "single"):
                    record_progress(run, results, composed.kind)
                _finish(run, results, previous_wall + time.perf_counter() - started)
            try:
                tracker.summary(results.get("metrics") or {})
                tracker.finish(exit_code)
            except KeyboardInterrupt:
                if results.get("status") != "completed":
                    raise
                deferred.append(signal.SIGINT)  # the run is stored as completed: reported below
    late = bool(deferred)  # Ctrl-C while the run was being stored as finished
    if not late:
        try:
            print(_summary_line(run, results), flush=True)
            if exit_code == 0 and prepared.loaded is not None and cfg.protocol.name == "single":
                from harness.runners.predictions import write_after_run

                write_after_run(run, composed, prepared.loaded)
        except KeyboardInterrupt:  # while its summary or predictions were written
            late = True
    if late:  # a completed run stands and the command stops here; any other run is interrupted as usual
        if results.get("status") != "completed":
            raise KeyboardInterrupt
        print(interrupted_after_completion(run, composed), file=sys.stderr, flush=True)
        return INTERRUPTED
    return exit_code


def interrupted_after_completion(run: Run, composed: Composed) -> str:
    """The line for a Ctrl-C that landed after the run was stored as completed (while its summary or predictions
    were written): what stands, and what, if anything, is missing."""
    missing = (f"; its predictions were not written: the same command writes them (or `harness predict "
               f"{run.path.name}`)" if _predictions_missing(run, composed) else "")
    return (f"interrupted after run {composed.run_id} completed: it is stored as completed (the same command "
            f"reports it){missing}")


def runner_modules(composed: Composed) -> list[str]:
    """The runner modules a run of ``composed``'s kind imports to train (:func:`_train`)."""
    if composed.kind == "stepwise":
        return ["harness.runners.stepwise", "harness.runners.stepwise_device"]
    modules = ["harness.runners.supervised"]  # harness.runners.build.train imports it for every kind
    if composed.kind == "rl":
        modules.append("harness.runners.rl")
    elif composed.cfg.protocol.name == "curriculum":
        modules.append("harness.runners.curriculum")
    return modules


def snapshot_run_code(composed: Composed) -> dict[str, str]:
    """Import the run's runners, then digest every project file loaded (:func:`harness.provenance.snapshot_code`):
    the run records the code it loaded, also when a file is edited while it trains. Returns the digests."""
    for module in runner_modules(composed):
        importlib.import_module(module)
    return snapshot_code()


def _train(cfg: Any, composed: Composed, prepared: Prepared, run: Run, tracker: Tracker,
           results: dict[str, Any]) -> dict[str, Any]:
    """The runner of the run's kind: stepwise here (its runner is all of its computing; the model on the GPU when
    there is one, :mod:`harness.runners.stepwise_device`), the others through :func:`harness.runners.build.train`."""
    snapshot_run_code(composed)
    if composed.kind != "stepwise":
        return train(cfg, composed, prepared, run, tracker, results)
    from harness.runners.build import _device_description
    from harness.runners.stepwise import train_stepwise
    from harness.runners.stepwise_device import on_accelerator

    results.update(device=_device_description(), data_source=prepared.data.get("source"))
    run.write_results(results)
    return train_stepwise(cfg, prepared.task, on_accelerator(prepared.model), run, tracker)


def _finish(run: Run, results: dict[str, Any], wall_time_s: float) -> None:
    """Close the attempt: its status, the code that ran (see harness.provenance), the times; then write. A project
    file edited on disk while the run trained is named: the run records the code it loaded, not the edit."""
    files = code_files()
    edited = edited_since_loaded(files)
    if edited:
        print(f"{', '.join(edited)} changed on disk while the run trained: it records the code it loaded, so it reads "
              "as stale against the edit (`harness runs --stale`)", file=sys.stderr, flush=True)
    code = {"fingerprint": fingerprint(files), "files": files}
    finished = now_iso()
    results.update(wall_time_s=wall_time_s, finished_at=finished, code=code)
    attempts = results.get("attempts")
    if isinstance(attempts, list) and attempts:
        attempts[-1].update(finished_at=finished, status=results.get("status"), error=results.get("error"),
                            code=code["fingerprint"])
    run.write_results(results)
