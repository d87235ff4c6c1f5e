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
    reuse_processes: false           # true: a trial may run in the process of a finished one (see below)
    cpus_per_trial: 1
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
its own grid (the trials left match all of them).

With ``stack_seeds: true`` the seeds of one trial point (same cell, same sampled values) are ONE trial, which
trains them as a stack (:func:`harness.runners.stacked_launch.launch_stack`, ``docs/stacked_runs.md``); each
member is still its own run, with the run id of its unstacked trial, and its own row of the table. A cell that
cannot stack (RL, stepwise, another protocol, ``optim.decay_below_val_loss``, or a model the launcher's ``vmap``
check refuses) runs its seeds one after another in that trial. Local mode only: a cluster sweep refuses it.

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
when it raises. A sweep stopped part-way (Ctrl-C: Ray Tune catches it and ends the sweep) lists each trial that
had not reported with what the run store holds for it (its run id computed as the trial computes it; a trial that
never started says ``not started``, never failed), says that the same command resumes the sweep (completed runs
are reported, the others resume from their checkpoints) and exits 130, as an interrupted ``harness bench``.
A trial whose mistake is caught before its run directory exists (a malformed data file) leaves no run; the
sweep's table still lists it, with its status and the one-line reason.

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

import fnmatch
import itertools
import json
import math
import os
import re
import shutil
import socket
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from omegaconf import OmegaConf

from harness import PROJECT_ROOT
from harness.errors import SweepStopped, UserError, did_you_mean
from harness.tracking import close_service

SPACE_TYPES = ("grid", "choice", "uniform", "loguniform", "randint")
SPACE_FIELDS = {"grid": ("values",), "choice": ("values",), "uniform": ("low", "high"),
                "loguniform": ("low", "high"), "randint": ("low", "high")}
RESERVED_SPACE_KEYS = ("seed", "tracking.group", "tracking.tags")  # set per trial from the sweep itself
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
REASON_CHARS = 300
# Cluster mode: the node-local run store of every trial, the same path on every node (a resumed run must find
# its checkpoints' directory where the last attempt left it: Lightning's ModelCheckpoint restores its best-so-far
# bookkeeping only when the directory is unchanged).
TRIAL_DIR = "/tmp/harness-trials"


@dataclass
class Sweep:
    name: str
    models: list[str] | str  # or "all" (matrix sweeps)
    task: str = ""
    tasks: list[str] | str | None = None  # a matrix sweep: task names or "all"
    profile: str = "cpu"
    seeds: list[int] = field(default_factory=lambda: [0])
    overrides: list[str] = field(default_factory=list)
    space: dict[str, dict[str, Any]] = field(default_factory=dict)
    num_samples: int = 1
    cpus_per_trial: float = 1
    max_concurrent: int | None = None
    task_overrides: dict[str, list[str]] = field(default_factory=dict)  # matrix sweeps: fixed per task
    task_grid: dict[str, dict[str, list[Any]]] = field(default_factory=dict)  # matrix sweeps: a grid per task
    cell_time_cap_s: float | None = None  # caps train.max_time_s / rl.max_time_s of every cell
    cells: list[str] | None = None  # only the cells matching these task/model patterns (``--cells``)
    stack_seeds: bool = False  # the seeds of one trial point train as one stack, in one trial
    reuse_processes: bool = False  # a finished trial's process runs the next trial (Tune's reuse_actors)
    only: dict[str, dict[str, Any]] = field(default_factory=dict)  # ``--only``, per key (command line, not the file)


