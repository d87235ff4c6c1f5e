"""How the report spells settings and published figures: a setting that is unset in the config (``null``) or a
boolean reads as the config files write it, never as Python's ``None`` or ``True``."""

from __future__ import annotations

from pathlib import Path

from reports.settings import describe, differences
from reports.store import RunRecord


def _run(train: dict) -> RunRecord:
    return RunRecord(path=Path("x"), rel_path="x", task="relations_game", model="mha", run_id="r", results={},
                     status="completed", config={"task": {"name": "relations_game"}, "train": train})


def test_null_and_booleans_read_as_the_config_spells_them() -> None:
    settings = {"train.max_time_s": None, "train.shuffle": True}
    assert describe(settings) == "train.max_time_s = null; train.shuffle = true"
    assert differences(_run({"max_time_s": 1080, "shuffle": False}), settings) == [
        "max_time_s 1080 ≠ null", "shuffle false ≠ true"]
    assert differences(_run({"max_time_s": None, "shuffle": True}), settings) == []
    assert differences(_run({}), {"train.max_time_s": 600}) == ["max_time_s unset ≠ 600"]
