"""Sweeps on Ray Tune: every trial is an ordinary harness run in the run store.

A sweep is one YAML file (``sweeps/<name>.yaml``)::

    name: babi_smoke                 # also the W&B group of every trial
    task: babi
    models: [tpr_rnn, lstm]          # a grid over models
    profile: smoke
    seeds: [0, 1]                    # a grid over seeds
    overrides: [train.max_epochs=1]  # fixed for every trial
    space:                           # searched config keys
      optim.lr: {type: loguniform, low: 1.0e-4, high: 1.0e-2}
      task.babi_id: {type: grid, values: [1, 6]}
    num_samples: 1                   # samples of the random part of the space, per grid point
    stack_seeds: false               # true: the seeds of each trial point train as one stack (one trial)
    stack_grid: []                   # grid keys of the data or optimiser (task.*, optim.*) whose values join that stack
    reuse_processes: false           # true: a trial may run in the process of a finished one (see below)
    cpus_per_trial: 1
    gpus_per_trial: 0                # a share of a GPU per trial (0.25: four trials share one GPU)
    max_concurrent: null             # null: as many trials as the cluster's CPUs allow

A **matrix sweep** names ``tasks`` (a list, or ``all``) instead of ``task``, and ``models`` may be ``all``: its
grid is every (task, model) cell the registry says can run (``harness list``), each a trial per seed;
``sweeps/matrix_smoke.yaml`` runs the whole matrix at the smoke profile. Overrides and space keys must then
be keys every cell has (``seed``-like settings), and an RL cell's trial reserves CPUs for its env runners.
A matrix sweep may also set, per task, fixed overrides and a grid of its own, and cap every cell's training
time (``sweeps/matrix_cpu.yaml``)::

    task_overrides:                  # fixed for every cell of that task
      relations_game: [task.tasks=[between], train.threads=1]
    task_grid:                       # each cell of that task runs once per value
      babi: {task.babi_id: [1, 2]}
    cell_time_cap_s: 600             # train / rl / stepwise.max_time_s: the smaller of this and the profile's

``harness sweep FILE --cells 'babi/*,relations_game/lstm'`` runs only the cells that match, and
``--only task.babi_id=1,8`` (any sweep) only those values of one of its grids: the trials left are the whole
sweep's, with their run ids, so a sweep can be run in parts. ``--only`` repeats: for one key its values add up
(``--only task.babi_id=1 --only task.babi_id=8`` is ``--only task.babi_id=1,8``), for different keys each narrows
its own grid (the trials left match all of them). ``--seeds 0,1,2`` runs those seeds instead of the file's; a
seed's trials have the same run ids whichever seeds run beside it, so adding seeds to a sweep run before trains
only the new ones (the others are read from the store, :func:`split_completed`).

With ``stack_seeds: true`` the seeds of one trial point (same cell, same sampled values) are ONE trial, which
trains them as a stack (:func:`harness.runners.stacked_launch.launch_stack`, ``docs/stacked_runs.md``); each
member is still its own run, with the run id of its unstacked trial, and its own row of the table. A cell that
cannot stack (RL, stepwise, another protocol, ``optim.decay_below_val_loss``, or a model the launcher's ``vmap``
check refuses) runs its seeds one after another in that trial. Local mode only: a cluster sweep refuses it.
``stack_grid`` (with ``stack_seeds``) names grid keys of the space over the task's data or the optimiser, such as
``task.tasks`` or ``optim.lr``: their values join the stack too (a mixed stack, :mod:`harness.runners.stacked_data`
and :mod:`harness.runners.stacked_optim`), so the PrediNet paper's five relations x three seeds of one model are
one trial of fifteen runs (``sweeps/predinet_table1_stacked.yaml``).

With ``reuse_processes: true`` a finished trial's worker process takes the next trial (Tune's
``reuse_actors``), so a trial does not start Python and import torch, Lightning and the harness again (about
10 s on 2 cores, longer than a smoke run trains). Each run still seeds itself, builds its own model and data,
and starts with the torch thread count its process began with. The price is in the runs' provenance: a run
records the project files its process has imported (:func:`harness.provenance.code_files`), which now
includes those of the trials before it in that process. For trials of one task and model these are the same
files; across cells (a matrix sweep) a run may list files it did not use, so ``harness runs --stale`` may call
it stale after a change that could not have moved it (never the other way round). Off by default;
``sweeps/matrix_smoke.yaml``, a test, turns it on.

Space types: ``grid`` / ``choice`` (``values``), ``uniform`` / ``loguniform`` (``low``, ``high``),
``randint`` (``low`` inclusive, ``high`` exclusive). Every mistake in the file or in its space (a missing
field, a bound out of order, a key that is not a config key, a value of the wrong type for its key) is
a one-line UserError before Ray starts: :func:`load_sweep` checks the file, :func:`check_sweep` composes
each model's config with every value the space can take at its ends.

A trial composes its config exactly as ``make bench`` does and calls the same launcher, so its run is
resumable, reported without retraining once completed, and stored as ``failed`` (the other trials go on)
when it raises. A sweep stopped part-way (Ctrl-C, or SIGTERM to the driver, :func:`sigterm_as_ctrl_c`: Ray Tune
catches it and ends the sweep) lists each trial that
had not reported with what the run store holds for it (its run id computed as the trial computes it; a trial that
never started says ``not started``, never failed; a run its stopped worker left saying ``running`` is stored as
``interrupted``, :func:`harness.runners.killed_attempts.close_killed_run`, as an interrupted ``harness bench``
stores its run), says that the same command resumes the sweep (completed runs
are reported, the others resume from their checkpoints) and exits 130, as an interrupted ``harness bench``.
A SIGTERM to the sweep's whole process group (``kill -TERM -PGID``, GNU ``timeout``) ends Ray's own processes too:
the sweep stops without the table, with the same line and exit code, its trials' runs left as a kill leaves them
(resumable); one moment of Ray's start is out of reach (:func:`sigterm_as_ctrl_c`).
A local sweep whose trials can be listed before Tune runs (a grid: :func:`grid_trials`) gives Tune only the
trials whose runs are not completed in the store, and reports the others from the store
(:func:`split_completed`): a sweep finished before is reported without starting Ray, and one that stopped
part-way starts a Ray worker only for what is left (each completed trial used to start one to say ``already
completed``).
A trial whose mistake is caught before its run directory exists (a malformed data file) leaves no run; the
sweep's table still lists it, with its status and the one-line reason. A trial whose process dies (killed outright,
out of memory, crashed) is listed with the run the store holds for it, as interrupted (the same command resumes it),
or as failed when it left no run.

Two modes:

* **local** (no ``RAY_ADDRESS``): a local Ray sized to this machine starts, and every trial writes its run
  into the run store directly, as ``make bench`` does, so a sweep killed mid-run (even ``kill -9``)
  resumes each trial from its last checkpoint when run again.
* **cluster** (``RAY_ADDRESS`` names an existing Ray cluster; :mod:`harness.runners.ray_session` checks it
  answers and accepts the token first): nothing in the run store needs to be visible to other nodes. Each
  trial trains in a node-local run store (``$HARNESS_TRIAL_DIR``, default ``/tmp/harness-trials``, the
  same path on every node), after receiving the driver's copy of its run there (so a completed run is
  reported, an unfinished one resumes); its run directory travels back through Ray to an actor on the
  driver's node, the only writer of the driver's run store, which swaps it into place atomically
  (:mod:`harness.runners.run_transfer`), and the node-local copy is then removed. A running trial sends
  its run home every 30 s when it changed and once more when it ends, so a killed trial loses at most
  that much. The data (``$HARNESS_DATA_DIR``) and the project must be installed at the same path on
  every node, and the driver must run on a node of the cluster (Ray Client ``ray://`` is refused).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import shutil
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness.errors import SweepStopped, UserError, counted
from harness.paths import check_writable_folder
from harness.runners.sweep_file import (
    SWEEP_FILE,
    Sweep,
    candidates,
    cell_overrides,
    check_sweep,
    flow,
    split_entry,
    sweep_cells,
    trial_cells,
)
from harness.tracking import close_service

REASON_CHARS = 300
DEATH_CHARS = 150  # Ray's words on a trial's process that died, within a row's reason
SWEEP_TAG = "sweep-"  # a trial's W&B tag: sweep-<name> (harness.runs reads the sweep's name from it)
# Cluster mode: the node-local run store of every trial, the same path on every node (a resumed run must find
# its checkpoints' directory where the last attempt left it: Lightning's ModelCheckpoint restores its best-so-far
# bookkeeping only when the directory is unchanged).
TRIAL_DIR = "/tmp/harness-trials"








































def _tune_space(sweep: Sweep) -> dict[str, Any]:
    from ray import tune

    samplers = {
        "grid": lambda s: tune.grid_search(list(s["values"])),
        "choice": lambda s: tune.choice(list(s["values"])),
        "uniform": lambda s: tune.uniform(float(s["low"]), float(s["high"])),
        "loguniform": lambda s: tune.loguniform(float(s["low"]), float(s["high"])),
        "randint": lambda s: tune.randint(int(s["low"]), int(s["high"])),
    }
    space = {key: samplers[spec["type"]](spec) for key, spec in sweep.space.items() if key not in sweep.stack_grid}
    seeds = {"seeds": list(sweep.seeds)} if sweep.stack_seeds else {"seed": tune.grid_search(list(sweep.seeds))}
    if sweep.stack_grid:
        seeds[STACKED_SPACE] = {key: list(sweep.space[key]["values"]) for key in sweep.stack_grid}
    if sweep.tasks:
        cells = tune.grid_search(trial_cells(sweep))
        return {"cell": cells, **seeds, "space": space}
    return {"model": tune.grid_search(list(sweep.models)), **seeds, "space": space}


def trial_cell(sweep: Sweep, trial: dict[str, Any]) -> tuple[str, str]:
    """The (task, model) of one trial."""
    if "cell" in trial:
        return split_entry(str(trial["cell"]))
    return sweep.task, str(trial["model"])


def trial_overrides(sweep: Sweep, trial: dict[str, Any]) -> list[str]:
    """The overrides of one trial: the fixed ones (:func:`cell_overrides`), the sampled values, the seed and the
    W&B group."""
    entry = str(trial.get("cell") or f"{sweep.task}/{trial['model']}")
    sampled = [f"{key}={flow(value)}" for key, value in sorted(trial["space"].items())]
    return [*cell_overrides(sweep, entry), *sampled, f"seed={trial['seed']}", f"tracking.group={sweep.name}",
            f"tracking.tags=[{SWEEP_TAG}{sweep.name}]"]


def trial_label(trial: dict[str, Any]) -> str:
    """A trial as the table shows it: model, seed (a stacked trial's seeds) and sampled values (floats to 4
    significant digits)."""
    shown = [f"{key}={f'{value:.4g}' if isinstance(value, float) else flow(value)}"
             for key, value in sorted((trial.get("space") or {}).items())]
    seed = f"seed={trial.get('seed')}" if "seeds" not in trial else f"seeds={','.join(map(str, trial['seeds']))}"
    return " ".join([str(trial.get("cell") or trial.get("model")), seed, *shown])


def trial_bundles(sweep: Sweep, task: str, model: str, sampled: tuple[str, ...] = ()) -> list[dict[str, float]]:
    """The placement group one trial needs: the trial's own process (for RL: RLlib's driver and local
    learner) plus, for RL, one CPU per EnvRunner and one per remote learner (``rl.num_learners``; RLlib's
    ``num_cpus_per_learner`` "auto" is one CPU for a learner without a GPU), with ``rl.num_gpus_per_learner``
    GPUs beside each remote learner's CPU (or the trial's own, for a local learner), in the order RLlib fills it
    (``Algorithm.default_resource_request``: driver, EnvRunners, learners). ``sampled``: the trial's values of
    the sweep's space as overrides (``rl.num_env_runners`` may be one of them)."""
    from harness.config import compose
    from harness.runners.rl import gpus_per_learner

    composed = compose(task, model, sweep.profile, [*cell_overrides(sweep, f"{task}/{model}"), *sampled],
                       given_in=SWEEP_FILE)
    rl = composed.task.kind == "rl"
    runners = int(composed.cfg.rl.num_env_runners) if rl else 0
    learners = int(composed.cfg.rl.num_learners) if rl else 0
    learner_gpu = float(gpus_per_learner(composed.cfg.rl)) if rl else 0.0
    own_gpu = max(float(sweep.gpus_per_trial), 0.0 if learners else learner_gpu)  # a local learner: the trial's
    gpus = {"GPU": own_gpu} if own_gpu else {}
    remote = {"CPU": 1.0, "GPU": learner_gpu} if learner_gpu else {"CPU": 1.0}
    return [{"CPU": float(sweep.cpus_per_trial), **gpus}] + [{"CPU": 1.0}] * runners + [dict(remote)] * learners