def load_sweep(path: Path) -> Sweep:
    """Read and check a sweep file; every mistake is a UserError naming the file."""
    if not path.is_file():
        raise UserError(f"no sweep file {path}{_sweep_file_hint(path)}")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise UserError(f"{path}: not valid YAML{where} ({problem})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot be read ({exc})") from None
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise UserError(f"{path}: a sweep file is a mapping (name, task, models, ...), not a {type(data).__name__}")
    known = set(Sweep.__dataclass_fields__) - {"only"}  # chosen on the command line (--only)
    unknown = sorted(str(key) for key in set(data) - known - {"description"})
    if unknown:
        raise UserError(f"{path}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    for key in ("name", "models"):
        if key not in data:
            raise UserError(f"{path}: missing '{key}'")
    if ("task" in data) == ("tasks" in data):
        raise UserError(f"{path}: {'missing' if 'task' not in data else 'both'} 'task' (one task) "
                        f"{'or' if 'task' not in data else 'and'} 'tasks' (a matrix sweep)")
    data.pop("description", None)
    if "cells" in data:
        raise UserError(f"{path}: unknown key(s) cells; choose cells on the command line (--cells)")
    for key, empty in (("space", {}), ("overrides", []), ("task_overrides", {}), ("task_grid", {})):
        data[key] = empty if data.get(key) is None else data[key]  # `space:` left empty in the file
    problem = _sweep_problem(data)
    for key, spec in (data["space"] if isinstance(data["space"], dict) else {}).items():
        problem = problem or _space_problem(key, spec)
    if problem:
        raise UserError(f"{path}: {problem}")
    return Sweep(**data)


def _sweep_file_hint(path: Path) -> str:
    """For a sweep file that does not exist: where sweep files live, and the closest one of ``sweeps/``."""
    folder = PROJECT_ROOT / "sweeps"
    named = {found.stem: found for found in sorted(folder.glob("*.yaml"))}
    suffix = did_you_mean(path.stem, named)
    close = suffix.split("'")[1] if suffix.count("'") == 2 else ""
    if close in named:
        return f" (did you mean {os.path.relpath(named[close])}?)"
    return suffix or f"; the sweep files are {os.path.relpath(folder)}/<name>.yaml"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)


def _sweep_problem(data: dict[str, Any]) -> str | None:
    """What is wrong with a sweep file's top-level values, or None."""
    name, models = data["name"], data["models"]
    if not isinstance(name, str) or not NAME.fullmatch(name):
        return f"name {name!r} must be letters, digits, '_', '.' or '-' (it names the W&B group)"
    for key in ("task", "profile"):
        if key in data and (not isinstance(data[key], str) or not data[key]):
            return f"'{key}' must be a name, not {data[key]!r}"
    tasks = data.get("tasks")
    if tasks is not None and tasks != "all" and (
            not isinstance(tasks, list) or not tasks or not all(isinstance(t, str) and t for t in tasks)):
        return f"'tasks' must be 'all' or a non-empty list of task names, not {tasks!r}"
    if models == "all" and tasks is not None:
        return _sweep_rest_problem(data)
    if not isinstance(models, list) or not models:
        return f"'models' must be a non-empty list of model names{' or all' if tasks else ''}, not {models!r}"
    if not all(isinstance(m, str) and m for m in models) or len(set(models)) < len(models):
        return f"'models' must list model names, each once: {models!r}"
    return _sweep_rest_problem(data)


def _sweep_rest_problem(data: dict[str, Any]) -> str | None:
    """The checks of :func:`_sweep_problem` after the names: seeds, overrides, space and resources."""
    seeds = data.get("seeds", [0])
    if not isinstance(seeds, list) or not seeds or not all(_is_int(s) and s >= 0 for s in seeds):
        return f"'seeds' must be a non-empty list of non-negative integers, not {seeds!r}"
    if len(set(seeds)) < len(seeds):
        return f"'seeds' lists a seed twice: {seeds!r}"
    overrides = data.get("overrides", [])
    if not isinstance(overrides, list) or not all(isinstance(o, str) and "=" in o for o in overrides):
        return f"'overrides' must be a list of key=value strings, not {overrides!r}"
    if not isinstance(data.get("space", {}), dict):
        return f"'space' must map config keys to searches, not {data['space']!r}"
    samples, cpus, concurrent = data.get("num_samples", 1), data.get("cpus_per_trial", 1), data.get("max_concurrent")
    if not _is_int(samples) or samples < 1:
        return f"'num_samples' must be an integer >= 1, not {samples!r}"
    if not _is_number(cpus) or cpus <= 0:
        return f"'cpus_per_trial' must be a number > 0, not {cpus!r}"
    if concurrent is not None and (not _is_int(concurrent) or concurrent < 1):
        return f"'max_concurrent' must be null or an integer >= 1, not {concurrent!r}"
    for key in ("stack_seeds", "reuse_processes"):
        if not isinstance(data.get(key, False), bool):
            return f"'{key}' must be true or false, not {data[key]!r}"
    return _per_task_problem(data)


