"""A sweep file (``sweeps/<name>.yaml``): reading it, checking it, and the cells and grid points it names.

The format and what a sweep does with it are described in :mod:`harness.runners.tune`, which runs it on Ray Tune.
Everything here runs before Ray starts: :func:`load_sweep` turns every mistake in the file (a missing field, a
bound out of order, a key that is not a config key) into a one-line UserError, and :func:`check_sweep` composes
each cell's config with every value the space can take at its ends.
"""

from __future__ import annotations

import collections.abc
import fnmatch
import itertools
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from omegaconf import OmegaConf

from harness import PROJECT_ROOT
from harness.config import max_seed
from harness.errors import UserError, did_you_mean

SPACE_TYPES = ("grid", "choice", "uniform", "loguniform", "randint")


SPACE_FIELDS = {"grid": ("values",), "choice": ("values",), "uniform": ("low", "high"),
                "loguniform": ("low", "high"), "randint": ("low", "high")}


RESERVED_SPACE_KEYS = ("seed", "tracking.group", "tracking.tags")  # set per trial from the sweep itself


NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


class UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a mapping that names one key twice (PyYAML keeps the last value silently: a
    second ``models:`` line would drop the first's models from the sweep)."""


def _construct_unique_mapping(loader: UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    """The mapping of ``node``; a ConstructorError at the second occurrence of a key (merge keys ``<<`` aside)."""
    first_lines: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, collections.abc.Hashable):  # construct_mapping refuses it itself
            continue
        if key in first_lines:
            raise yaml.constructor.ConstructorError(
                None, None, f"{key!r} is given twice (first at line {first_lines[key] + 1}); YAML would keep only "
                "the last", key_node.start_mark)
        first_lines[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


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
    gpus_per_trial: float = 0  # a share of a GPU per trial (0.25: four trials share one); 0: none
    max_concurrent: int | None = None
    task_overrides: dict[str, list[str]] = field(default_factory=dict)  # matrix sweeps: fixed per task
    task_grid: dict[str, dict[str, list[Any]]] = field(default_factory=dict)  # matrix sweeps: a grid per task
    cell_time_cap_s: float | None = None  # caps train.max_time_s / rl.max_time_s of every cell
    cells: list[str] | None = None  # only the cells matching these task/model patterns (``--cells``)
    stack_seeds: bool = False  # the seeds of one trial point train as one stack, in one trial
    stack_grid: list[str] = field(default_factory=list)  # grid keys (task.*, optim.*) whose values join that stack
    reuse_processes: bool = False  # a finished trial's process runs the next trial (Tune's reuse_actors)
    only: dict[str, dict[str, Any]] = field(default_factory=dict)  # ``--only``, per key (command line, not the file)


def load_sweep(path: Path) -> Sweep:
    """Read and check a sweep file; every mistake is a UserError naming the file."""
    if not path.is_file():
        raise UserError(f"no sweep file {path}{_sweep_file_hint(path)}")
    try:
        data = yaml.load(path.read_text(), Loader=UniqueKeyLoader)
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
    problem = problem or _stack_grid_problem(data) or _repeated_trial_problem(data)
    if problem:
        raise UserError(f"{path}: {problem}")
    return Sweep(**data)


def _repeated(values: list[Any]) -> list[Any]:
    """The values listed more than once (compared as YAML writes them: 1 and 1.0 alike), in order."""
    seen: list[str] = []
    twice = []
    for value in values:
        text = flow(value)
        if text in seen and value not in twice:
            twice.append(value)
        seen.append(text)
    return twice


def _repeated_trial_problem(data: dict[str, Any]) -> str | None:
    """A sweep that would train one run twice, two trials at once in one run folder: a task, a grid value or a
    task_grid value listed twice, a pure grid sampled more than once; and overrides the sweep sets per trial
    itself (the seed, the W&B group and tags) or a key its space sets, which the trial's value would silently
    replace."""
    tasks = data.get("tasks")
    if isinstance(tasks, list) and _repeated(tasks):
        return f"'tasks' lists {', '.join(map(str, _repeated(tasks)))} twice: each cell would train twice"
    grids = {f"space '{key}'": spec["values"] for key, spec in data["space"].items() if spec["type"] == "grid"}
    grids.update({f"task_grid {task} '{key}'": values for task, keys in data["task_grid"].items()
                  for key, values in keys.items()})
    for where, values in grids.items():
        if _repeated(values):
            return f"{where} lists {', '.join(map(flow, _repeated(values)))} twice: the same run would train twice"
    if data.get("num_samples", 1) > 1 and all(spec["type"] == "grid" for spec in data["space"].values()):
        return ("'num_samples' > 1 repeats each point of a grid with the same seed: the same run twice; "
                "for repeats, list more seeds")
    for override in data["overrides"]:
        key = override.split("=", 1)[0].strip()
        if key in RESERVED_SPACE_KEYS:
            return f"overrides: {override}: set by the sweep itself (seeds: lists the seeds; name: the W&B group)"
        if key in data["space"]:
            return f"overrides: {override}: {key} is also in the space, whose values would replace it"
    return None


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
    if max(seeds) > max_seed():
        return f"'seeds' holds {max(seeds)}; a seed is at most {max_seed()}"
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
    gpus = data.get("gpus_per_trial", 0)
    if not _is_number(gpus) or gpus < 0:
        return f"'gpus_per_trial' must be a number >= 0 (a share of one GPU, e.g. 0.25, or whole GPUs), not {gpus!r}"
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


def _stack_grid_problem(data: dict[str, Any]) -> str | None:
    """What is wrong with ``stack_grid``: each key a grid of the space over the task's data (``task.*``) or the
    optimiser (``optim.*``), the only keys the members of a stack may differ in besides the seed, with
    ``stack_seeds: true``."""
    keys = data.get("stack_grid", [])
    if not isinstance(keys, list) or not all(isinstance(k, str) and k for k in keys) or len(set(keys)) < len(keys):
        return f"'stack_grid' must list grid keys of the space, each once, not {keys!r}"
    if keys and not data.get("stack_seeds"):
        return "'stack_grid' joins grid values to the stack of each trial point's seeds: set stack_seeds: true"
    for key in keys:
        spec = data["space"].get(key)
        if not isinstance(spec, dict) or spec.get("type") != "grid":
            return f"'stack_grid' names {key}, which is not a grid of the space"
        if not key.startswith(("task.", "optim.")) or key == "task.name":
            return (f"'stack_grid' names {key}: the members of a stack may differ only in their seed, the task's "
                    "data (task.* keys) and the optimiser (optim.* keys)")
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


def candidates(spec: dict[str, Any]) -> list[Any]:
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
        unmatched = [p for p in sweep.cells if not any(fnmatch.fnmatchcase(f"{t}/{m}", p) for t, m in cells)]
        if unmatched and len(unmatched) < len(sweep.cells):  # a misspelt pattern beside good ones: not left out quietly
            verb = "matches" if len(unmatched) == 1 else "match"
            raise UserError(f"sweep {sweep.name}: --cells {', '.join(unmatched)} {verb} none of the cells that can run "
                            f"({_close_cells(unmatched, cells)}`harness list` shows them)")
        cells = [(t, m) for t, m in cells if any(fnmatch.fnmatchcase(f"{t}/{m}", p) for p in sweep.cells)]
    if not cells:
        chosen = f" match {', '.join(sweep.cells)}" if sweep.cells else " can run together (see `harness list`)"
        raise UserError(f"sweep {sweep.name}: none of its tasks and models{chosen}")
    return cells


def _close_cells(patterns: list[str], cells: list[tuple[str, str]]) -> str:
    """``did you mean babi/memn2n? `` for the patterns that look like a cell's name, else ``""``."""
    import difflib

    names = [f"{t}/{m}" for t, m in cells]
    close = [match for p in patterns for match in difflib.get_close_matches(p, names, n=1)]
    return f"did you mean {', '.join(close)}? " if close else ""


def trial_cells(sweep: Sweep) -> list[str]:
    """A matrix sweep's grid: one entry per cell and per point of its task's ``task_grid``, written
    ``task/model`` or ``task/model; key=value; ...``."""
    entries = []
    for task, model in sweep_cells(sweep):
        grid = sweep.task_grid.get(task, {})
        for values in itertools.product(*grid.values()):
            variant = [f"{key}={flow(value)}" for key, value in zip(grid, values, strict=True)]
            entries.append("; ".join([f"{task}/{model}", *variant]))
    return entries


def cell_overrides(sweep: Sweep, entry: str) -> list[str]:
    """The fixed overrides of one grid entry (:func:`trial_cells`): the sweep's, its task's, its grid point's
    and the time cap."""
    (task, model), variant = split_entry(entry), entry.split("; ")[1:]
    overrides = [*sweep.overrides, *sweep.task_overrides.get(task, []), *variant]
    if sweep.cell_time_cap_s is None:
        return overrides
    from harness.config import compose

    composed = compose(task, model, sweep.profile, overrides, given_in=SWEEP_FILE)
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
    listed = dict.fromkeys(flow(value) for value in file_values)
    missing = [value for value in chosen if value not in listed]
    if missing:
        raise UserError(f"--only {key}: {', '.join(missing)} not among the sweep's values ({', '.join(listed)})")
    wanted = grids["chosen"] = [*grids["chosen"], *(value for value in chosen if value not in grids["chosen"])]
    if grids["space"] is not None:
        sweep.space[key] = {**sweep.space[key], "values": [v for v in grids["space"] if flow(v) in wanted]}
    for task, values in grids["tasks"].items():
        kept = [v for v in values if flow(v) in wanted]
        if not kept:
            raise UserError(f"--only {key}: none of {', '.join(sorted(wanted))} is in task {task}'s grid "
                            f"({', '.join(flow(v) for v in values)})")
        sweep.task_grid[task] = {**sweep.task_grid[task], key: kept}


def _only_choice(sweep: Sweep, choice: str) -> tuple[str, list[str]]:
    """``--only KEY=V1,V2`` read: the key (one of the sweep's grids) and the values, each as :func:`flow` writes
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
    return key, list(dict.fromkeys(flow(value) for value in chosen))


def _file_grids(sweep: Sweep, key: str) -> dict[str, Any]:
    """The values the sweep file gives grid ``key`` (its space's, each task's of ``task_grid``), before any
    ``--only``, and the values chosen so far (none)."""
    spec = sweep.space.get(key)
    space = list(spec["values"]) if spec and spec["type"] == "grid" else None
    tasks = {task: list(keys[key]) for task, keys in sweep.task_grid.items() if key in keys}
    return {"space": space, "tasks": tasks, "chosen": []}


def split_entry(entry: str) -> tuple[str, str]:
    task, _, model = entry.split("; ")[0].partition("/")
    return task, model


SWEEP_FILE = "sweep file"  # where a sweep's overrides and space values come from, in config errors


def check_sweep(sweep: Sweep) -> None:
    """Compose every cell's config with each value the space can take at its ends, so that a bad name, a
    key that is not a config key or a value of the wrong type fails before Ray starts."""
    from harness.config import compose

    if sweep.stack_seeds and os.environ.get("RAY_ADDRESS"):
        raise UserError(f"sweep {sweep.name}: stack_seeds runs on a local Ray session only; unset RAY_ADDRESS or "
                        "set stack_seeds: false")
    for entry in trial_cells(sweep) if sweep.tasks else [f"{sweep.task}/{m}" for m in sweep.models]:
        task, model = split_entry(entry)
        try:
            fixed = cell_overrides(sweep, entry)
            compose(task, model, sweep.profile, fixed, given_in=SWEEP_FILE)
        except UserError as exc:
            raise UserError(f"sweep {sweep.name}: {exc}") from None
        for key, spec in sweep.space.items():
            for value in candidates(spec):
                try:
                    compose(task, model, sweep.profile, [*fixed, f"{key}={flow(value)}"], given_in=SWEEP_FILE)
                except UserError as exc:
                    raise UserError(f"sweep {sweep.name}, space '{key}' with {model}: {exc}") from None


def flow(value: Any) -> str:
    """A value as an override's right-hand side: YAML flow style (lists as [a,b])."""
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()