RUNNERS_KEY = "rl.num_env_runners"


def runner_choice(value: Any) -> tuple[str, ...]:
    """A value of ``rl.num_env_runners`` from a sweep's space, as the override that sizes its trial's CPUs."""
    return (f"{RUNNERS_KEY}={flow(value)}",)


def runner_choices(sweep: Sweep) -> list[tuple[str, ...]]:
    """The space values that change a trial's CPUs: each value the space gives ``rl.num_env_runners`` (as
    :func:`check_sweep` composes them), or one empty choice when the space leaves it alone."""
    spec = sweep.space.get(RUNNERS_KEY)
    return [runner_choice(value) for value in candidates(spec)] if spec else [()]


def cell_cpu_needs(bundles: dict[tuple[str, tuple[str, ...]], list[dict[str, float]]]) -> dict[str, float]:
    """Each cell's CPUs: the largest placement group (its bundles' total) over the cell's runner choices."""
    needs: dict[str, float] = {}
    for (cell, _), bundle_list in bundles.items():
        needs[cell] = max(needs.get(cell, 0.0), sum(bundle["CPU"] for bundle in bundle_list))
    return needs


def trial_gpu_need(bundles: dict[tuple[str, tuple[str, ...]], list[dict[str, float]]]) -> float:
    """The most GPUs one trial's placement group asks for (``gpus_per_trial`` and its RL learners')."""
    return max((sum(bundle.get("GPU", 0.0) for bundle in bundle_list) for bundle_list in bundles.values()),
               default=0.0)


