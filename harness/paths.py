"""Where data is read from and generated data is cached (environment variables, light to import)."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """Official dataset files, in each dataset's official layout: ``$HARNESS_DATA_DIR`` or ``./data``."""
    return Path(os.environ.get("HARNESS_DATA_DIR", "data"))


def data_dir_label() -> str:
    return "HARNESS_DATA_DIR" if "HARNESS_DATA_DIR" in os.environ else "default ./data"


def cache_dir() -> Path:
    """Generated datasets, cached on disk: ``$HARNESS_CACHE_DIR`` or ``./.cache/harness``."""
    return Path(os.environ.get("HARNESS_CACHE_DIR", ".cache/harness"))
