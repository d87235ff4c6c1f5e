"""Figures tasks/babi/README.md quotes from the shipped speed records (results/perf/babi_tasks*.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "tasks" / "babi" / "README.md"


def _tasks(record: str) -> dict[str, dict[str, float]]:
    """The per-task figures of one shipped speed record."""
    return json.loads((ROOT / "results" / "perf" / f"{record}.json").read_text())["figures"]["tasks"]


def _prose() -> str:
    """The README's text with its line breaks folded into spaces."""
    return " ".join(README.read_text().split())


def test_the_padded_records_task_1_speed_and_slow_tasks_are_those_the_record_holds() -> None:
    tasks = _tasks("babi_tasks")
    said = re.search(r"task 1 trains at ([\d,]+) examples/s, and five tasks are slower than a third of it, "
                     r"2, 3, 5, 7 and 8 \(([\d.]+), ([\d.]+), ([\d.]+), ([\d.]+) and ([\d.]+) of task 1\)", _prose())
    assert said is not None
    assert int(said.group(1).replace(",", "")) == round(tasks["1"]["examples_per_s"])
    ratios = [float(value) for value in said.groups()[1:]]
    assert ratios == [round(tasks[task]["vs_task_1"], 2) for task in ("2", "3", "5", "7", "8")]
    assert sorted(task for task, figures in tasks.items() if figures["vs_task_1"] < 1 / 3) == ["2", "3", "5", "7", "8"]


def test_every_task_setting_has_a_row_in_the_settings_table() -> None:
    import yaml

    keys = set(yaml.safe_load((ROOT / "tasks" / "babi" / "task.yaml").read_text())["config"]["task"]) - {"name"}
    section = README.read_text().split("## Settings (`task.*`)")[1].split("\n## ")[0]
    named = {key for row in section.splitlines() if row.startswith("| `")
             for key in re.findall(r"`(\w+)`", row.split(" | ")[0])}
    assert keys <= named, sorted(keys - named)
