"""The shipped model settings of ``models/relational/<name>.yaml``, for benchmarks that build a model without
composing a whole run config."""

from __future__ import annotations

from pathlib import Path

import yaml
from omegaconf import DictConfig, OmegaConf

MODELS_DIR = Path(__file__).resolve().parent


def shipped_model_cfg(name: str) -> DictConfig:
    """The ``config.model`` node of ``models/relational/<name>.yaml``."""
    return OmegaConf.create(yaml.safe_load((MODELS_DIR / f"{name}.yaml").read_text())["config"]["model"])
