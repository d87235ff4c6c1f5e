"""Planning reruns: which stored runs a change to a source file would make stale, and the command that
reproduces a run (``harness runs --imports FILE``, ``harness runs --stale``).

A run is stale once a source file it imported computes differently (:mod:`harness.provenance`); the reference
store's numbers then wait for their runs to be repeated. Before changing a file, ``--imports`` says which runs
imported it and what their repetition costs in wall time; after, ``--stale`` lists the stale runs with the files
that changed and, for each, the ``harness bench`` command that composes its stored config again. The command is
checked: when it would not give the run's own id (a hash of the config), for example because a config key was
added since (at a default that keeps the old behaviour, as new options here do), the listing says so.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from omegaconf import OmegaConf

from harness.config import compose, run_id
from harness.errors import UserError
from harness.provenance import recorded_files
from harness.registry import safe_load_yaml

IGNORED = ("seed", "profile", "data.fingerprint")  # given as options, or computed by the run


def _flat(node: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(node, dict):
        return {prefix[:-1]: node}
    flat: dict[str, Any] = {}
    for key, value in node.items():
        flat.update(_flat(value, f"{prefix}{key}."))
    return flat


def _value(value: Any) -> str:
    """A config value as an OmegaConf dotlist value."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, list | dict):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


@dataclass(frozen=True)
class Rebuilt:
    """A stored run's config composed again (:func:`rebuild`): the ``harness bench`` arguments that give it, the run
    id they give, and a note when that is not the stored run's id, and why."""

    bench_args: list[str]
    run_id: str
    note: str = ""

    @property
    def command(self) -> str:
        return " ".join(shlex.quote(part) for part in ["harness", *self.bench_args])


def with_options(command: str, options: list[str]) -> str:
    """A ``harness bench`` command with ``options`` (e.g. ``--force``) added to its own, before the ``--`` that
    starts its config overrides (after it, an option would read as a bad override)."""
    head, sep, tail = command.partition(" -- ")
    return " ".join([head, *(shlex.quote(option) for option in options)]) + sep + tail


def rebuild(run_dir: Path, settings: dict[str, Any] | None = None) -> Rebuilt | str:
    """The stored run in ``run_dir`` composed again (:class:`Rebuilt`), or why it cannot be. A member of a stack is
    rerun with its stack (``--seeds``, its members' seeds), as it was trained. ``settings`` (dotted config keys)
    change the stored config first, e.g. a training budget (:func:`reports.budgets.checkpoint_budget`): a run of
    another config, so no note on its id."""
    results = json.loads((run_dir / "results.json").read_text())
    stored = safe_load_yaml((run_dir / "config.yaml").read_text())
    task, model, profile, seed = results["task"], results["model"], results["profile"], int(results["seed"])
    try:
        defaults = _flat(OmegaConf.to_container(compose(task, model, profile, [f"seed={seed}"]).cfg, resolve=True))
    except UserError as exc:
        return f"its task, model or profile no longer composes ({exc})"
    wanted = {**_flat(stored), **(settings or {})}
    set_by_run = {key: value for key, value in wanted.items() if key not in defaults}  # e.g. a resolved data source
    overrides = [f"{key}={_value(value)}" for key, value in sorted(wanted.items())
                 if key not in IGNORED and key not in set_by_run and defaults[key] != value]
    try:
        again = compose(task, model, profile, [f"seed={seed}", *overrides]).cfg
    except UserError as exc:
        return f"its config no longer composes ({exc})"
    OmegaConf.set_struct(again, False)
    for key, value in {**set_by_run, "data.fingerprint": wanted.get("data.fingerprint")}.items():
        OmegaConf.update(again, key, value, force_add=True)
    seeds = stack_seeds(run_dir, results)
    chosen = ["--seeds", ",".join(map(str, seeds))] if seeds else ["--seed", str(seed)]
    args = ["bench", "--task", task, "--model", model, "--profile", profile, *chosen,
            *(["--", *overrides] if overrides else [])]
    composed_id = run_id(again)
    if settings or composed_id == results["run_id"]:
        return Rebuilt(args, composed_id)
    added = sorted(key for key in defaults if key not in wanted)
    return Rebuilt(args, composed_id, "a new run id: config keys added since the run (at their defaults): "
                   + ", ".join(added) if added else "a new run id: a default the run relied on has changed")


def reproduce(run_dir: Path, settings: dict[str, Any] | None = None) -> tuple[str | None, str]:
    """(the ``harness bench`` command that composes the stored run in ``run_dir`` again, or None when it cannot be
    composed; a note when the command's run id will not be the stored one, or why there is no command), as
    :func:`rebuild` composes it."""
    rebuilt = rebuild(run_dir, settings)
    return (None, rebuilt) if isinstance(rebuilt, str) else (rebuilt.command, rebuilt.note)


def stack_seeds(run_dir: Path, results: dict[str, Any]) -> list[int] | None:
    """The seeds of the stack a run trained in (``stack`` in its results.json: the members' run ids), read from
    its members' results beside it, in the stack's order; None for a run trained alone, or when a member is not
    in the same store (the run is then rerun alone, with its own seed: the same run id). Of a mixed stack (a
    sweep's ``stack_grid``: members of other data or optimiser settings), only the members of the run's own
    config count: ``--seeds`` stacks those; with no other, the run is rerun alone."""
    stack = results.get("stack")
    if not isinstance(stack, list) or len(stack) < 2:
        return None
    own = _without_seed(run_dir)
    seeds = []
    for member in stack:
        folder = run_dir.parent / str(member)
        try:
            seed = int(json.loads((folder / "results.json").read_text())["seed"])
            same_config = _without_seed(folder) == own
        except (OSError, ValueError, KeyError, TypeError, yaml.YAMLError):
            return None
        if same_config:
            seeds.append(seed)
    return seeds if len(seeds) > 1 else None


def _without_seed(run_dir: Path) -> dict[str, Any]:
    """A stored run's config (its config.yaml, flattened) without its seed."""
    flat = _flat(safe_load_yaml((run_dir / "config.yaml").read_text()))
    flat.pop("seed", None)
    return flat


def imported(row: dict[str, Any], paths: list[str]) -> list[str]:
    """The files among ``paths`` (relative to the project) that the run in ``row`` recorded as imported."""
    files = recorded_files(row)
    return [path for path in paths if path in files]


def wall_hours(rows: list[dict[str, Any]]) -> float:
    """Hours of wall time the runs in ``rows`` took. The members of a stack (``stack`` in their results.json)
    each record the stack's wall time: one stack counts once (its longest member's), not once per member."""
    stacks: dict[tuple[str, ...], float] = {}
    total = 0.0
    for row in rows:
        seconds = float(row.get("wall_time_s") or 0.0)
        stack = row.get("stack")
        if isinstance(stack, list) and len(stack) > 1:
            key = tuple(str(member) for member in stack)
            stacks[key] = max(stacks.get(key, 0.0), seconds)
        else:
            total += seconds
    return (total + sum(stacks.values())) / 3600.0