def _per_task_problem(data: dict[str, Any]) -> str | None:
    """What is wrong with a matrix sweep's per-task settings (task_overrides, task_grid, cell_time_cap_s)."""
    per_task, grid, cap = data.get("task_overrides") or {}, data.get("task_grid") or {}, data.get("cell_time_cap_s")
    if (per_task or grid) and "tasks" not in data:
        return "'task_overrides' and 'task_grid' are for matrix sweeps (tasks: ...); use overrides and space"
    if not isinstance(per_task, dict) or not all(
            isinstance(o, list) and all(isinstance(x, str) and "=" in x for x in o) for o in per_task.values()):
        return f"'task_overrides' must map task names to lists of key=value strings, not {per_task!r}"
    if not isinstance(grid, dict) or not all(
            isinstance(keys, dict) and keys and all(isinstance(k, str) and isinstance(v, list) and v
                                                    for k, v in keys.items()) for keys in grid.values()):
        return f"'task_grid' must map task names to {{config key: [values]}}, not {grid!r}"
    if cap is not None and (not _is_number(cap) or cap <= 0):
        return f"'cell_time_cap_s' must be null or a number of seconds > 0, not {cap!r}"
    return None


def _space_problem(key: Any, spec: Any) -> str | None:
    """What is wrong with one entry of a sweep's space, or None."""
    where = f"space '{key}'"
    if not isinstance(key, str) or not key:
        return f"space keys must be config keys such as optim.lr, not {key!r}"
    if key in RESERVED_SPACE_KEYS:
        return f"{where}: set by the sweep itself (use 'seeds' for seeds)"
    if not isinstance(spec, dict) or spec.get("type") not in SPACE_TYPES:
        kind = spec.get("type") if isinstance(spec, dict) else spec
        return f"{where} has type {kind!r}; one of {', '.join(SPACE_TYPES)} (e.g. {{type: grid, values: [1, 2]}})"
    kind, fields = spec["type"], SPACE_FIELDS[spec["type"]]
    extra = sorted(str(f) for f in set(spec) - {"type", *fields})
    missing = [f for f in fields if f not in spec]
    if extra or missing:
        return f"{where} ({kind}) takes {', '.join(fields)}" + (f"; unknown: {', '.join(extra)}" if extra else "") + (
            f"; missing: {', '.join(missing)}" if missing else "")
    if kind in ("grid", "choice"):
        if not isinstance(spec["values"], list) or not spec["values"]:
            return f"{where} ({kind}): 'values' must be a non-empty list, not {spec['values']!r}"
        return None
    low, high = spec["low"], spec["high"]
    if kind == "randint":
        if not (_is_int(low) and _is_int(high)):
            return f"{where} (randint): low and high must be integers, not {low!r}, {high!r}"
    elif not (_is_number(low) and _is_number(high)):
        hint = " (YAML reads 1e-4 as a string: write 1.0e-4)" if isinstance(low, str) or isinstance(high, str) else ""
        return f"{where} ({kind}): low and high must be numbers, not {low!r}, {high!r}{hint}"
    if low >= high:
        return f"{where} ({kind}): low must be below high, not {low!r} >= {high!r}"
    if kind == "loguniform" and low <= 0:
        return f"{where} (loguniform): low must be > 0, not {low!r}"
    return None


def _candidates(spec: dict[str, Any]) -> list[Any]:
    """The values a space entry can give its key that :func:`check_sweep` composes: every listed value, or
    both ends of a range (randint's high is exclusive)."""
    kind = spec["type"]
    if kind in ("grid", "choice"):
        return list(spec["values"])
    if kind == "randint":
        return [int(spec["low"]), int(spec["high"]) - 1]
    return [float(spec["low"]), float(spec["high"])]


