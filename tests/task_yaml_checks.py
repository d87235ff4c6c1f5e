"""Checks of a task's task.yaml shared by the task test files: its keys' types, as config composition reads them,
and its profiles."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig, OmegaConf

from harness.errors import UserError
from harness.registry import TaskSpec, task_spec_from_yaml
from harness.schema import KeyType, check_value, key_type, parse_entry


def schema_type(task_yaml: Path, key: str, spec: TaskSpec | None = None) -> KeyType | None:
    """The type of ``task.<key>`` from task.yaml's default and schema entry, as config composition reads it
    (``spec``: the file already read)."""
    spec = spec or task_spec_from_yaml(task_yaml)
    declared = spec.schema.get(f"task.{key}")
    entry = parse_entry(f"task.{key}", declared, str(task_yaml)) if declared is not None else None
    return key_type(f"task.{key}", spec.config["task"][key], entry)


def profile_configs(task_yaml: Path, name: str, interface: str, kind: str) -> list[DictConfig]:
    """Check task.yaml's name, interface, kind and its three profiles, every key typed and every default and
    profile value of its key's type; returns each profile's run config (seed 0, the task section) to build."""
    spec = task_spec_from_yaml(task_yaml)
    assert spec.interface == interface and spec.kind == kind and spec.name == name
    assert set(spec.profiles) == {"smoke", "cpu", "paper"}
    assert {key.removeprefix("task.") for key in spec.schema} <= set(spec.config["task"])
    for key, default in spec.config["task"].items():  # every key typed, every default and profile value fits
        key_kind = schema_type(task_yaml, key, spec)
        assert key_kind is not None or key == "name", key
        for value in [default] + [p["task"][key] for p in spec.profiles.values() if key in p["task"]]:
            if key_kind is not None:
                check_value(f"task.{key}", value, key_kind)
    return [OmegaConf.merge({"seed": 0, "task": spec.config["task"]}, {"task": profile["task"]})  # type: ignore[misc]
            for profile in spec.profiles.values()]


def check_schema_rejects_as_task_does(task_yaml: Path, key: str, value: Any, make: Callable[..., Any]) -> None:
    """A bad ``task.<key>`` value fails the schema check and the task's own check, both naming the key."""
    kind = schema_type(task_yaml, key)
    assert kind is not None
    with pytest.raises(UserError, match=f"task.{key}"):
        check_value(f"task.{key}", value, kind)
    with pytest.raises(UserError, match=f"task.{key}"):
        make(**{key: value})
