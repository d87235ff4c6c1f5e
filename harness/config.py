"""Composition and validation of a run's configuration (OmegaConf only).

Order, later wins::

    harness/defaults.yaml (+ harness/defaults_rl.yaml for tasks of kind rl)
      <- task.yaml `config`  <- model yaml `config`  <- tasks/<task>/pairs/<model>.yaml `config`
      <- harness/profiles/<profile>.yaml <- task / model / pair `profiles.<profile>`
      <- command-line overrides (an OmegaConf dotlist such as ``optim.lr=3e-4 task.babi_id=2``)

The first four layers define keys. Struct mode is switched on before the profile layers, so a profile
or an override that names a key which does not exist fails with that key's name. Override values are
checked against the type of the value they replace.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, OmegaConfBaseException

from harness import PROJECT_ROOT
from harness.errors import UserError, did_you_mean
from harness.registry import REGISTRY, ModelSpec, Registry, TaskSpec

PROFILES = ("smoke", "cpu", "paper")
DEFAULTS_FILE = PROJECT_ROOT / "harness" / "defaults.yaml"
RL_DEFAULTS_FILE = PROJECT_ROOT / "harness" / "defaults_rl.yaml"  # merged for tasks of kind rl
PROFILES_DIR = PROJECT_ROOT / "harness" / "profiles"


@dataclass(frozen=True)
class Composed:
    """A resolved configuration with the specs it was built from."""

    cfg: DictConfig
    task: TaskSpec
    model: ModelSpec

    @property
    def run_id(self) -> str:
        return run_id(self.cfg)


def _pair_layers(task: TaskSpec, model: ModelSpec) -> tuple[dict[str, Any], dict[str, Any]]:
    """The optional per-cell file `tasks/<task>/pairs/<model>.yaml`: (config, profiles)."""
    if task.source is None:
        return {}, {}
    path = task.source.parent / "pairs" / f"{model.name}.yaml"
    if not path.exists():
        return {}, {}
    data = OmegaConf.to_container(OmegaConf.load(path)) or {}
    assert isinstance(data, dict)
    return data.get("config") or {}, data.get("profiles") or {}


def _all_keys(node: Any, prefix: str = "") -> list[str]:
    if not isinstance(node, DictConfig):
        return [prefix] if prefix else []
    keys: list[str] = []
    for key in node.keys():
        path = f"{prefix}.{key}" if prefix else str(key)
        keys.append(path)
        keys.extend(_all_keys(node._get_node(key), path) if isinstance(node._get_node(key), DictConfig) else [])
    return keys


def _check_type(key: str, old: Any, new: Any) -> None:
    """A bad value for a known key fails with the key, the value and the expected type."""
    if old is None or new is None or isinstance(old, str):
        return
    if isinstance(old, bool):
        ok = isinstance(new, bool)
    elif isinstance(old, int):
        ok = isinstance(new, int) and not isinstance(new, bool)
    elif isinstance(old, float):
        ok = isinstance(new, int | float) and not isinstance(new, bool)
    elif isinstance(old, list | ListConfig):
        ok = isinstance(new, list | ListConfig)
    elif isinstance(old, dict | DictConfig):
        ok = isinstance(new, dict | DictConfig)
    else:
        ok = True
    if not ok:
        raise UserError(f"bad value for '{key}': {new!r} is not a {type(old).__name__} (default {old!r})")


def _apply_overrides(cfg: DictConfig, overrides: list[str]) -> DictConfig:
    for item in overrides:
        if "=" not in item:
            raise UserError(f"bad override '{item}': expected key=value, e.g. optim.lr=3e-4")
        key, _, raw = item.partition("=")
        key = key.strip().lstrip("+")
        try:
            parsed = OmegaConf.from_dotlist([f"{key}={raw}"])
        except OmegaConfBaseException as exc:
            raise UserError(f"bad override '{item}': {str(exc).splitlines()[0]}") from None
        new_value = OmegaConf.select(parsed, key)
        if OmegaConf.select(cfg, key, default="__missing__") == "__missing__":
            raise UserError(f"unknown config key '{key}'{did_you_mean(key, _all_keys(cfg))}")
        old_value = OmegaConf.select(cfg, key)
        _check_type(key, old_value, new_value)
        try:
            cfg = OmegaConf.merge(cfg, parsed)  # type: ignore[assignment]
        except ConfigKeyError:
            raise UserError(f"unknown config key '{key}'{did_you_mean(key, _all_keys(cfg))}") from None
        except OmegaConfBaseException as exc:
            raise UserError(f"bad value for '{key}': {str(exc).splitlines()[0]}") from None
    return cfg


def _merge_strict(cfg: DictConfig, layer: dict[str, Any], where: str) -> DictConfig:
    try:
        return OmegaConf.merge(cfg, layer)  # type: ignore[return-value]
    except ConfigKeyError as exc:
        key = getattr(exc, "full_key", "") or str(exc).splitlines()[0]
        raise UserError(f"{where} sets unknown config key '{key}'") from None


def compose(
    task_name: str,
    model_name: str,
    profile: str = "cpu",
    overrides: list[str] | None = None,
    registry: Registry = REGISTRY,
) -> Composed:
    """The resolved, struct-mode configuration of one (task, model, profile) run."""
    if profile not in PROFILES:
        hint = did_you_mean(profile, PROFILES)
        raise UserError(f"unknown profile '{profile}'{hint}; profiles: {', '.join(PROFILES)}")
    task, model = registry.check_pair(task_name, model_name)
    pair_config, pair_profiles = _pair_layers(task, model)

    cfg = OmegaConf.load(DEFAULTS_FILE)
    assert isinstance(cfg, DictConfig)
    if task.kind == "rl":
        cfg = OmegaConf.merge(cfg, OmegaConf.load(RL_DEFAULTS_FILE))  # type: ignore[assignment]
    cfg = OmegaConf.merge(cfg, task.config, model.config, pair_config)  # type: ignore[assignment]
    cfg.task.name = task.name  # the registry's names are authoritative
    cfg.model.name = model.name
    cfg.profile = profile
    OmegaConf.set_struct(cfg, True)

    profile_file = PROFILES_DIR / f"{profile}.yaml"
    layers: list[tuple[str, Any]] = [(str(profile_file.relative_to(PROJECT_ROOT)), OmegaConf.load(profile_file))]
    for spec, profiles in ((task, task.profiles), (model, model.profiles), (None, pair_profiles)):
        where = f"{spec.source.relative_to(PROJECT_ROOT) if spec and spec.source else 'pair file'} profiles.{profile}"
        layers.append((where, profiles.get(profile) or {}))
    for where, layer in layers:
        cfg = _merge_strict(cfg, layer, where)

    cfg = _apply_overrides(cfg, list(overrides or []))
    missing = sorted(OmegaConf.missing_keys(cfg))
    if missing:
        raise UserError(f"config keys without a value: {', '.join(missing)}")
    try:
        OmegaConf.resolve(cfg)
    except OmegaConfBaseException as exc:
        raise UserError(f"config does not resolve: {str(exc).splitlines()[0]}") from None
    return Composed(cfg=cfg, task=task, model=model)


def config_hash(cfg: DictConfig) -> str:
    """A short, stable hash of the resolved configuration."""
    text = OmegaConf.to_yaml(cfg, resolve=True, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def run_id(cfg: DictConfig) -> str:
    """A readable name plus the config hash: the same command always maps to the same run."""
    return f"{cfg.task.name}-{cfg.model.name}-{cfg.profile}-s{cfg.seed}-{config_hash(cfg)}"


def save(cfg: DictConfig, path: Path) -> None:
    from harness.runs import atomic_write_text

    atomic_write_text(path, OmegaConf.to_yaml(cfg, resolve=True))