def sweep_cells(sweep: Sweep) -> list[tuple[str, str]]:
    """The (task, model) cells a sweep trains: its task with each of its models, or, for a matrix sweep, every
    cell of its tasks and models that can run (the registry's compatibility)."""
    from harness.registry import REGISTRY

    if not sweep.tasks:
        return [(sweep.task, str(model)) for model in sweep.models]
    tasks = list(REGISTRY.tasks) if sweep.tasks == "all" else [REGISTRY.task(t).name for t in sweep.tasks]
    models = list(REGISTRY.models) if sweep.models == "all" else [REGISTRY.model(m).name for m in sweep.models]
    for task in [*sweep.task_overrides, *sweep.task_grid]:
        if task not in tasks:
            raise UserError(f"sweep {sweep.name}: task_overrides/task_grid name '{task}', which is not one of its "
                            f"tasks ({', '.join(tasks)})")
    cells = [(t, m) for t in tasks for m in models
             if REGISTRY.compatibility(REGISTRY.task(t), REGISTRY.model(m)).ok]
    if sweep.cells:
        cells = [(t, m) for t, m in cells if any(fnmatch.fnmatchcase(f"{t}/{m}", p) for p in sweep.cells)]
    if not cells:
        chosen = f" match {', '.join(sweep.cells)}" if sweep.cells else " can run together (see `harness list`)"
        raise UserError(f"sweep {sweep.name}: none of its tasks and models{chosen}")
    return cells


def trial_cells(sweep: Sweep) -> list[str]:
    """A matrix sweep's grid: one entry per cell and per point of its task's ``task_grid``, written
    ``task/model`` or ``task/model; key=value; ...``."""
    entries = []
    for task, model in sweep_cells(sweep):
        grid = sweep.task_grid.get(task, {})
        for values in itertools.product(*grid.values()):
            variant = [f"{key}={_flow(value)}" for key, value in zip(grid, values, strict=True)]
            entries.append("; ".join([f"{task}/{model}", *variant]))
    return entries


def cell_overrides(sweep: Sweep, entry: str) -> list[str]:
    """The fixed overrides of one grid entry (:func:`trial_cells`): the sweep's, its task's, its grid point's
    and the time cap."""
    (task, model), variant = _split_entry(entry), entry.split("; ")[1:]
    overrides = [*sweep.overrides, *sweep.task_overrides.get(task, []), *variant]
    if sweep.cell_time_cap_s is None:
        return overrides
    from harness.config import compose

    composed = compose(task, model, sweep.profile, overrides)
    key = {"rl": "rl.max_time_s", "stepwise": "stepwise.max_time_s"}.get(composed.task.kind, "train.max_time_s")
    current = OmegaConf.select(composed.cfg, key)
    cap = float(sweep.cell_time_cap_s) if current is None else min(float(current), float(sweep.cell_time_cap_s))
    return [*overrides, f"{key}={cap:g}"]


def narrow_grid(sweep: Sweep, choice: str) -> None:
    """Run only some values of one of the sweep's grids (``--only KEY=V1,V2``): ``KEY`` is a grid key of its
    ``space`` or of a matrix sweep's ``task_grid``, and each value must be one the file lists, so every trial
    left is one of the whole sweep's, with the same run id. The values are read as a YAML flow list, so a list
    value is written in brackets: ``model.operations=[write],[write,move]``. Called again for the same key, the
    values add up (each call narrows the file's grid, not the one left by the last call)."""
    key, chosen = _only_choice(sweep, choice)
    grids = sweep.only.setdefault(key, _file_grids(sweep, key))
    file_values = [*(grids["space"] or []), *(value for values in grids["tasks"].values() for value in values)]
    listed = dict.fromkeys(_flow(value) for value in file_values)
    missing = [value for value in chosen if value not in listed]
    if missing:
        raise UserError(f"--only {key}: {', '.join(missing)} not among the sweep's values ({', '.join(listed)})")
    wanted = grids["chosen"] = [*grids["chosen"], *(value for value in chosen if value not in grids["chosen"])]
    if grids["space"] is not None:
        sweep.space[key] = {**sweep.space[key], "values": [v for v in grids["space"] if _flow(v) in wanted]}
    for task, values in grids["tasks"].items():
        kept = [v for v in values if _flow(v) in wanted]
        if not kept:
            raise UserError(f"--only {key}: none of {', '.join(sorted(wanted))} is in task {task}'s grid "
                            f"({', '.join(_flow(v) for v in values)})")
        sweep.task_grid[task] = {**sweep.task_grid[task], key: kept}


