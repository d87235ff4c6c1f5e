"""Rules of planning reruns (harness/rerun.py), against its docstrings: the wall time of stale runs counts a stack
once (its longest member's, as each member records the stack's wall time); an option added to a command goes before
the ``--`` that starts its config overrides; and a member of a mixed stack (a sweep's
``stack_grid``) is rerun with the members of its own config only, or alone where it has none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from harness.rerun import stack_seeds, wall_hours, with_options


def test_a_stack_counts_once_at_its_longest_member() -> None:
    rows: list[dict[str, Any]] = [
        {"wall_time_s": 3600.0, "stack": ["a", "b"]},  # the two members of one stack, trained together in an hour
        {"wall_time_s": 3000.0, "stack": ["a", "b"]},
        {"wall_time_s": 1800.0, "stack": ["c"]},  # a stack of one is a run alone
        {"wall_time_s": 1800.0},
        {"wall_time_s": None},
    ]
    assert wall_hours(rows) == 2.0


def _member(store: Path, name: str, seed: int, lr: float) -> Path:
    folder = store / name
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(yaml.safe_dump({"seed": seed, "optim": {"lr": lr}}))
    (folder / "results.json").write_text(json.dumps({"run_id": name, "seed": seed}))
    return folder


def test_a_member_of_a_mixed_stack_is_rerun_with_the_members_of_its_own_config(tmp_path: Path) -> None:
    a, b, c = _member(tmp_path, "a", 0, 0.1), _member(tmp_path, "b", 1, 0.1), _member(tmp_path, "c", 2, 0.2)
    assert stack_seeds(a, {"stack": ["a", "b", "c"]}) == [0, 1]
    assert stack_seeds(c, {"stack": ["a", "b", "c"]}) is None  # the only one of its config: rerun alone
    assert stack_seeds(a, {"stack": ["a", "c"]}) is None
    assert stack_seeds(b, {"stack": ["a", "b"]}) == [0, 1]  # the stack's order, not the member's first
    assert stack_seeds(a, {"stack": ["a", "gone"]}) is None  # a member not in the store: rerun alone


def test_an_option_goes_before_the_config_overrides() -> None:
    command = "harness bench --task babi --model lstm --seed 0 -- optim.lr=0.003 task.babi_id=2"
    assert with_options(command, ["--force"]) == ("harness bench --task babi --model lstm --seed 0 --force -- "
                                                  "optim.lr=0.003 task.babi_id=2")
    assert with_options("harness bench --task babi", ["--runs-dir", "a b"]) == ("harness bench --task babi "
                                                                                "--runs-dir 'a b'")
