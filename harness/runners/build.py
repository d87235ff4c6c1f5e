"""What a run computes: its task and data, its model (seeded), and the runner that trains it.

The launcher (:mod:`harness.runners.launch`) organises a run: its directory, statuses and provenance, and with
:mod:`harness.runners.existing_run`, what is done with a run directory that exists already (resuming). This module
holds the part of a run's life that decides its numbers: building the task and its data fingerprint, loading the
data, seeding, building the model, and handing both to the supervised, curriculum or RL runner. It is part of every
run's code fingerprint (:mod:`harness.provenance`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import open_dict

from harness.config import Composed, drop_redundant_test_sources
from harness.errors import UserError
from harness.paths import check_data_dir
from harness.registry import load_entry
from harness.runs import Run


@dataclass
class Prepared:
    """A run's task object, the data it will read, and what was built before its directory exists."""

    task: Any
    data: dict[str, Any] = field(default_factory=dict)  # source, files, fingerprint (a task's describe_data)
    loaded: Any = None  # supervised single runs: the TaskData
    model: Any = None  # supervised single runs: the model, built after seeding
    notes: list[str] = field(default_factory=list)  # settings left out of the config, said before the run


def prepare_task(composed: Composed) -> Prepared:
    """Build the task (it validates its settings) and pin what depends on this machine.

    A task may resolve ``task.source: auto`` to the source it will really use (official files or its
    generator), and describes the data it will read (``describe_data``): its fingerprint goes into the
    config as ``data.fingerprint`` before the run id is computed, so runs on different data (official files
    and generated ones, or a corrupted copy of the files) never share a run id.
    """
    check_data_dir()
    task = load_entry(composed.task.entry)(composed.cfg)
    data: dict[str, Any] = task.describe_data() if hasattr(task, "describe_data") else {}
    with open_dict(composed.cfg):
        if hasattr(task, "resolve_source"):
            composed.cfg.task.source = task.resolve_source()
        composed.cfg.data.fingerprint = data.get("fingerprint")
    notes = drop_redundant_test_sources(composed.cfg)
    return Prepared(task=task, data=data, notes=notes)


def _model_error(composed: Composed, exc: Exception) -> UserError:
    return UserError(f"{composed.model.name} cannot be built from this config: {exc}")


def build_before_start(composed: Composed, prepared: Prepared) -> None:
    """Load the data and build the model (RL: the env and the agent) so that a bad data file or a bad model
    setting fails before the run directory exists."""
    import torch

    cfg = composed.cfg
    model_entry = composed.model.interfaces[composed.task.interface]
    if composed.kind == "rl":
        env = prepared.task.env_creator(prepared.task.env_config())
        try:
            shape = tuple(int(d) for d in env.observation_space.shape)
            load_entry(model_entry)(cfg.model, cfg.agent, shape, int(env.action_space.n))
        except ValueError as exc:
            raise _model_error(composed, exc) from None
        finally:
            env.close()
        return
    if cfg.train.threads:
        torch.set_num_threads(int(cfg.train.threads))
    if cfg.protocol.name == "curriculum":
        return  # each stage loads its own data and builds its own model
    import lightning.pytorch as pl

    from harness.runners.analysis import check_analysis_split

    prepared.loaded = prepared.task.load()
    check_analysis_split(cfg, prepared.loaded)
    pl.seed_everything(int(cfg.seed), workers=True, verbose=False)
    try:
        prepared.model = load_entry(model_entry)(cfg.model, prepared.loaded.info)
    except ValueError as exc:
        raise _model_error(composed, exc) from None


def _device_description() -> str:
    import torch

    if torch.cuda.is_available():
        return f"cuda: {torch.cuda.get_device_name(0)}"
    return f"cpu, {torch.get_num_threads()} threads"


def train(cfg: Any, composed: Composed, prepared: Prepared, run: Run, tracker: Any,
           results: dict[str, Any]) -> dict[str, Any]:
    from harness.runners.supervised import train_and_test

    results.update(device=_device_description())
    model_entry = composed.model.interfaces[composed.task.interface]
    if composed.task.kind == "rl":
        from harness.runners.rl import train_rl

        return train_rl(cfg, prepared.task, model_entry, run, tracker, results)
    if cfg.protocol.name == "curriculum":
        from harness.runners.curriculum import run_curriculum

        return run_curriculum(cfg, composed.task.entry, model_entry, run, tracker)
    data, model = prepared.loaded, prepared.model
    print(f"data: {data.source}", flush=True)
    results.update(data_source=data.source)
    run.write_results(results)
    results["parameters"] = sum(p.numel() for p in model.parameters())
    return train_and_test(cfg, data, model, run, tracker)