def _only_choice(sweep: Sweep, choice: str) -> tuple[str, list[str]]:
    """``--only KEY=V1,V2`` read: the key (one of the sweep's grids) and the values, each as :func:`_flow` writes
    it."""
    key, sep, text = choice.partition("=")
    key = key.strip()
    if not sep or not key:
        raise UserError(f"--only {choice!r}: expected KEY=VALUE[,VALUE...], e.g. task.babi_id=1,2")
    grids = {k for k, spec in sweep.space.items() if spec["type"] == "grid"}
    if key not in grids and not any(key in keys for keys in sweep.task_grid.values()):
        known = sorted({*grids, *(k for keys in sweep.task_grid.values() for k in keys)})
        raise UserError(f"--only {key}: not a grid of sweep {sweep.name}; its grids: {', '.join(known) or 'none'}")
    try:
        chosen = yaml.safe_load(f"[{text}]")
    except yaml.YAMLError:
        chosen = None
    if not isinstance(chosen, list) or not chosen or any(value is None for value in chosen):
        raise UserError(f"--only {choice!r}: the values must be a comma-separated list, e.g. {key}=1,2")
    return key, list(dict.fromkeys(_flow(value) for value in chosen))


def _file_grids(sweep: Sweep, key: str) -> dict[str, Any]:
    """The values the sweep file gives grid ``key`` (its space's, each task's of ``task_grid``), before any
    ``--only``, and the values chosen so far (none)."""
    spec = sweep.space.get(key)
    space = list(spec["values"]) if spec and spec["type"] == "grid" else None
    tasks = {task: list(keys[key]) for task, keys in sweep.task_grid.items() if key in keys}
    return {"space": space, "tasks": tasks, "chosen": []}


def _split_entry(entry: str) -> tuple[str, str]:
    task, _, model = entry.split("; ")[0].partition("/")
    return task, model


def check_sweep(sweep: Sweep) -> None:
    """Compose every cell's config with each value the space can take at its ends, so that a bad name, a
    key that is not a config key or a value of the wrong type fails before Ray starts."""
    from harness.config import compose

    if sweep.stack_seeds and os.environ.get("RAY_ADDRESS"):
        raise UserError(f"sweep {sweep.name}: stack_seeds runs on a local Ray session only; unset RAY_ADDRESS or "
                        "set stack_seeds: false")
    for entry in trial_cells(sweep) if sweep.tasks else [f"{sweep.task}/{m}" for m in sweep.models]:
        task, model = _split_entry(entry)
        try:
            fixed = cell_overrides(sweep, entry)
            compose(task, model, sweep.profile, fixed)
        except UserError as exc:
            raise UserError(f"sweep {sweep.name}: {exc}") from None
        for key, spec in sweep.space.items():
            for value in _candidates(spec):
                try:
                    compose(task, model, sweep.profile, [*fixed, f"{key}={_flow(value)}"])
                except UserError as exc:
                    raise UserError(f"sweep {sweep.name}, space '{key}' with {model}: {exc}") from None


def _flow(value: Any) -> str:
    """A value as an override's right-hand side: YAML flow style (lists as [a,b])."""
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()


def _tune_space(sweep: Sweep) -> dict[str, Any]:
    from ray import tune

    samplers = {
        "grid": lambda s: tune.grid_search(list(s["values"])),
        "choice": lambda s: tune.choice(list(s["values"])),
        "uniform": lambda s: tune.uniform(float(s["low"]), float(s["high"])),
        "loguniform": lambda s: tune.loguniform(float(s["low"]), float(s["high"])),
        "randint": lambda s: tune.randint(int(s["low"]), int(s["high"])),
    }
    space = {key: samplers[spec["type"]](spec) for key, spec in sweep.space.items()}
    seeds = {"seeds": list(sweep.seeds)} if sweep.stack_seeds else {"seed": tune.grid_search(list(sweep.seeds))}
    if sweep.tasks:
        cells = tune.grid_search(trial_cells(sweep))
        return {"cell": cells, **seeds, "space": space}
    return {"model": tune.grid_search(list(sweep.models)), **seeds, "space": space}


