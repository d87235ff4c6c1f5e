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
    cpus_per_trial: 1
    max_concurrent: null             # null: as many trials as the cluster's CPUs allow

Space types: ``grid`` / ``choice`` (``values``), ``uniform`` / ``loguniform`` (``low``, ``high``),
``randint`` (``low``, ``high``). A trial composes its config exactly as ``make bench`` does and calls
the same launcher, so its run is resumable, reported without retraining once completed, and stored as
``failed`` (the other trials go on) when it raises. With ``RAY_ADDRESS`` set the sweep runs on that
existing Ray cluster (the run store must then be on storage every node sees); otherwise a local Ray
sized to this machine is started.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.errors import UserError

SPACE_TYPES = ("grid", "choice", "uniform", "loguniform", "randint")
# Set before Ray is imported. Ray starts workers at nice 15 by default, which starves trials beside any
# other work on a small machine.

@dataclass
class Sweep:
    name: str
    task: str
    models: list[str]
    profile: str = "cpu"
    seeds: list[int] = field(default_factory=lambda: [0])
    overrides: list[str] = field(default_factory=list)
    space: dict[str, dict[str, Any]] = field(default_factory=dict)
    num_samples: int = 1
    cpus_per_trial: float = 1
    max_concurrent: int | None = None


def load_sweep(path: Path) -> Sweep:
    """Read and check a sweep file; every mistake is a UserError naming the file."""
    if not path.exists():
        raise UserError(f"no sweep file {path}")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise UserError(f"{path}: not valid YAML ({exc.__class__.__name__})") from None
    known = set(Sweep.__dataclass_fields__)
    unknown = sorted(set(data) - known - {"description"})
    if unknown:
        raise UserError(f"{path}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    for key in ("name", "task", "models"):
        if key not in data:
            raise UserError(f"{path}: missing '{key}'")
    data.pop("description", None)
    sweep = Sweep(**data)
    for key, spec in sweep.space.items():
        kind = (spec or {}).get("type")
        if kind not in SPACE_TYPES:
            raise UserError(f"{path}: space '{key}' has type {kind!r}; one of {', '.join(SPACE_TYPES)}")
    return sweep


def check_sweep(sweep: Sweep) -> None:
    """Compose one config per model with every searched key, so a bad name fails before Ray starts."""
    from harness.config import compose

    for model in sweep.models:
        probe = [f"{key}={_flow(_example(spec))}" for key, spec in sweep.space.items()]
        compose(sweep.task, model, sweep.profile, [*sweep.overrides, *probe])


def _example(spec: dict[str, Any]) -> Any:
    return spec["values"][0] if "values" in spec else spec["low"]


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
    return {"model": tune.grid_search(list(sweep.models)), "seed": tune.grid_search(list(sweep.seeds)),
            "space": space}


def trial_overrides(sweep: Sweep, trial: dict[str, Any]) -> list[str]:
    """The overrides of one trial: the sweep's fixed ones, the sampled values, the seed and the W&B group."""
    sampled = [f"{key}={_flow(value)}" for key, value in sorted(trial["space"].items())]
    return [*sweep.overrides, *sampled, f"seed={trial['seed']}", f"tracking.group={sweep.name}",
            f"tracking.tags=[sweep-{sweep.name}]"]


def trial_bundles(sweep: Sweep) -> list[dict[str, float]] | None:
    """For RL sweeps, the placement group one trial needs: the trial's own process (RLlib's driver and
    local learner) plus one CPU per EnvRunner, in the order RLlib fills it; None for supervised sweeps."""
    from harness.config import compose

    composed = compose(sweep.task, sweep.models[0], sweep.profile, list(sweep.overrides))
    if composed.task.kind != "rl":
        return None
    runners = int(composed.cfg.rl.num_env_runners)
    return [{"CPU": float(sweep.cpus_per_trial)}] + [{"CPU": 1.0}] * runners


def _run_trial(trial: dict[str, Any], sweep: Sweep, env: dict[str, str]) -> None:
    """One trial, inside a Ray worker: an ordinary harness run, then its results reported to Tune."""
    import traceback

    from ray import tune

    from harness.config import compose
    from harness.runners.launch import launch
    from harness.runs import run_dir

    os.environ.update(env)
    composed = compose(sweep.task, trial["model"], sweep.profile, trial_overrides(sweep, trial))
    try:
        launch(composed, runs_dir=Path(env["HARNESS_RUNS_DIR"]))
    except BaseException:  # stored as failed by the launcher; the other trials go on
        traceback.print_exc()
    run = run_dir(composed.cfg.task.name, composed.cfg.model.name, composed.run_id, Path(env["HARNESS_RUNS_DIR"]))
    results = run.read_results() if run.exists() else {"status": "failed", "metrics": {}}
    numeric = {k: float(v) for k, v in (results.get("metrics") or {}).items() if isinstance(v, int | float)}
    tune.report({**numeric, "status": results.get("status"), "run_id": composed.run_id})


def run_sweep(sweep: Sweep, runs_dir: Path) -> list[dict[str, Any]]:
    """Run every trial of the sweep on Ray Tune; returns one row per trial (run id, status, metrics)."""
    from harness.runners.ray_session import ray_session
    from harness.tracking import configure_environment

    check_sweep(sweep)
    configure_environment()
    runs_dir = runs_dir.resolve()
    env = {key: str(Path(os.environ.get(key, default)).resolve())
           for key, default in (("HARNESS_DATA_DIR", "data"), ("HARNESS_CACHE_DIR", ".cache/harness"))}
    env["HARNESS_RUNS_DIR"] = str(runs_dir)
    env.update({k: v for k, v in os.environ.items() if k.startswith("WANDB_")})

    with ray_session():
        from ray import tune  # after ray_session has set Ray's environment

        bundles = trial_bundles(sweep)
        resources: Any = {"cpu": sweep.cpus_per_trial} if bundles is None else tune.PlacementGroupFactory(bundles)
        trainable = tune.with_resources(tune.with_parameters(_run_trial, sweep=sweep, env=env), resources)
        tuner = tune.Tuner(
            trainable,
            param_space=_tune_space(sweep),
            tune_config=tune.TuneConfig(num_samples=sweep.num_samples,
                                        max_concurrent_trials=sweep.max_concurrent),
            run_config=tune.RunConfig(name=sweep.name, storage_path=str(runs_dir / "_tune"), verbose=1),
        )
        grid = tuner.fit()
        rows = []
        for result in grid:
            metrics = result.metrics or {}
            rows.append({"run_id": metrics.get("run_id"), "status": metrics.get("status", "failed"),
                         "metrics": {k: v for k, v in metrics.items() if "/" in k and k.startswith(("test", "eval/"))}})
        return sorted(rows, key=lambda row: str(row["run_id"]))
