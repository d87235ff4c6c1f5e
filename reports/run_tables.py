"""A run page's own tables: its results metrics (:func:`metric_rows`), a curriculum's stages
(:func:`stage_rows`) and its stored per-example predictions (:func:`predictions_view`)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from harness.runs import FLOAT32_SLACK
from reports.store import RunRecord
from reports.tables import MAIN_METRIC, as_number, fmt, fmt_count, fmt_percent, read_json_object


def metric_rows(metrics: dict[str, Any]) -> list[dict[str, str]]:
    rows = []
    for name in sorted(metrics):
        value = metrics[name]
        if isinstance(value, int | float) and not isinstance(value, bool):
            percent = f"{100 * value:.2f}%" if name.endswith(("/acc", "/error")) or "/win_rate" in name else ""
            rows.append({"name": name, "value": f"{value:.6g}", "percent": percent})
        else:
            rows.append({"name": name, "value": str(value), "percent": ""})
    return rows


def stage_rows(run: RunRecord) -> list[dict[str, Any]]:
    rows = []
    for name, stage in run.stages.items():
        results = stage["results"]
        best = results.get("best") if isinstance(results.get("best"), dict) else {}
        tasks = results.get("tasks")
        metrics = results.get("metrics") if isinstance(results.get("metrics"), dict) else {}
        acc = metrics.get(MAIN_METRIC)
        rows.append({"stage": name, "status": stage["status"],
                     "tasks": ", ".join(map(str, tasks)) if isinstance(tasks, list) else "–",
                     "steps": fmt_count(results.get("steps")),
                     "best": f"{best.get('metric')} = {fmt(best.get('value'), 4)} at step {best.get('step')}"
                     if best else "–",
                     "acc": fmt(100 * acc) if isinstance(acc, int | float) else "–"})
    return rows


PREDICTIONS_SHOWN = 12


def predictions_view(run: RunRecord) -> dict[str, Any] | None:
    """A run's stored per-example predictions (harness/runners/predictions.py): per test split the examples,
    the wrong ones and the accuracy recomputed from the file beside the reported one; and a sample of wrong
    answers (as text when the task renders examples, else as class ids). None when the run has none."""
    folder = run.path / "predictions"
    summary = read_json_object(folder / "summary.json")
    if summary is None:
        return None
    splits = []
    for split, numbers in summary.items():
        numbers = numbers if isinstance(numbers, dict) else {}
        acc, reported = as_number(numbers.get("acc")), as_number(numbers.get("reported_acc"))
        splits.append({"split": split, "examples": fmt_count(numbers.get("examples")),
                       "wrong": fmt_count(numbers.get("wrong")),
                       "acc": fmt_percent(acc), "reported": fmt_percent(reported),
                       "agrees": _agreement(acc, reported, as_number(numbers.get("examples")))})
    try:
        wrong = json.loads((folder / "wrong.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        wrong = None
    text = isinstance(wrong, list)
    if not text:
        wrong = _wrong_rows(folder)
    return {"splits": splits, "wrong": (wrong or [])[:PREDICTIONS_SHOWN * 4], "text": text,
            "file": f"{run.rel_path}/predictions/predictions.csv.gz", "gpu": run.gpu}


def _agreement(acc: float | None, reported: float | None, examples: float | None) -> str:
    """The "agree" cell of a split: yes within float32 rounding, else the difference in points and in examples."""
    if acc is None or reported is None:
        return "–"
    if abs(acc - reported) <= FLOAT32_SLACK:
        return "yes"
    apart = "" if not examples else f", {fmt_count(round(abs(acc - reported) * examples))} example(s)"
    return f"no ({100 * (acc - reported):+.2f} points{apart})"


def _wrong_rows(folder: Path) -> list[dict[str, Any]]:
    """The first wrong rows of each split of the predictions table ([] when it cannot be read)."""
    import csv
    import gzip

    shown: Counter[str] = Counter()
    rows = []
    try:
        with gzip.open(folder / "predictions.csv.gz", "rt", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                if row.get("correct") == "0" and shown[row["split"]] < PREDICTIONS_SHOWN:
                    shown[row["split"]] += 1
                    rows.append(row)
    except (OSError, EOFError, ValueError, KeyError):
        return []
    return rows