def trial_cell(sweep: Sweep, trial: dict[str, Any]) -> tuple[str, str]:
    """The (task, model) of one trial."""
    if "cell" in trial:
        return _split_entry(str(trial["cell"]))
    return sweep.task, str(trial["model"])


def trial_overrides(sweep: Sweep, trial: dict[str, Any]) -> list[str]:
    """The overrides of one trial: the fixed ones (:func:`cell_overrides`), the sampled values, the seed and the
    W&B group."""
    entry = str(trial.get("cell") or f"{sweep.task}/{trial['model']}")
    sampled = [f"{key}={_flow(value)}" for key, value in sorted(trial["space"].items())]
    return [*cell_overrides(sweep, entry), *sampled, f"seed={trial['seed']}", f"tracking.group={sweep.name}",
            f"tracking.tags=[sweep-{sweep.name}]"]


def trial_label(trial: dict[str, Any]) -> str:
    """A trial as the table shows it: model, seed and sampled values (floats to 4 significant digits)."""
    shown = [f"{key}={f'{value:.4g}' if isinstance(value, float) else _flow(value)}"
             for key, value in sorted((trial.get("space") or {}).items())]
    return " ".join([str(trial.get("cell") or trial.get("model")), f"seed={trial.get('seed')}", *shown])


def trial_bundles(sweep: Sweep, task: str, model: str, sampled: tuple[str, ...] = ()) -> list[dict[str, float]]:
    """The placement group one trial needs: the trial's own process (for RL: RLlib's driver and local
    learner) plus, for RL, one CPU per EnvRunner, in the order RLlib fills it. ``sampled``: the trial's values of
    the sweep's space as overrides (``rl.num_env_runners`` may be one of them)."""
    from harness.config import compose

    composed = compose(task, model, sweep.profile, [*cell_overrides(sweep, f"{task}/{model}"), *sampled])
    runners = int(composed.cfg.rl.num_env_runners) if composed.task.kind == "rl" else 0
    return [{"CPU": float(sweep.cpus_per_trial)}] + [{"CPU": 1.0}] * runners


RUNNERS_KEY = "rl.num_env_runners"


def runner_choices(sweep: Sweep) -> list[tuple[str, ...]]:
    """The space values that change a trial's CPUs: each value the space gives ``rl.num_env_runners`` (as
    :func:`check_sweep` composes them), or one empty choice when the space leaves it alone."""
    spec = sweep.space.get(RUNNERS_KEY)
    return [(f"{RUNNERS_KEY}={_flow(value)}",) for value in _candidates(spec)] if spec else [()]


def check_trial_cpus(sweep: Sweep, needs: dict[str, float], cpus: float, cluster: bool) -> None:
    """A trial that asks for more CPUs than the Ray session has would wait (PENDING) for ever: refused with one
    line on a local Ray; on a cluster, which an autoscaler may grow, a warning line. ``needs``: each cell's CPUs
    (its placement group's total), ``cpus``: the session's CPUs now."""
    cell, most = max(needs.items(), key=lambda item: item[1])
    if most <= cpus:
        return
    where = f"the Ray cluster at RAY_ADDRESS has {cpus:g} now" if cluster else f"the local Ray has {cpus:g}"
    problem = (f"sweep {sweep.name}: a trial of {cell} needs {most:g} CPUs (cpus_per_trial {sweep.cpus_per_trial:g} "
               f"plus one per env runner, rl.num_env_runners) but {where}")
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
    an earlier trial's ``train.threads`` left."""
    import torch
    from ray import tune

    if not _PROCESS_THREADS:
        _PROCESS_THREADS.append(torch.get_num_threads())
    torch.set_num_threads(_PROCESS_THREADS[0])
    os.environ.update(env)
    outcome = run_stack_trial(trial, sweep) if "seeds" in trial else run_trial(trial, sweep, store)
    close_service()  # before Ray ends the worker and its W&B service with it; a reused worker starts a new one
    tune.report(outcome)