def check_trial_gpus(sweep: Sweep, gpus: float, cluster: bool, needed: float | None = None) -> None:
    """A trial that asks for a GPU the Ray session lacks would wait for ever, as :func:`check_trial_cpus` says of
    CPUs. (A trial that asks for a GPU gets its own, Ray setting its ``CUDA_VISIBLE_DEVICES``, and at most
    ``1 / gpus_per_trial`` trials share one; a trial that asks for none sees every GPU of its machine and trains
    on the first, Ray 2.60 leaving ``CUDA_VISIBLE_DEVICES`` as it was: ``_private/utils.py``,
    ``set_visible_accelerator_ids``.) ``needed``: the largest trial's GPUs (:func:`trial_gpu_need`), where RL
    learners ask for more than ``gpus_per_trial``."""
    needed = max(float(sweep.gpus_per_trial), needed or 0.0)
    if needed <= gpus:
        return
    own = needed == sweep.gpus_per_trial
    why = ("each trial asks for {:g} GPU (gpus_per_trial)" if own
           else "a trial asks for {:g} GPU (rl.num_gpus_per_learner)")
    fix = "gpus_per_trial: 0" if own else "rl.num_gpus_per_learner=0 in the sweep's overrides"
    where = f"the Ray cluster at RAY_ADDRESS has {gpus:g} now" if cluster else f"the local Ray has {gpus:g}"
    problem = f"sweep {sweep.name}: {why.format(needed)} but {where}"
    if cluster:
        print(f"warning: {problem}; its trials wait until the cluster has one", file=sys.stderr)
        return
    raise UserError(f"{problem}, so no trial would start; set {fix} to train on the CPU")


def check_trial_cpus(sweep: Sweep, needs: dict[str, float], cpus: float, cluster: bool) -> None:
    """A trial that asks for more CPUs than the Ray session has would wait (PENDING) for ever: refused with one
    line on a local Ray; on a cluster, which an autoscaler may grow, a warning line. ``needs``: each cell's CPUs
    (its placement group's total), ``cpus``: the session's CPUs now."""
    cell, most = max(needs.items(), key=lambda item: item[1])
    if most <= cpus:
        return
    where = f"the Ray cluster at RAY_ADDRESS has {cpus:g} now" if cluster else f"the local Ray has {cpus:g}"
    problem = (f"sweep {sweep.name}: a trial of {cell} needs {most:g} CPUs (cpus_per_trial {sweep.cpus_per_trial:g} "
               f"plus one per env runner, rl.num_env_runners, and one per remote learner, rl.num_learners) but {where}")
    if cluster:
        print(f"warning: {problem}; its trials wait until the cluster has grown that large", file=sys.stderr)
        return
    raise UserError(f"{problem}, so it would never start; lower rl.num_env_runners (overrides) or cpus_per_trial, "
                    "or run the sweep on a cluster (RAY_ADDRESS)")


def _reason(exc: BaseException) -> str:
    """An exception as one line: a UserError's message, otherwise its type and message."""
    text = str(exc) if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}"
    return _one_line(text)


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= REASON_CHARS else line[: REASON_CHARS - 3] + "..."


_PROCESS_THREADS: list[int] = []  # torch's thread count when this worker process ran its first trial


def _run_trial(trial: dict[str, Any], sweep: Sweep, env: dict[str, str], store: Any = None) -> None:
    """One trial, inside a Ray worker: an ordinary harness run, then its outcome reported to Tune. In a reused
    process (``reuse_processes``) the trial starts with the thread count the process began with, not the one
    an earlier trial's ``train.threads`` left. A SIGTERM from Ray's shutdown ends the worker without a traceback,
    wherever it lands (:func:`~harness.runners.ray_session.exit_on_stray_system_exit`)."""
    import torch
    from ray import tune

    from harness.runners.ray_session import exit_on_stray_system_exit

    exit_on_stray_system_exit()
    trial = unlisted(trial)
    if not _PROCESS_THREADS:
        _PROCESS_THREADS.append(torch.get_num_threads())
    torch.set_num_threads(_PROCESS_THREADS[0])
    os.environ.update(env)
    outcome = run_stack_trial(trial, sweep) if "seeds" in trial else run_trial(trial, sweep, store)
    close_service()  # before Ray ends the worker and its W&B service with it; a reused worker starts a new one
    tune.report(outcome)


STACKED_SPACE = "stacked_space"  # a stacked trial's grid values that join its stack ({key: [values]})


