"""What a command does with a run folder that already exists, before it trains into it: a completed run is reported,
not retrained (its missing ``config.yaml`` or predictions written again, :func:`already_completed`); an unfinished
one is resumed from its record, with its damaged files set aside, never deleted (:func:`_existing`), unless it is a
stack member's (:func:`refuse_stack_member`) or its last attempt ran code that has changed since
(:func:`refuse_mixed_code`); ``--force`` clears it, keeping its damaged files and offline W&B runs. The life of the
run itself is :mod:`harness.runners.launch`'s."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from harness import config as config_lib
from harness.config import Composed
from harness.errors import UserError
from harness.provenance import code_status, recorded_files, run_code_status
from harness.runs import KEPT, Run, attempt_count, curve_damage, free_name


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
    (:func:`complete_predictions`); off where this process holds the run's folder
    (:func:`harness.runners.launch.claim_run`), which the writing would need: the line then says how to write them."""
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
    from harness.config import read_config

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
    algorithm = (run.checkpoint_dir / name for name in ("algorithm", "algorithm.old"))
    return (run.has_epoch_checkpoint or any(path.exists() for path in algorithm)
            or any((run.path / "stages").glob("*/checkpoints/*.ckpt")))


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