def member_trials(trial: dict[str, Any]) -> list[dict[str, Any]]:
    """A stacked trial (``seeds``) as the unstacked trials of its members, one per seed."""
    point = {key: value for key, value in trial.items() if key != "seeds"}
    return [{**point, "seed": seed} for seed in trial["seeds"]]


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
    return {"members": json.dumps({str(m["seed"]): o for m, o in zip(members, outcomes, strict=True)})}


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


def _receive(trial: dict[str, Any], sweep: Sweep, store: Any, root: Path) -> Any:
    """Cluster mode, before the run: pin the run id (it holds the data fingerprint), clear this node's stale copy
    of the run and put the driver's copy (if any) in its place. Returns the run's sender."""
    from harness.runners.launch import prepare_task
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
    metrics), sorted by trial."""
    from harness.runners.ray_session import ray_session
    from harness.tracking import configure_environment

    check_sweep(sweep)
    configure_environment()
    runs_dir = runs_dir.resolve()
    cluster = bool(os.environ.get("RAY_ADDRESS"))
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
    env.update({k: v for k, v in os.environ.items() if k.startswith("WANDB_")})

    with ray_session():
        import ray
        from ray import tune  # after ray_session has set Ray's environment

        from harness.runners.run_transfer import start_driver_store

        bundles = {(f"{task}/{model}", choice): trial_bundles(sweep, task, model, choice)
                   for task, model in sweep_cells(sweep) for choice in runner_choices(sweep)}
        needs = {cell: sum(bundle["CPU"] for bundle in bundle_list) for (cell, _), bundle_list in bundles.items()}
        if ray.is_initialized():  # (a test's stand-in session starts no Ray)
            check_trial_cpus(sweep, needs, float(ray.cluster_resources().get("CPU", 0)), cluster)
        store = start_driver_store(runs_dir) if cluster else None

        def resources(config: dict[str, Any]) -> Any:  # each trial's CPUs (an RL cell's env runners too)
            task, model = trial_cell(sweep, config)
            space = config.get("space") or {}
            choice = (f"{RUNNERS_KEY}={_flow(space[RUNNERS_KEY])}",) if RUNNERS_KEY in space else ()
            cell = f"{task}/{model}"
            if (cell, choice) not in bundles:  # a value of a range the space samples
                bundles[(cell, choice)] = trial_bundles(sweep, task, model, choice)
            return tune.PlacementGroupFactory(bundles[(cell, choice)])

        trainable = tune.with_resources(tune.with_parameters(_run_trial, sweep=sweep, env=env, store=store), resources)
        tuner = tune.Tuner(
            trainable,
            param_space=_tune_space(sweep),
            tune_config=tune.TuneConfig(num_samples=sweep.num_samples, max_concurrent_trials=sweep.max_concurrent,
                                        reuse_actors=sweep.reuse_processes),
            run_config=tune.RunConfig(name=sweep.name, storage_path=str(runs_dir / "_tune"), verbose=1),
        )
        grid = fit_sweep(tuner, sweep.name)
        results = list(grid)
        rows = sweep_rows(results, sweep, runs_dir, trial_configs(grid))
    if any(_reported_nothing(result) for result in results):  # Ctrl-C: Tune ended the sweep before every trial ran
        raise SweepInterrupted(rows)  # exit code 130, as an interrupted `harness bench`, after the table
    return rows


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


def sweep_rows(results: list[Any], sweep: Sweep, runs_dir: Path,
               configs: list[dict[str, Any] | None] | None = None) -> list[dict[str, Any]]:
    """The rows of Tune's results, sorted by trial; when Tune stopped trials before they reported (Ctrl-C), what
    the run store holds for them (``configs``, :func:`trial_configs`, names a trial that never started), and one line
    saying how the sweep goes on. Trials whose config is not known at all are counted in one last row."""
    if configs is None or len(configs) != len(results):
        configs = [None] * len(results)
    rows, unknown = [], 0
    for result, config in zip(results, configs, strict=True):
        if _reported_nothing(result) and not (result.config or config):
            unknown += 1  # never started, and Ray does not say which trial it was
            continue
        rows += _rows(result, sweep, runs_dir, config)
    stopped = sum(_reported_nothing(result) for result in results)
    if stopped:
        print(f"sweep {sweep.name} was stopped (interrupted) before {stopped} of its {len(results)} trials reported: "
              "the same `harness sweep` command resumes it (completed runs are reported, not retrained; the others "
              "resume from their checkpoints), so Ray's Tuner.restore is not needed", flush=True)
    rows = sorted(rows, key=lambda row: row["trial"])
    if unknown:
        rows.append({"trial": f"{unknown} more trial{'s' if unknown > 1 else ''}", "run_id": None,
                     "status": "interrupted", "reason": "not started: the sweep stopped before "
                     f"{'they' if unknown > 1 else 'it'} started; the same sweep command runs "
                     f"{'them' if unknown > 1 else 'it'}", "metrics": {}})
    return rows



def fit_sweep(tuner: Any, name: str) -> Any:
    """``tuner.fit()``, with Ray Tune giving up part-way turned into :class:`SweepStopped`: one line saying why and
    that the same command runs the rest (a trial whose run completed is not run again; one cut off resumes from
    its checkpoint, since its owner process is gone)."""
    try:
        return tuner.fit()
    except Exception as exc:  # noqa: BLE001  whatever stopped Tune's controller (e.g. ray.exceptions.OutOfMemoryError)
        cause = exc.__cause__ or exc.__context__ or exc
        raise SweepStopped(f"sweep {name} stopped part-way: {_reason(cause)}; the finished trials' runs are stored "
                           "and the same command runs the rest") from exc


def _rows(result: Any, sweep: Sweep, runs_dir: Path, known: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The rows of one finished trial: its own (:func:`_row`), or one per member of a stacked trial. A trial that
    reported nothing (the sweep was stopped first) is described by what the run store holds; ``known`` is its
    config when the result lacks it (a trial that never started)."""
    config = result.config or known or {}
    configs = member_trials(config) if "seeds" in config else [config]
    if _reported_nothing(result):
        return [_stored_row(sweep, trial, runs_dir) for trial in configs]
    if "seeds" not in config:
        return [_row(result, config)]
    members = json.loads((result.metrics or {}).get("members") or "{}")
    return [_row(result, member, members.get(str(member["seed"])) or {}) for member in configs]