def member_trials(trial: dict[str, Any]) -> list[dict[str, Any]]:
    """A stacked trial (``seeds``, and the ``stack_grid`` values) as the unstacked trials of its members: one per
    seed, or one per value of those grids and seed."""
    point = {key: value for key, value in trial.items() if key not in ("seeds", STACKED_SPACE)}
    grids = trial.get(STACKED_SPACE) or {}
    return [{**point, "space": {**point["space"], **dict(zip(grids, values, strict=True))}, "seed": seed}
            for values in itertools.product(*grids.values()) for seed in trial["seeds"]]


def member_label(trial: dict[str, Any], member: dict[str, Any]) -> str:
    """How a stacked trial names one member in its report: its seed, after its ``stack_grid`` values if any."""
    values = [f"{key}={flow(member['space'][key])}" for key in trial.get(STACKED_SPACE) or {}]
    return " ".join([*values, f"seed={member['seed']}"]) if values else str(member["seed"])


def run_stack_trial(trial: dict[str, Any], sweep: Sweep) -> dict[str, Any]:
    """Run the seeds of one trial point (local mode) as one stack when its config can stack, otherwise one after
    another as unstacked trials. Reports ``members``: each seed's outcome (:func:`run_trial`'s), as JSON."""
    from harness.runners.stacked_launch import unstackable_reason

    members, runs_dir = member_trials(trial), Path(os.environ["HARNESS_RUNS_DIR"])
    try:
        stack = [compose_trial(sweep, member) for member in members]
    except UserError:
        stack = []  # each member's own trial reports the mistake
    outcomes = _stack_outcomes(stack, runs_dir) if stack and not unstackable_reason(stack[0]) else None
    if outcomes is None:
        outcomes = [run_trial(member, sweep) for member in members]
    return {"members": json.dumps({member_label(trial, m): o for m, o in zip(members, outcomes, strict=True)})}


def _stack_outcomes(stack: list[Any], runs_dir: Path) -> list[dict[str, Any]] | None:
    """Train ``stack`` (composed configs) as one stack and describe each member's outcome as :func:`run_trial`
    does; None when its model cannot run stacked (refused before any run was stored)."""
    from harness.runners.stacked_launch import UnstackableModelError, launch_stack

    error: BaseException | None = None
    try:
        launch_stack(stack, runs_dir=runs_dir)
    except UnstackableModelError as exc:
        print(f"{exc}; running them one by one", flush=True)
        return None
    except Exception as exc:  # noqa: BLE001  stored as failed by the launcher; the other trials go on
        error = exc
        if not isinstance(exc, UserError):
            traceback.print_exc()
    outcomes = []
    for composed in stack:
        results = stored_results(composed, runs_dir)
        done = (results or {}).get("status") == "completed"
        outcomes.append(_outcome(results, None if done else error, runs_dir))
    return outcomes


def run_trial(trial: dict[str, Any], sweep: Sweep, store: Any = None) -> dict[str, Any]:
    """Run one trial and describe its outcome: status, run id ("" without a run), one-line reason, numeric
    metrics, and the run store it trained in. ``store`` is the driver's :class:`DriverStore` in cluster mode
    (the run trains in the node-local store ``$HARNESS_TRIAL_DIR`` and is sent home), None in local mode
    (the run store itself)."""
    from harness.runners.launch import launch

    runs_dir = Path(os.environ["HARNESS_TRIAL_DIR" if store is not None else "HARNESS_RUNS_DIR"])
    error: BaseException | None = None
    composed, sender = None, None
    try:
        composed = compose_trial(sweep, trial)
        if store is None:
            launch(composed, runs_dir=runs_dir)
        else:
            sender = _receive(trial, sweep, store, runs_dir)
            with sender:  # sends the run home while it trains and once more at the end
                launch(composed, runs_dir=runs_dir)
            if composed.run_id != sender.path.name:
                raise RuntimeError(f"run id {composed.run_id} differs from {sender.path.name} computed before the run")
    except Exception as exc:  # noqa: BLE001  stored as failed by the launcher (when it has a run); the others go on
        error = exc
        if not isinstance(exc, UserError):
            traceback.print_exc()
    results = stored_results(composed, runs_dir) if composed else None
    if sender is not None and sender.home():
        shutil.rmtree(sender.path, ignore_errors=True)  # the driver has its copy now
    elif sender is not None:
        print(f"the run could not be sent home; it is kept at {sender.path} on {socket.gethostname()}", flush=True)
    return _outcome(results, error, runs_dir)


def stored_results(composed: Any, runs_dir: Path) -> dict[str, Any] | None:
    """The results.json of the run ``composed`` names in ``runs_dir``; None when it is missing or damaged."""
    from harness.runs import run_dir

    run = run_dir(composed.cfg.task.name, composed.cfg.model.name, composed.run_id, runs_dir)
    return run.read_results() if run.exists() and not run.damage() else None


OWNER_EXIT_WAIT_S = 15.0
"""How long the row of a trial that reported nothing waits for the process still writing its run to let it go."""


def settled_results(composed: Any, runs_dir: Path, wait_s: float = OWNER_EXIT_WAIT_S) -> dict[str, Any] | None:
    """:func:`stored_results`, once no live process on this host is writing the run, up to ``wait_s``: a trial that
    Tune has stopped can train on for a moment after Tune's loop has ended, until Ray ends its worker, and its run
    would read ``running`` though the sweep stopped it. After ``wait_s`` (another command training the same run) the
    results as they are."""
    from harness.runs import owner_state

    deadline = time.monotonic() + wait_s
    results = stored_results(composed, runs_dir)
    while results is not None and owner_state(results) == "alive" and time.monotonic() < deadline:
        time.sleep(0.2)
        results = stored_results(composed, runs_dir)
    return results


def _receive(trial: dict[str, Any], sweep: Sweep, store: Any, root: Path) -> Any:
    """Cluster mode, before the run: pin the run id (it holds the data fingerprint), clear this node's stale copy
    of the run and put the driver's copy (if any) in its place. Returns the run's sender."""
    from harness.runners.build import prepare_task
    from harness.runners.run_transfer import RunSender, node_id, run_key, through_ray
    from harness.runs import Run

    label = trial_label(trial)
    pinned = compose_trial(sweep, trial)
    prepare_task(pinned)
    key = run_key(pinned.cfg.task.name, pinned.cfg.model.name, pinned.run_id)
    local_run = root / key
    if Run(local_run).owner_alive():
        raise UserError(f"run {pinned.run_id} is in progress on this node ({local_run}); wait for it or stop it")
    shutil.rmtree(local_run, ignore_errors=True)
    print(f"trial {label}: training on node {node_id()} in the node-local run store {root}", flush=True)
    sender = RunSender(*through_ray(store), key, local_run)
    if sender.receive():
        print(f"trial {label}: received the driver's copy of run {pinned.run_id}", flush=True)
    return sender


