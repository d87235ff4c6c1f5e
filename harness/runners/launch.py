"""The life of one run: find or create its directory, resume or skip it, train, and store the outcome.

* Everything a user can get wrong is checked before the run directory exists: the config, the data (the
  task loads it), the model (built once from the config) or, for RL, the environment and the agent; the
  building itself, which decides the run's numbers, lives in :mod:`harness.runners.build`.
* A completed run is reported, not retrained (``force=True`` retrains from scratch, whatever state the
  directory is in), also from a read-only store; a missing or damaged ``config.yaml`` of it is written again from
  the command's config, which its run id hashes (:func:`restore_config`).
* An unfinished run (``running`` after a kill, ``interrupted``, ``failed``, ``diverged``) resumes from its
  last intact checkpoint. A damaged ``results.json`` is set aside (renamed, never deleted) and the run
  resumes from its checkpoints; the runners do the same with a damaged checkpoint.
* SIGTERM is handled like Ctrl-C: the run is stored as ``interrupted`` and the same command resumes it. While the
  final status is written, Ctrl-C and SIGTERM wait (:func:`signals_deferred`), so a second Ctrl-C cannot leave
  ``running`` behind; an unfinished attempt records the step and epoch its curve reached. A Ctrl-C that lands once
  the run is stored as completed (while its summary or predictions are written) ends the command with code 130, as
  any Ctrl-C, and a line saying that the run completed and what, if anything, is missing.
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
import re
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError

from harness import config as config_lib
from harness.config import Composed
from harness.errors import INTERRUPTED, DivergedError, UserError
from harness.interfaces import check_task_data, named_splits
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
from harness.registry import load_entry
from harness.runners.build import Prepared, build_before_start, prepare_task, train
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
from harness.vector_math import warm_vector_math

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


def check_run_config(composed: Composed) -> None:
    """Settings that depend on each other, checked before anything is loaded or written."""
    cfg = composed.cfg
    check_betas(cfg)
    check_time_cap(cfg, TIME_CAPS[composed.task.kind])
    if composed.task.kind == "rl":
        from harness.runners.rl import check_rl_config

        check_rl_config(cfg)
        check_ppo_minibatch(cfg)
        return
    if composed.task.kind == "stepwise":
        if not cfg.stepwise.horizons:
            raise UserError("stepwise.horizons is empty; give at least one rollout length, e.g. [10, 100]")
        if cfg.stepwise.curriculum.enabled and cfg.stepwise.curriculum.start > cfg.stepwise.steps:
            raise UserError(f"stepwise.curriculum.start ({cfg.stepwise.curriculum.start}) is longer than "
                            f"stepwise.steps ({cfg.stepwise.steps}), the length it grows to")
        check_first_recall_step(cfg)
        check_update_freq(cfg)
        return
    if cfg.protocol.name == "curriculum":
        from harness.runners.curriculum import check_protocol_config

        check_protocol_config(cfg)
    else:
        unread = [f"protocol.{key}" for key in ("target", "pretrain") if cfg.protocol.get(key)]
        if unread:
            raise UserError(f"{' and '.join(unread)} {'is' if len(unread) == 1 else 'are'} read by "
                            f"protocol.name=curriculum only, and this run's protocol is {cfg.protocol.name}: add "
                            "protocol.name=curriculum, or name the tasks to train on with task.tasks")
    check_protocol_tasks(composed)
    check_monitor_mode(cfg)


TIME_CAPS = {"supervised": "train.max_time_s", "stepwise": "stepwise.max_time_s", "rl": "rl.max_time_s"}


def check_time_cap(cfg: Any, key: str) -> None:
    """A time cap of 0 seconds is refused: the supervised runners read it as no cap (and trained to the end), the
    RL and stepwise runners as one already reached; null is the way to turn the cap off."""
    cap = OmegaConf.select(cfg, key)
    if cap is not None and float(cap) == 0:
        raise UserError(f"{key}=0 is a cap of no time at all: give the seconds training may take, or {key}=null "
                        "for no cap")


MONITOR_MODES = {"val/acc": "max", "val/loss": "min"}  # the way each monitored metric improves (train.monitor)


def check_monitor_mode(cfg: Any) -> None:
    """``train.monitor_mode`` agrees with ``train.monitor``: ``train.monitor=val/loss`` under the default mode
    (max) kept the checkpoint of the highest validation loss and stopped early once the loss fell for a while."""
    monitor, mode = str(cfg.train.monitor), str(cfg.train.monitor_mode)
    wanted = MONITOR_MODES.get(monitor)
    if wanted is not None and mode != wanted:
        raise UserError(f"train.monitor={monitor} improves as it {'falls' if wanted == 'min' else 'rises'}, but "
                        f"train.monitor_mode is {mode}: the best checkpoint would be the worst; add "
                        f"train.monitor_mode={wanted}")


BETA_OPTIMISERS = ("adam", "adamw", "tf1_nadam")  # harness/optim.py: the optimisers that read ``betas``


def check_betas(cfg: Any) -> None:
    """The schema keeps each of ``optim.betas`` (``rl.optim.betas``) in [0, 1]; a beta of 1, which an optimiser that
    reads them refuses with a ValueError once training has started (a moment average that never leaves its
    start), is refused here, naming the key."""
    for section in ("optim", "rl.optim"):
        optim = OmegaConf.select(cfg, section)
        if optim is None or optim.get("name") not in BETA_OPTIMISERS or optim.get("betas") is None:
            continue
        if any(float(beta) >= 1 for beta in optim.betas):
            raise UserError(f"bad value for '{section}.betas': {list(optim.betas)}; {optim.name} needs each beta "
                            "below 1 (e.g. [0.9, 0.999])")


def check_first_recall_step(cfg: Any) -> None:
    """LSTM recall's ``task.first_recall_step`` (no recall or reminder noise before it; the forced recall at
    ``task.length`` excepted) past every step the run trains and tests on (``stepwise.steps``,
    ``stepwise.eval_steps``) changes nothing but the long rollouts: no trajectory would recall but the forced
    recall, where it is reached. A mistake the task's own checks (its frozen code) do not catch, refused here in
    one line."""
    first = OmegaConf.select(cfg, "task.first_recall_step")
    length = OmegaConf.select(cfg, "task.length")
    if first is None or length is None:
        return
    last = max(int(cfg.stepwise.steps), int(cfg.stepwise.eval_steps or cfg.stepwise.steps))
    if int(first) > last:
        asked = (f"only the forced recall at step {length} would be asked" if int(length) <= last else
                 f"no recall would be asked at all (the forced one, at step {length}, is past them too)")
        raise UserError(f"task.first_recall_step ({first}) is past the last step the run trains and tests on "
                        f"(stepwise.steps and eval_steps: {last}): {asked}; give at most {last}")


def check_update_freq(cfg: Any) -> None:
    """``stepwise.update_freq`` where it would change nothing but the run id: full BPTT takes one optimiser step a
    trajectory whatever it says, and a trajectory never longer than ``stepwise.steps`` steps at its end anyway."""
    freq, steps = int(cfg.stepwise.update_freq), int(cfg.stepwise.steps)
    if cfg.stepwise.bptt and freq != 1:
        raise UserError(f"stepwise.update_freq ({freq}) is read without stepwise.bptt only: full backpropagation "
                        "takes one optimiser step a trajectory; leave update_freq at 1")
    if freq > steps:
        raise UserError(f"stepwise.update_freq ({freq}) is longer than stepwise.steps ({steps}): every trajectory "
                        f"would take its one optimiser step at its end, as update_freq={steps} does")


def check_ppo_minibatch(cfg: Any) -> None:
    """PPO splits each training batch into minibatches of ``rl.ppo.minibatch_size``; one larger than the batch
    (``rl.train_batch_size``, e.g. 200 at CartPole's ``smoke`` profile against the default 256) stops RLlib with a
    ``ValueError`` once Ray has started, so it is refused here."""
    rl = cfg.rl
    if rl.algorithm != "ppo":
        return
    minibatch, batch = int(rl.ppo.minibatch_size), int(rl.train_batch_size)
    if minibatch > batch:
        raise UserError(f"rl.ppo.minibatch_size ({minibatch}) is larger than rl.train_batch_size ({batch}), the batch "
                        f"PPO splits into minibatches: give e.g. rl.ppo.minibatch_size={max(1, batch // 2)}")


def check_protocol_tasks(composed: Composed) -> None:
    """The lists that name tasks as ``task.tasks`` does: ``task.task_vocabulary`` (when given) and a curriculum's
    ``protocol.pretrain`` and ``protocol.target``. Each item is checked against what the task declares for
    ``task.tasks`` (its choices, no repeats), so a misspelt task is refused before anything trains, naming the
    key it was given in."""
    from harness.schema import check_value, key_type

    cfg = composed.cfg
    if "tasks" not in cfg.task:
        return
    kind = key_type("task.tasks", list(cfg.task.tasks), composed.task.schema.get("task.tasks"))
    if kind is None:
        return
    keys = ["task.task_vocabulary"] if cfg.task.get("task_vocabulary") is not None else []
    if cfg.protocol.name == "curriculum":
        keys += ["protocol.pretrain", "protocol.target"]
    for key in keys:
        check_value(key, list(OmegaConf.select(cfg, key) or []), kind)


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


KILLED = "killed: its process ended before it stored a status"


def close_killed_attempts(run: Run, results: dict[str, Any], attempts: list[Any]) -> None:
    """Mark the earlier attempts a resumed run's record still says are ``running`` as ``interrupted``: their process
    was killed (this one holds the run's folder, so none of them runs it now), and the run page listed them as
    running beside the attempt that completed the run. The last of them, the one the kill ended, is given the time
    from its start to the run's last file write as its end, and that time is added to the run's ``wall_time_s``
    (which a kill left without it: a run killed half way and resumed read as trained in the second half's time);
    the time between that write and the kill is not known, so the figure is a lower bound."""
    for index, attempt in enumerate(attempts):
        if not (isinstance(attempt, dict) and attempt.get("status") == "running"):
            continue
        attempt.update(status="interrupted", error=KILLED)
        lasted = _killed_attempt_seconds(run, attempt) if index == len(attempts) - 1 else None
        if lasted is not None:
            ended = datetime.fromtimestamp(_parsed_time(attempt["started_at"]) + lasted, UTC)
            attempt["finished_at"] = ended.strftime("%Y-%m-%dT%H:%M:%SZ")
            results["wall_time_s"] = float(results.get("wall_time_s") or 0.0) + lasted


def close_killed_run(run: Run, error: str) -> dict[str, Any] | None:
    """Store as ``interrupted`` (with ``error``) a run whose record says ``running`` but whose process on this host
    has ended: a sweep's trial that Tune stopped by ending its Ray worker, which had no chance to store its status.
    Its killed attempt is closed as a resumed run closes it (:func:`close_killed_attempts`), so the same command
    resumes it as before. Done under the folder's lock (:func:`claim_run`), so a command that has claimed the run
    meanwhile is left alone. Returns the results written, or None when the run was left as it was (not running,
    still owned by a live process, claimed by one, damaged, or a store this process cannot write)."""
    from harness.runs import owner_state

    try:
        handle = os.open(run.path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if not run.exists() or run.damage():
            return None
        results = run.read_results()
        if results.get("status") != "running" or owner_state(results) != "gone":
            return None
        attempts = results.get("attempts") if isinstance(results.get("attempts"), list) else []
        close_killed_attempts(run, results, attempts)
        results.update(status="interrupted", error=error)
        run.write_results(results)
        return results
    except OSError:  # held by another process, or a store this process cannot write: left as it was
        return None
    finally:
        os.close(handle)


def _parsed_time(text: Any) -> float:
    """Seconds since the epoch of a record's ``%Y-%m-%dT%H:%M:%SZ`` time (:func:`harness.runs.now_iso`)."""
    return datetime.strptime(str(text), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


def _killed_attempt_seconds(run: Run, attempt: dict[str, Any]) -> float | None:
    """Seconds from a killed attempt's start to the last write of a file in the run's folder (None when its start
    is not recorded or nothing was written after it)."""
    try:
        started = _parsed_time(attempt.get("started_at"))
    except ValueError:
        return None
    written = [path.stat().st_mtime for path in run.path.rglob("*") if path.is_file()]
    last = max(written, default=started)
    return last - started if last > started else None


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


@contextmanager
def signals_deferred() -> Iterator[list[int]]:
    """Inside the block, Ctrl-C (SIGINT) and SIGTERM are held back instead of interrupting it (the block writes a
    run's final status, which a second Ctrl-C must not cut short); the list it yields collects the signals that
    came, for the caller to act on after the block. Only the main thread can own signal handlers; elsewhere
    nothing changes."""
    came: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield came
        return
    held = (signal.SIGINT, signal.SIGTERM)
    previous = {number: signal.getsignal(number) for number in held}

    def handler(signum: int, frame: Any) -> None:
        came.append(signum)

    for number in held:
        signal.signal(number, handler)
    try:
        yield came
    finally:
        for number, before in previous.items():
            signal.signal(number, before)


def check_targets(data: Any, task: str = "") -> None:
    """Every split's labels are among the task's classes (``info["num_classes"]``): a label out of range (a
    malformed data file, or a task whose targets or num_classes are wrong) would otherwise stop the run with a
    traceback, after its directory exists."""
    from harness.data import TARGET

    if "num_classes" not in data.info:
        return
    classes = int(data.info["num_classes"])
    for name, split in named_splits(data).items():
        target = split.tensors[TARGET]  # [N]
        if len(target) and (int(target.min()) < 0 or int(target.max()) >= classes):
            raise UserError(f"{f'task {task}: ' if task else ''}the {name} split has labels {int(target.min())}.."
                            f"{int(target.max())}, outside the task's {classes} classes (0..{classes - 1}, "
                            "info['num_classes']): its data file is malformed, or its load() gives wrong targets "
                            "or num_classes")


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


def prepare_checked(composed: Composed) -> Prepared:
    """A run's settings checked, its task prepared (it checks its own settings and pins its data source) and its
    data files checked: what ``bench`` and ``harness validate`` do first, before the data is loaded."""
    check_run_config(composed)
    warm_vector_math()  # before anything computes: two runs of one config agree bit for bit
    try:
        with refused_when_too_large(composed):  # a task may build tables of its size (Game of Life: its cells)
            prepared = prepare_task(composed)
    except (TypeError, AttributeError) as exc:  # the task's class does not take (cfg) or misreads it
        said = _exception_line(exc)
        raise UserError(f"task {composed.task.name} ({composed.task.entry}) could not be built: {said}; a task is "
                        "built as Task(cfg), cfg the run config (its settings in cfg.task), and its describe_data(), "
                        "if any, returns a dict with source, files and fingerprint (docs/contributing.md)") from None
    for note in prepared.notes:
        print(f"note: {note}", file=sys.stderr, flush=True)
    if composed.task.data_check:
        load_entry(composed.task.data_check)(composed.cfg.task)
    return prepared


def build_and_check(composed: Composed, prepared: Prepared) -> None:
    """Load the data and build the model as the run will (a stepwise run: check its stream too), and check what
    the data holds, so that a bad setting or data file is refused before anything is written; ``harness
    validate`` runs the same checks."""
    with refused_when_too_large(composed):
        build_model(composed, prepared)
    if prepared.loaded is not None:  # supervised single runs
        check_task_data(composed.task.name, composed.task.interface, prepared.loaded)
        check_targets(prepared.loaded, composed.task.name)
        if prepared.model is not None:
            check_model_output(composed, prepared)


@contextmanager
def refused_when_too_large(composed: Composed) -> Iterator[None]:
    """A model (or data) that cannot be allocated is the user's setting, not a crash: one line naming the bytes
    asked for (torch's CPU allocator raises a RuntimeError that says "can't allocate memory")."""
    try:
        yield
    except (MemoryError, RuntimeError) as exc:
        said = str(exc)
        if not isinstance(exc, MemoryError) and "can't allocate memory" not in said:
            raise
        asked = re.search(r"allocate (\d+) bytes", said)
        size = f" ({int(asked.group(1)) / 2**30:,.1f} GiB in one allocation)" if asked else ""
        raise UserError(f"{composed.task.name} x {composed.model.name}: building the model and its data ran out of "
                        f"memory{size}; make its sizes smaller (model.*) or the data (task.*)") from None


def build_model(composed: Composed, prepared: Prepared) -> None:
    """Load the data and build the model (for a stepwise run: its stream model)."""
    if composed.kind == "stepwise":
        from harness.runners.stepwise import build_stepwise

        model_entry = composed.model.interfaces[composed.task.interface]
        prepared.model = build_stepwise(prepared.task, model_entry, composed.cfg, composed.task.name)
    else:
        try:
            build_before_start(composed, prepared)
        except UserError as exc:
            raise _with_pair_file_hint(composed, exc) from None
        except Exception as exc:
            if prepared.loaded is None:
                if composed.kind == "supervised" and isinstance(exc, (ConfigAttributeError, ConfigKeyError)):
                    said = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                    raise UserError(f"task {composed.task.name} ({composed.task.entry}): load() reads a config key "
                                    f"that no file defines: {said}") from None
                raise
            # data that breaks its interface's contract is named as such, not as the error of the reader it broke
            check_task_data(composed.task.name, composed.task.interface, prepared.loaded)
            if isinstance(exc, (TypeError, AttributeError)) and prepared.model is None:
                raise _construction_error(composed, exc) from None
            if not isinstance(exc, KeyError):
                raise
            # a reader looked up a size its task's info does not give
            info = getattr(prepared.loaded, "info", None)
            key = exc.args[0] if exc.args else None
            if not isinstance(info, dict) or not isinstance(key, str) or key in info:
                raise
            entry = composed.model.interfaces[composed.task.interface]
            raise UserError(f"{composed.model.name} ({entry}) needs info['{key}'] from task {composed.task.name}, "
                            f"whose load() gives info keys {', '.join(sorted(info)) or 'none'} "
                            f"({composed.task.entry}; harness/interfaces.py)") from None


def _exception_line(exc: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def _adapted_core(composed: Composed) -> str:
    """The sequence core (``module:Class``) through which the model reads the task's interface, or "" where it
    reads it with a reader of its own."""
    return composed.model.core if composed.task.interface in composed.model.adapted else ""


def _with_pair_file_hint(composed: Composed, exc: UserError) -> UserError:
    """A model setting that does not suit the task (the image adapter's ``model.patch_size`` on Pathfinder's 32x32
    images) says where to set it for this pair alone when the pair has no pair file yet."""
    said = str(exc)
    task, model = composed.task, composed.model
    if not said.startswith(f"{model.name} cannot be built from this config: model.") or task.source is None:
        return exc
    pair = task.source.parent / "pairs" / f"{model.name}.yaml"
    if pair.exists():
        return exc
    others = sorted(pair.parent.glob("*.yaml"))
    like = f", as {config_lib.project_path(others[0])} does" if others else ""
    return UserError(f"{said}; set it for this pair in {config_lib.project_path(pair)} (config: {{model: ...}}{like}) "
                     "or on the command line")


def _construction_error(composed: Composed, exc: Exception) -> UserError:
    """A model (or its sequence core) whose constructor does not take what the harness hands it, reads a config key
    that no file defines (OmegaConf's error is an AttributeError), or lacks an attribute the adapter reads
    (``in_dim``, ``out_dim``): one line naming the class and what it is built from."""
    entry = composed.model.interfaces[composed.task.interface]
    said = _exception_line(exc)
    core = _adapted_core(composed)
    built = (f"it reads {composed.task.interface} through models/adapters.yaml, which builds its core "
             f"({core}) as Core(cfg.model), with int attributes in_dim and out_dim" if core
             else "a supervised reader is built as Class(cfg.model, info)")
    if isinstance(exc, (ConfigAttributeError, ConfigKeyError)):
        where = config_lib.project_path(composed.model.source) if composed.model.source else "its model file"
        built = f"it reads a config key that no file defines (a model's keys are under `model` in {where}); {built}"
    return UserError(f"{composed.model.name} ({entry}) on task {composed.task.name} could not be built: {said}; "
                     f"{built} (docs/contributing.md)")


def check_model_output(composed: Composed, prepared: Prepared) -> None:
    """Two validation examples through the built model, as the runner will call it (``model(**batch)``), before
    anything is written: a forward that fails, returns other than float logits [B, num_classes] or returns NaN is
    one line naming the model's class. No gradient, in eval mode, on a forked RNG and on a copy of the model (a
    model may keep state that its forward passes change: MemN2N's schedule counts an evaluation followed by
    training as an epoch), so the run computes what it would have."""
    import copy

    import torch

    from harness.data import TARGET

    data, model = prepared.loaded, prepared.model
    split = data.val if len(data.val) else data.train
    indices = narrowest_examples(split)
    batch = split.__getitems__(indices)
    inputs = {name: tensor for name, tensor in batch.items() if name != TARGET}
    stored = getattr(split, "tensors", None)
    padded = {name: stored[name][indices] for name in inputs} if isinstance(stored, dict) else inputs
    cut = any(padded[name].shape != tensor.shape for name, tensor in inputs.items())
    entry = composed.model.interfaces[composed.task.interface]
    where = f"{composed.model.name} ({entry}) on task {composed.task.name}"
    call = f"model({', '.join(inputs)})"
    core = _adapted_core(composed)
    through = (f"; it reads {composed.task.interface} through models/adapters.yaml, so check its core "
               f"({core}): core(x [B, T, in_dim], mask [B, T]) -> [B, out_dim] float") if core else ""
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        checked = copy.deepcopy(model).eval()
        try:
            out = checked(**inputs)
        except Exception as exc:  # noqa: BLE001  the model's own error, reported as one line
            said = _exception_line(exc)
            if cut and _runs(checked, padded):
                raise UserError(f"{where}: {call} raised {said} on a batch cut to its longest story, where the padded "
                                f"batch runs: the model reads a fixed number of statements, so it trains on padded "
                                f"batches only ({CUT_BATCHES})") from None
            raise UserError(f"{where}: {call} raised {said}{through}") from None
        if cut and not torch.allclose(out, checked(**padded), rtol=1e-4, atol=1e-5):
            print(f"note: {composed.model.name}'s output on a batch cut to its longest story differs from its output "
                  f"on the padded batch: it reads padding as input, so with cut batches ({CUT_BATCHES}) it sees as "
                  "much as each batch leaves", flush=True)
    classes = data.info.get("num_classes")
    want = [len(next(iter(inputs.values()))), int(classes) if classes is not None else "num_classes"]
    shape = list(out.shape) if isinstance(out, torch.Tensor) else None
    floating = shape is not None and out.is_floating_point()
    if not floating or len(shape) != 2 or shape[0] != want[0] or (classes is not None and shape[1] != want[1]):
        got = (type(out).__name__ if shape is None else f"{list(shape)}" if floating
               else f"{str(out.dtype).removeprefix('torch.')} {list(shape)}")
        raise UserError(f"{where}: {call} returned {got}; a supervised model returns float logits [B, num_classes] "
                        f"= {want} (harness/interfaces.py){through}")
    if bool(torch.isnan(out).any()):
        raise UserError(f"{where}: {call} returned NaN logits on two validation examples, before any training "
                        f"(a division by zero, or a log or sqrt of a non-positive number, in its forward){through}")


CUT_BATCHES = "bAbI's task.trim_batches=true; its all-tasks mode always cuts"


def narrowest_examples(split: Any, count: int = 2, looked_at: int = 64) -> list[int]:
    """``count`` of the first ``looked_at`` examples whose batches, as ``split`` hands them out, hold the fewest
    numbers: the first ``count`` where every example has one shape; where the dataset cuts each batch to its
    content (bAbI's stories), the shortest, whose batch it cuts most."""
    sizes = [(sum(tensor.numel() for tensor in split.__getitems__([index]).values()), index)
             for index in range(min(looked_at, len(split)))]
    return sorted(index for _, index in sorted(sizes)[:count])


def _runs(model: Any, inputs: dict[str, Any]) -> bool:
    """Whether ``model(**inputs)`` returns without raising."""
    try:
        model(**inputs)
    except Exception:  # noqa: BLE001  only whether it runs
        return False
    return True


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


def check_ray_address(cfg: Any) -> None:
    """Where an RL run's Ray comes from, checked before the run directory exists, as any other mistake: the cluster
    ``RAY_ADDRESS`` names must answer and accept the token; a local Ray must have a CPU for each EnvRunner and
    remote learner, and the GPUs ``rl.num_gpus_per_learner`` asks for (RLlib would otherwise wait for them for
    ever, printing nothing). Skipped inside a sweep's trial (Ray is up, and the
    sweep reserved the trial's CPUs)."""
    address = os.environ.get("RAY_ADDRESS")
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        return
    from harness.runners.ray_session import check_cluster, learner_gpus, local_cpus, local_gpus

    if address:
        check_cluster(address)
        return
    runners, learners, cpus = int(cfg.rl.num_env_runners), int(cfg.rl.num_learners), local_cpus(cfg.rl.num_cpus)
    if runners + learners > cpus:
        asked = " and ".join(f"rl.{key}={n}" for key, n in (("num_env_runners", runners), ("num_learners", learners))
                             if n)
        raise UserError(f"{asked} needs a CPU for each EnvRunner and each remote learner ({runners + learners}) but "
                        f"the local Ray has {cpus} (rl.num_cpus, default this machine's CPUs), so the run would wait "
                        f"for ever; lower them (0 runs each in the run's own process) or run it on a cluster "
                        f"(RAY_ADDRESS)")
    asked, gpus = learner_gpus(cfg.rl), local_gpus()
    if asked > gpus:
        raise UserError(f"rl.num_gpus_per_learner={cfg.rl.num_gpus_per_learner} asks for {asked:g} GPU for the "
                        f"learners but this machine has {gpus}, so the run would wait for ever; set "
                        f"rl.num_gpus_per_learner=0 to train the learner on the CPU, or run it on a cluster "
                        f"(RAY_ADDRESS)")


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