def _reported_nothing(result: Any) -> bool:
    """Whether Tune ended the trial before it reported or raised: the sweep was stopped (Ctrl-C) first."""
    return not (result.metrics or {}).get("status") and "members" not in (result.metrics or {}) and not result.error


def _stored_row(sweep: Sweep, trial: dict[str, Any], runs_dir: Path) -> dict[str, Any]:
    """The row of a trial that reported nothing, from the run store: its run id computed as the trial computes it
    (the composed config, with the data pinned), then its ``results.json``."""
    from harness.runners.build import prepare_task
    from harness.runs import owner_state

    label, resume = trial_label(trial), "the same sweep command resumes it"
    try:
        composed = compose_trial(sweep, trial)
        prepare_task(composed)
    except Exception as exc:  # noqa: BLE001  the trial would have failed the same way
        return {"trial": label, "run_id": None, "status": "failed", "reason": _reason(exc), "metrics": {}}
    results = stored_results(composed, runs_dir)
    status = (results or {}).get("status")
    if results is None:
        status = "interrupted"
        reason = "not started: the sweep stopped before its run started; the same sweep command runs it"
    elif status == "completed":
        reason = ""
    elif status == "running" and owner_state(results) == "alive":
        reason = "its run is still being written by another process"
    elif status in ("running", "interrupted"):
        status, reason = "interrupted", f"the sweep stopped its run; {resume} from its checkpoint"
    else:
        reason = _one_line(str(results.get("error") or status))
    metrics = (results or {}).get("metrics") or {}
    return {"trial": label, "run_id": composed.run_id, "status": status, "reason": reason,
            "metrics": {k: v for k, v in metrics.items() if "/" in k and k.startswith(("test", "eval/"))}}


def compose_trial(sweep: Sweep, trial: dict[str, Any]) -> Any:
    """The composed config of one (unstacked) trial, as :func:`run_trial` composes it."""
    from harness.config import compose

    return compose(*trial_cell(sweep, trial), sweep.profile, trial_overrides(sweep, trial))


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
            "metrics": {k: v for k, v in metrics.items() if "/" in k and k.startswith(("test", "eval/"))}}


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