def _outcome(results: dict[str, Any] | None, error: BaseException | None, runs_dir: Path) -> dict[str, Any]:
    status = (results or {}).get("status") or "failed"
    if error is not None and status == "completed":
        status = "failed"  # the run completed but the trial did not finish (e.g. sending it home)
    reason = _reason(error) if error is not None else _one_line(str((results or {}).get("error") or ""))
    if status != "completed" and not reason:
        reason = "no run was stored"
    metrics = (results or {}).get("metrics") or {}
    numeric = {k: float(v) for k, v in metrics.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    return {**numeric, "status": status, "run_id": (results or {}).get("run_id") or "", "error": reason,
            "store": str(runs_dir)}


def run_sweep(sweep: Sweep, runs_dir: Path) -> list[dict[str, Any]]:
    """Run every trial of the sweep on Ray Tune; returns one row per trial (trial, run id, status, reason,
    metrics), sorted by trial. From start to end, Ray's start and stop included, SIGTERM does what Ctrl-C does
    (:func:`sigterm_as_ctrl_c`)."""
    with sigterm_as_ctrl_c() as terminated:
        return _run_sweep(sweep, runs_dir, terminated)


def _run_sweep(sweep: Sweep, runs_dir: Path, terminated: list[int]) -> list[dict[str, Any]]:
    """:func:`run_sweep` once SIGTERM is handled; ``terminated`` lists the SIGTERMs received."""
    from harness.runners.ray_session import ray_session, signals_kept_through_ray_init
    from harness.tracking import configure_environment

    check_sweep(sweep)
    configure_environment()
    runs_dir = runs_dir.resolve()
    check_writable_folder(runs_dir, "runs folder")  # before Ray starts (Tune writes its state into it)
    cluster = bool(os.environ.get("RAY_ADDRESS"))
    split = None if cluster else split_completed(sweep, runs_dir)
    finished, left = split if split is not None else ([], None)
    if split is not None and (finished or not left):  # what the store holds; all of it: no Ray
        print(split_note(sweep, runs_dir, finished, left, len(grid_trials(sweep) or [])), flush=True)
        if not left:
            return finished
    env = {key: str(Path(os.environ.get(key, default)).resolve())
           for key, default in (("HARNESS_DATA_DIR", "data"), ("HARNESS_CACHE_DIR", ".cache/harness"))}
    if "HARNESS_DATA_DIR" not in os.environ and not Path(env["HARNESS_DATA_DIR"]).is_dir():
        del env["HARNESS_DATA_DIR"]  # no ./data: trials use the generators, as `make bench` would
    if cluster:
        env["HARNESS_TRIAL_DIR"] = os.environ.get("HARNESS_TRIAL_DIR", TRIAL_DIR)
        if not Path(env["HARNESS_TRIAL_DIR"]).is_absolute():
            raise UserError(f"HARNESS_TRIAL_DIR={env['HARNESS_TRIAL_DIR']} must be an absolute path (on every node)")
    else:
        env["HARNESS_RUNS_DIR"] = str(runs_dir)
        from harness.runners.launch import WAIT_FOR_RUN

        env[WAIT_FOR_RUN] = "1"  # a config drawn twice: its second trial waits for the first (launch.claim_run)
    env.update({k: v for k, v in os.environ.items() if k.startswith("WANDB_")})

    with signals_kept_through_ray_init(), ray_session():  # ray.init leaves the sweep's SIGTERM handler in place
        import ray
        from ray import tune  # after ray_session has set Ray's environment

        from harness.runners.run_transfer import start_driver_store

        bundles = {(f"{task}/{model}", choice): trial_bundles(sweep, task, model, choice)
                   for task, model in sweep_cells(sweep) for choice in runner_choices(sweep)}
        if ray.is_initialized():  # (a test's stand-in session starts no Ray)
            check_trial_cpus(sweep, cell_cpu_needs(bundles), float(ray.cluster_resources().get("CPU", 0)), cluster)
            check_trial_gpus(sweep, float(ray.cluster_resources().get("GPU", 0)), cluster, trial_gpu_need(bundles))
        store = start_driver_store(runs_dir) if cluster else None

        def resources(config: dict[str, Any]) -> Any:  # each trial's CPUs (an RL cell's env runners too)
            config = unlisted(config)
            task, model = trial_cell(sweep, config)
            space = config.get("space") or {}
            choice = runner_choice(space[RUNNERS_KEY]) if RUNNERS_KEY in space else ()
            cell = f"{task}/{model}"
            if (cell, choice) not in bundles:  # a value of a range the space samples
                bundles[(cell, choice)] = trial_bundles(sweep, task, model, choice)
            return tune.PlacementGroupFactory(bundles[(cell, choice)])

        trainable = tune.with_resources(tune.with_parameters(_run_trial, sweep=sweep, env=env, store=store), resources)
        tuner = tune.Tuner(
            trainable,
            param_space={LISTED: tune.grid_search(left)} if finished else _tune_space(sweep),
            tune_config=tune.TuneConfig(num_samples=sweep.num_samples, search_alg=sampler(sweep),
                                        reuse_actors=sweep.reuse_processes,
                                        trial_dirname_creator=listed_dirname if finished else None),
            run_config=tune.RunConfig(name=sweep.name, storage_path=str(runs_dir / "_tune"), verbose=1),
        )
        grid = fit_sweep(tuner, sweep.name, terminated)
        results = list(grid)
        rows = sweep_rows(results, sweep, runs_dir, trial_configs(grid), stored=finished)
    if any(_reported_nothing(result) for result in results):  # Ctrl-C: Tune ended the sweep before every trial ran
        raise SweepInterrupted(rows)  # exit code 130, as an interrupted `harness bench`, after the table
    return rows


@contextmanager
def sigterm_as_ctrl_c() -> Iterator[list[int]]:
    """Inside the block, the first SIGTERM does what Ctrl-C does at that moment and later ones are ignored (as in
    ``harness bench``): during ``tuner.fit()`` Tune's own handler ends the sweep in order (its trials stopped, their
    runs stored as interrupted, the table printed, exit code 130), elsewhere a KeyboardInterrupt. Ray's driver
    handler, which ``ray.init`` installs unless :func:`~harness.runners.ray_session.signals_kept_through_ray_init`
    keeps it out, raises ``SystemExit(15)`` wherever the main thread is instead: the sweep ended with exit code 15
    and not a word. Only the main thread can own signal handlers; elsewhere the block changes nothing. Yields the
    list of the SIGTERMs received (for :func:`fit_sweep`).

    One moment is out of any handler's reach: a SIGTERM to the sweep's process group while ``ray.init`` connects the
    driver (under a second of Ray's start) ends Ray's raylet while the main thread waits in Ray's core worker
    (C++, holding the interpreter's lock) to register with it; that code ends the process, up to ten seconds
    later, with exit code 1 and Ray's log line ``core_worker_process.cc: Failed to register worker to Raylet``, no
    Python code having run in between. No trial has started then: the run store is as the command found it.
    """
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def handler(signum: int, frame: Any) -> None:
        received.append(signum)
        if len(received) > 1:  # the sweep is already stopping: Ray's shutdown is not cut short
            return
        interrupt = signal.getsignal(signal.SIGINT)
        if not callable(interrupt) or not local_ray_survives():  # SIG_IGN (a background job of a script), or
            raise KeyboardInterrupt  # Ray's own processes got the SIGTERM too: Tune could not end the sweep in order
        interrupt(signal.SIGINT, frame)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield received
    finally:
        signal.signal(signal.SIGTERM, previous)


def local_ray_survives(wait_s: float = 2.0) -> bool:
    """Whether the processes of the local Ray this driver started (its GCS server, raylet, ...) are all still alive
    ``wait_s`` after a SIGTERM: a SIGTERM sent to the driver's process group (``kill -TERM -PGID``, GNU ``timeout``)
    reaches them too, as Ray starts them in that group, and they end at once (they ignore only SIGINT), so Tune,
    asked to end the sweep in order, would wait a minute for its GCS and then abort the process. True where this
    driver started no Ray (a cluster's)."""
    node = getattr(getattr(getattr(sys.modules.get("ray"), "_private", None), "worker", None), "_global_node", None)
    if node is None or not getattr(node, "all_processes", None):
        return True
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if not node.remaining_processes_alive():
            return False
        time.sleep(0.05)
    return node.remaining_processes_alive()


def sampler(sweep: Sweep) -> Any:
    """Tune's generator of the trials, its random draws (``choice``, ``uniform``, ...) seeded by the sweep's name, so
    that the same sweep command draws the same trials again: their run ids are the same, an interrupted one
    resumes and a completed one is reported from the store (an unseeded generator drew new values each time)."""
    from ray.tune.search.basic_variant import BasicVariantGenerator

    seed = int(hashlib.sha256(sweep.name.encode()).hexdigest()[:8], 16)
    return BasicVariantGenerator(max_concurrent=sweep.max_concurrent or 0, random_state=seed)


def grid_trials(sweep: Sweep) -> list[dict[str, Any]] | None:
    """Every trial of a sweep whose trials can be listed before Tune runs (one sample of a grid: each space key a
    ``grid``, ``num_samples`` 1), as Tune's configs for them (a stacked sweep's: one per stack, as
    :func:`_tune_space` generates them); None for any other sweep."""
    if sweep.num_samples != 1 or any(spec["type"] != "grid" for spec in sweep.space.values()):
        return None
    cells = [{"cell": entry} for entry in trial_cells(sweep)] if sweep.tasks else \
        [{"model": str(model)} for model in sweep.models]
    keys = [key for key in sweep.space if key not in sweep.stack_grid]
    points = [dict(zip(keys, values, strict=True))
              for values in itertools.product(*(sweep.space[key]["values"] for key in keys))]
    if sweep.stack_seeds:
        joined = {STACKED_SPACE: {key: list(sweep.space[key]["values"]) for key in sweep.stack_grid}} \
            if sweep.stack_grid else {}
        return [{**cell, "seeds": list(sweep.seeds), **joined, "space": point} for cell in cells for point in points]
    return [{**cell, "seed": seed, "space": point} for cell in cells for seed in sweep.seeds for point in points]


def split_completed(sweep: Sweep, runs_dir: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    """A listable sweep's trials (:func:`grid_trials`) split by the run store: the rows (:func:`sweep_rows`'
    rows, sorted) of those whose run is completed in ``runs_dir`` (a stacked trial: every member's), read from the
    store, and the trials (Tune's configs) left to run; None when the trials cannot be listed beforehand. Only a
    trial with a completed run of its task, model, profile and seed in the store is composed (its run id computed
    as the trial computes it), so a sweep that has trained nothing yet pays nothing for the check."""
    trials = grid_trials(sweep)
    if not trials:
        return None
    done, left = [], []
    for trial in trials:
        rows = [_completed_row(sweep, member, runs_dir)
                for member in (member_trials(trial) if "seeds" in trial else [trial])]
        if all(row is not None for row in rows):
            done += rows
        else:
            left.append(trial)
    return sorted(done, key=lambda row: row["trial"]), left


def _completed_row(sweep: Sweep, trial: dict[str, Any], runs_dir: Path) -> dict[str, Any] | None:
    """The row of an (unstacked) trial whose run is completed in ``runs_dir``, read from the store; None when it is
    not. Composed only when a completed run of its task, model, profile and seed is there at all. The predictions a
    kill kept a completed run from writing are written (:func:`harness.runners.existing_run.complete_predictions`)."""
    task, model = trial_cell(sweep, trial)
    prefix = f"{task}-{model}-{sweep.profile}-s{trial['seed']}-"
    if not any(_completed(path) for path in (runs_dir / task / model).glob(f"{prefix}*/results.json")):
        return None
    from harness.runners.existing_run import complete_predictions, predictions_may_be_missing
    from harness.runs import Run

    row = _stored_row(sweep, trial, runs_dir)
    if row["status"] != "completed":
        return None
    run = Run(runs_dir / task / model / row["run_id"])
    if predictions_may_be_missing(run):  # a kill before it wrote them: the same sweep command writes them
        complete_predictions(run, compose_trial(sweep, trial))
    return row


def split_note(sweep: Sweep, runs_dir: Path, finished: list[dict[str, Any]], left: list[dict[str, Any]],
               total: int) -> str:
    """The line that says what :func:`split_completed` found: how many of the sweep's ``total`` trials have their
    runs completed (``finished``: their rows, read from the store) and how many (``left``) Tune is given. A stacked
    sweep's trial is one stack: the runs are counted beside it."""
    noun = "stacked trial" if sweep.stack_seeds else "trial"
    runs = f" ({counted(len(finished), 'run')})" if sweep.stack_seeds else ""
    if left:
        their_runs = f"{counted(len(finished), 'run')}, " if sweep.stack_seeds else ""
        return (f"sweep {sweep.name}: {total - len(left)} of its {total} {noun}s' runs are completed in {runs_dir} "
                f"({their_runs}reported from the store); running the other {len(left)}")
    done = (f"every one of its {total} {noun}s' runs is" if total > 1 else
            f"the runs of its one {noun} are" if sweep.stack_seeds else f"the run of its one {noun} is")
    return (f"sweep {sweep.name}: {done} completed in {runs_dir}{runs}; nothing to run (harness bench --force "
            "retrains one)")


LISTED = "listed_trial"  # the key of Tune's grid over the trials left to run (a sweep run in part, split_completed)


def unlisted(config: dict[str, Any]) -> dict[str, Any]:
    """A trial's config as Tune passes it: from the grid of :func:`split_completed`'s trials left, or the sweep's
    own space."""
    return config[LISTED] if LISTED in config else config


def listed_dirname(trial: Any) -> str:
    """A Tune trial folder's name in a sweep run in part, from the trial it runs (``_run_trial_<id>_lstm_seed=1``)
    rather than from Tune's one grid key over the trials left (``..._listed_trial=model_lstm_seed_1_space_``)."""
    label = re.sub(r"[^A-Za-z0-9_.=,+-]+", "_", trial_label(unlisted(trial.config)))
    return f"{trial.trainable_name}_{trial.trial_id}_{label}"[:120]


def _completed(path: Path) -> bool:
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("status") == "completed"
    except (OSError, ValueError, AttributeError):
        return False


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C ended a sweep before every trial ran; ``rows`` are its table's rows (:func:`sweep_rows`), which the
    command line prints before it stops as for any Ctrl-C."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        super().__init__()
        self.rows = rows


def trial_configs(grid: Any) -> list[dict[str, Any] | None] | None:
    """Each trial's config as Tune generated it, in the order of the grid's results (None for a trial without one),
    or None when Ray does not say. A Result carries its config only once its trial reported, so a trial the sweep
    stopped before it started has it only in the trials of the grid's experiment analysis."""
    trials = getattr(getattr(grid, "_experiment_analysis", None), "trials", None)
    try:
        return [dict(trial.config) if getattr(trial, "config", None) else None for trial in trials]
    except (TypeError, ValueError):  # not a list of trials: this Ray keeps them elsewhere
        return None


def sweep_rows(results: list[Any], sweep: Sweep, runs_dir: Path, configs: list[dict[str, Any] | None] | None = None,
               stored: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The rows of Tune's results with the ``stored`` rows of trials Tune was not given (completed before,
    :func:`split_completed`), sorted by trial; when Tune stopped trials before they reported (Ctrl-C), what the
    run store holds for them (``configs``, :func:`trial_configs`, names a trial that never started), and one line
    saying how the sweep goes on. Trials whose config is not known at all are counted in one last row."""
    if configs is None or len(configs) != len(results):
        configs = [None] * len(results)
    rows, unknown, stored_complete = [], 0, 0
    for result, config in zip(results, configs, strict=True):
        if _reported_nothing(result) and not (result.config or config):
            unknown += 1  # never started, and Ray does not say which trial it was
            continue
        found = _rows(result, sweep, runs_dir, config)
        if _reported_nothing(result):  # its run may have completed before the stop reached Tune
            stored_complete += sum(row["status"] == "completed" for row in found)
        rows += found
    stopped = sum(_reported_nothing(result) for result in results)
    if stopped:
        already = (f" ({stored_complete} of their runs had completed all the same: the run store says so below)"
                   if stored_complete else "")
        print(f"sweep {sweep.name} was stopped (interrupted) before {stopped} of its {len(results)} trials "
              f"reported{already}: the same `harness sweep` command resumes it (completed runs are reported, not "
              "retrained; the others resume from their checkpoints), so Ray's Tuner.restore is not needed", flush=True)
    rows = sorted(rows + list(stored or []), key=lambda row: row["trial"])
    if unknown:
        rows.append({"trial": f"{unknown} more trial{'s' if unknown > 1 else ''}", "run_id": None,
                     "status": "interrupted", "reason": "not started: the sweep stopped before "
                     f"{'they' if unknown > 1 else 'it'} started; the same sweep command runs "
                     f"{'them' if unknown > 1 else 'it'}", "metrics": {}})
    return rows



def fit_sweep(tuner: Any, name: str, terminated: list[int] | None = None) -> Any:
    """``tuner.fit()``, with Ray Tune giving up part-way turned into :class:`SweepStopped`: one line saying why and
    that the same command runs the rest (a trial whose run completed is not run again; one cut off resumes from
    its checkpoint, since its owner process is gone). After a SIGTERM (``terminated``, :func:`sigterm_as_ctrl_c`)
    Tune's error is that signal's doing (it may have ended Ray's own processes too, while Tune stopped its trials):
    a KeyboardInterrupt, the stop the user asked for."""
    try:
        return tuner.fit()
    except Exception as exc:  # noqa: BLE001  whatever stopped Tune's controller (e.g. ray.exceptions.OutOfMemoryError)
        if terminated:
            raise KeyboardInterrupt from exc
        cause = exc.__cause__ or exc.__context__ or exc
        raise SweepStopped(f"sweep {name} stopped part-way: {_reason(cause)}; the finished trials' runs are stored "
                           "and the same command runs the rest") from exc


def _rows(result: Any, sweep: Sweep, runs_dir: Path, known: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The rows of one finished trial: its own (:func:`_row`), or one per member of a stacked trial. A trial that
    reported nothing (the sweep was stopped first) is described by what the run store holds; ``known`` is its
    config when the result lacks it (a trial that never started)."""
    config = unlisted(result.config or known or {})
    configs = member_trials(config) if "seeds" in config else [config]
    if _reported_nothing(result):
        return [_stored_row(sweep, trial, runs_dir) for trial in configs]
    if _died(result):  # its process ended without a word: the run store says where its runs are
        return [_stored_row(sweep, trial, runs_dir, died=_death(result.error)) for trial in configs]
    if "seeds" not in config:
        return [_row(result, config)]
    members = json.loads((result.metrics or {}).get("members") or "{}")
    return [_row(result, member, members.get(member_label(config, member)) or {}) for member in configs]


def _no_report(result: Any) -> bool:
    """Whether the trial function reported no outcome of its run (it reports every one, a failed one too)."""
    metrics = result.metrics or {}
    return not metrics.get("status") and "members" not in metrics


def _reported_nothing(result: Any) -> bool:
    """Whether Tune ended the trial before it reported or raised: the sweep was stopped (Ctrl-C) first."""
    return _no_report(result) and not result.error


def _died(result: Any) -> bool:
    """Whether Tune's trial ended in an error without reporting: its process died (killed outright, out of memory,
    crashed), since the trial function itself reports every outcome of its run, a failed one too."""
    return bool(result.error) and _no_report(result)


def _death(error: BaseException) -> str:
    """How a trial that reported nothing ended, in one short line: for a process that died (Ray's actor error), Ray's
    ``Worker exit detail`` sentence; for any other error, its first line."""
    text = " ".join(str(error).split())
    detail = re.search(r"Worker exit detail: (.+?\.)(?: |$)", text)
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if detail or "actor died" in text.lower():
        why = (detail.group(1) if detail else first)[:DEATH_CHARS]
        return f"its trial's process died before its run ended (killed, out of memory or crashed; Ray: {why})"
    return f"its trial ended in an error before its run did ({type(error).__name__}: {first[:DEATH_CHARS]})"


def _stored_row(sweep: Sweep, trial: dict[str, Any], runs_dir: Path, died: str | None = None) -> dict[str, Any]:
    """The row of a trial that reported nothing, from the run store: its run id computed as the trial computes it
    (the composed config, with the data pinned), then its ``results.json``. ``died``: why its process ended (Tune
    stopped it otherwise), which a trial that left no run fails with."""
    from harness.runners.build import prepare_task
    from harness.runners.killed_attempts import close_killed_run
    from harness.runs import owner_state, run_dir

    label, resume = trial_label(trial), "the same sweep command resumes it"
    try:
        composed = compose_trial(sweep, trial)
        prepare_task(composed)
    except Exception as exc:  # noqa: BLE001  the trial would have failed the same way
        return {"trial": label, "run_id": None, "status": "failed", "reason": _reason(exc), "metrics": {}}
    results = settled_results(composed, runs_dir)
    status = (results or {}).get("status")
    if results is None and died:
        status, reason = "failed", _one_line(f"{died}; no run was stored; the same sweep command runs it")
    elif results is None:
        status = "interrupted"
        reason = "not started: the sweep stopped before its run started; the same sweep command runs it"
    elif status == "completed":
        reason = ""
    elif status == "running" and owner_state(results) == "alive":
        reason = "its run is still being written by another process"
    elif status in ("running", "interrupted"):
        stopped = died or "the sweep stopped its run"
        if status == "running":  # its process ended before it could say so: the store says it now
            run = run_dir(composed.cfg.task.name, composed.cfg.model.name, composed.run_id, runs_dir)
            close_killed_run(run, _one_line(f"interrupted: {stopped} (the same sweep command resumes it)"))
        status, reason = "interrupted", _one_line(f"{stopped}; {resume} from its checkpoint")
    else:
        reason = _one_line(str(results.get("error") or status))
    metrics = (results or {}).get("metrics") or {}
    return {"trial": label, "run_id": composed.run_id, "status": status, "reason": reason,
            "metrics": held_out(metrics)}


def compose_trial(sweep: Sweep, trial: dict[str, Any]) -> Any:
    """The composed config of one (unstacked) trial, as :func:`run_trial` composes it."""
    from harness.config import compose

    return compose(*trial_cell(sweep, trial), sweep.profile, trial_overrides(sweep, trial), given_in=SWEEP_FILE)


def _row(result: Any, config: dict[str, Any] | None = None, metrics: dict[str, Any] | None = None) -> dict[str, Any]:
    """One trial of a finished Tune run (or, given its ``config`` and ``metrics``, one member of a stacked trial):
    what it reported, or why it reported nothing."""
    config = (result.config or {}) if config is None else config
    metrics = (result.metrics or {}) if metrics is None else metrics
    status = metrics.get("status") or "failed"
    reason = metrics.get("error") or (_one_line(str(result.error)) if result.error else "")
    if status != "completed" and not reason:
        reason = "the trial reported nothing"
    return {"trial": trial_label(config), "run_id": metrics.get("run_id") or None, "status": status,
            "reason": reason if status != "completed" else "",
            "metrics": held_out(metrics)}


_STAGE = re.compile(r"\d+_[a-z_]+/")  # a curriculum stage's prefix: 1_scratch/, 3_frozen_central/


def held_out(metrics: dict[str, Any]) -> dict[str, Any]:
    """A run's held-out metrics: its test splits' (``test/acc``, ``test_real_between_hexos/acc``) and its RL
    evaluation's (``eval/win_rate``), each curriculum stage's included (``4_frozen_encoder/test/acc``)."""
    out = {}
    for key, value in metrics.items():
        bare = key[m.end():] if (m := _STAGE.match(key)) else key
        if "/" in bare and bare.startswith(("test", "eval/")):
            out[key] = value
    return out


def sweep_table(rows: list[dict[str, Any]]) -> list[list[str]]:
    """The sweep's final table, one line per trial: the held-out accuracies (RL: the evaluation's win rate and
    return) of a completed run, otherwise the one-line reason."""
    table = [["trial", "run_id", "status", "held-out metrics / reason"]]
    for row in rows:
        shown = ("  ".join(f"{k}={v:.4f}" for k, v in sorted(row["metrics"].items())
                           if k.endswith("/acc") or k in ("eval/win_rate", "eval/episode_return"))
                 if row["status"] == "completed" else row["reason"])
        table.append([row["trial"], row["run_id"] or "-", row["status"], shown])
    return table
