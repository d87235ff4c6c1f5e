"""A fingerprint of the RLlib algorithm settings the RL runner builds, for showing that an edit to that code changes
nothing an RL run was given (``harness carry ... --probe harness.runners.rl_probe``; :mod:`harness.code_changes`).

RL runs cannot be trained again bit for bit (the learner and the env runners are separate processes). An edit to
:func:`harness.runners.rl.build_algorithm_config` is shown instead on what it returns: for the config of every RL
reference run in ``results/`` (as stored, in ``config.yaml``), the ``AlgorithmConfig`` is built as the runner
builds it and its settings (``AlgorithmConfig.to_dict()``, classes by their qualified names) go into one hash. The
same hash before and after an edit means every run would be given the same algorithm, resources included.
Nothing is trained and Ray is not started.

    python -m harness.runners.rl_probe            # prints the hash (about 10 s: importing RLlib)
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from harness import PROJECT_ROOT


def _plain(value: Any) -> Any:
    """``value`` with classes and functions as their qualified names: a stable text across processes."""
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in sorted(value.items(), key=lambda pair: str(pair[0]))}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, type) or callable(value):
        return f"{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', type(value).__qualname__)}"
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return type(value).__qualname__  # an object whose repr may carry its address


def rl_configs(project: Path | None = None) -> list[tuple[Path, DictConfig]]:
    """The stored configs of the RL reference runs (those with an ``rl`` section) of ``project`` (default: the
    working project that ``harness carry`` names in ``$HARNESS_PROBE_PROJECT``, so that the code of the revision
    before an edit reads the same runs, else this tree), each with its path, in a fixed order, each read once."""
    root = project or Path(os.environ.get("HARNESS_PROBE_PROJECT") or PROJECT_ROOT)
    loaded = ((path, OmegaConf.load(path)) for path in sorted((root / "results").glob("*/*/*/config.yaml")))
    return [(path, cfg) for path, cfg in loaded if "rl" in cfg]


def probe() -> str:
    """The hash (module docstring)."""
    from harness.registry import REGISTRY, load_entry
    from harness.runners.rl import build_algorithm_config

    digest = hashlib.sha256()
    for path, cfg in rl_configs():
        task_spec, model_spec = REGISTRY.tasks[cfg.task.name], REGISTRY.models[cfg.model.name]
        task = load_entry(task_spec.entry)(cfg)
        settings = build_algorithm_config(cfg, task, model_spec.interfaces[task_spec.interface]).to_dict()
        digest.update(f"{path.parent.name}\n{_plain(settings)!r}\n".encode())
    return digest.hexdigest()


if __name__ == "__main__":
    print(probe())
