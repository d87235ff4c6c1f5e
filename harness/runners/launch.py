"""The life of one run: find or create its directory, resume or skip it, train, and store the outcome.

* Everything a user can get wrong is checked before the run directory exists: the config
  (:mod:`harness.runners.run_checks`), the data (the task loads it), the model (built once from the config,
  :mod:`harness.runners.build_checks`) or, for RL, the environment and the agent; the building itself, which decides
  the run's numbers, lives in :mod:`harness.runners.build`.
* A completed run is reported, not retrained (``force=True`` retrains from scratch, whatever state the
  directory is in), also from a read-only store; a missing or damaged ``config.yaml`` of it is written again from
  the command's config, which its run id hashes. What is done with a run folder that already exists is
  :mod:`harness.runners.existing_run`'s.
* An unfinished run (``running`` after a kill, ``interrupted``, ``failed``, ``diverged``) resumes from its
  last intact checkpoint. A damaged ``results.json`` is set aside (renamed, never deleted) and the run
  resumes from its checkpoints; the runners do the same with a damaged checkpoint.
* SIGTERM is handled like Ctrl-C: the run is stored as ``interrupted`` and the same command resumes it; so is
  SIGHUP (its terminal closed; unless ``nohup`` ignores it), or a write to a terminal that has hung up before its
  SIGHUP came. While the final status is written, Ctrl-C, SIGTERM and SIGHUP wait (:mod:`harness.runners.signals`;
  ``harness/runners/stacked.py`` still imports ``signals_deferred`` from this module, as it did when the stacked
  reference runs recorded its digest), so a second Ctrl-C cannot leave ``running`` behind; an unfinished attempt
  records the step and epoch its curve reached. A Ctrl-C that lands once the run is stored as completed (while its
  summary or predictions are written) ends the command with code 130, as any Ctrl-C, and a line saying that the run
  completed and what, if anything, is missing.
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
    edited_since_loaded,
    fingerprint,
    snapshot_code,
)
from harness.runners.build import Prepared, train
from harness.runners.build_checks import build_and_check, prepare_checked
from harness.runners.existing_run import (
    _existing,
    _predictions_missing,
    _summary_line,
    already_completed,
    refuse_mixed_code,
    refuse_stack_member,
    remove_leftover_temporaries,
    start_word,
)
from harness.runners.killed_attempts import close_killed_attempts
from harness.runners.run_checks import check_ray_address
from harness.runners.signals import (
    TERMINAL_WENT_AWAY,
    signals_deferred,
    terminal_outputs,
    terminal_went_away,
    terminate_as_interrupt,
)
from harness.runs import (
    CurveWriter,
    Run,
    curve_damage,
    default_runs_dir,
    new_results,
    now_iso,
    owner_record,
    run_dir,
)
from harness.tracking import Tracker, configure_environment

PROTOCOLS = ("single", "curriculum")


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
    killed leaves its code on record, which :func:`harness.runners.existing_run.refuse_mixed_code` compares with the
    code that would resume it."""
    files = snapshot_run_code(composed)
    results["code"] = {"fingerprint": fingerprint(files), "files": files}
    attempts = results.get("attempts")
    if isinstance(attempts, list) and attempts and isinstance(attempts[-1], dict):
        attempts[-1]["code"] = results["code"]["fingerprint"]


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
    """Take the run's folder for this process before anything is written into it: an exclusive ``flock`` on the folder
    itself, which the kernel lets go when the process ends, however it ends. The owner check of
    :func:`harness.runners.existing_run.already_completed` reads ``results.json``, written only once the data is loaded
    and the model built, so two commands of one config started seconds apart both passed it and trained into one folder;
    the second now stops in one line. A sweep's trial (``$HARNESS_WAIT_FOR_RUN`` set to 1 by
    :mod:`harness.runners.tune`) waits instead: a sweep that samples (``choice``, ``randint``) may draw one config
    twice, and the second trial then reports the run the first trained. True (its summary printed) when the run
    completed while this command built it or waited. A file system without locks (some network ones) is trained into as
    before."""
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
    terminals = terminal_outputs()  # those that hang up are silenced as the run stops
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
            if terminal_went_away(exc, terminals):  # a write failed (EIO) before a SIGHUP came: stopped as by Ctrl-C
                results.update(status="interrupted", error=TERMINAL_WENT_AWAY)
                raise KeyboardInterrupt from None
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
            with terminate_as_interrupt():  # a SIGTERM, too, leaves the line below rather than a bare exit code
                print(_summary_line(run, results), flush=True)
                if exit_code == 0 and prepared.loaded is not None and cfg.protocol.name == "single":
                    from harness.runners.predictions import write_after_run

                    write_after_run(run, composed, prepared.loaded)
        except (KeyboardInterrupt, OSError) as exc:  # while its summary or predictions were written
            if isinstance(exc, OSError) and not terminal_went_away(exc, terminals):
                raise
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
