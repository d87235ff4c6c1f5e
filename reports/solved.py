"""When a seed has solved a task, for the index's rankings (:func:`reports.index_tables.rankings`): the tasks'
criteria in ``reports/solved.yaml``, how many seeds met one and how fast, and the criterion as a row states it."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.runs import FLOAT32_SLACK
from reports.run_progress import recorded_wall_time
from reports.settings import check as check_settings
from reports.settings import differences
from reports.store import HELD_OUT, RunRecord
from reports.tables import EVAL_RETURN, EVAL_WIN, HELD_OUT_ACC, Headline, as_number, fmt_count

SOLVED_FILE = Path(__file__).with_name("solved.yaml")
"""The tasks' criteria for having solved them, each with its source (:func:`load_criteria`)."""


SOLVED_TOLERANCE = FLOAT32_SLACK
"""How far below a threshold a value may fall and still reach it: accuracies are float32 fractions, and 950 right of
1,000 is stored as 0.94999999."""


@dataclass(frozen=True)
class Criterion:
    """When a seed has solved a task: its held-out ``metric`` (None: the metric its setting is ranked by) reached
    ``threshold``; how fast is when its validation curve ``curve`` (None: ``val/acc``, or an RL run's selection
    column) first did. ``settings``: the config it was stated for (:mod:`reports.settings`)."""

    threshold: float
    metric: str | None = None
    curve: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)


def load_criteria(path: Path = SOLVED_FILE) -> dict[str, Criterion]:
    """The criteria of ``path`` by task (see the file's header). Raises ``ValueError`` naming the file and task
    for an entry it cannot read; an absent file has none."""
    if not path.exists():
        return {}
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a mapping of tasks")
    criteria = {}
    for task, entry in data.items():
        where = f"{path}: {task}"
        if not isinstance(entry, dict) or not set(entry) <= {"threshold", "metric", "curve", "settings"}:
            raise ValueError(f"{where}: must map threshold (and optionally metric, curve, settings) to values")
        threshold = as_number(entry.get("threshold"))
        if threshold is None:
            raise ValueError(f"{where}: threshold must be a number")
        names = {key: entry.get(key) for key in ("metric", "curve")}
        if any(value is not None and not isinstance(value, str) for value in names.values()):
            raise ValueError(f"{where}: metric and curve must be metric names")
        criteria[str(task)] = Criterion(threshold, names["metric"], names["curve"],
                                        check_settings(entry.get("settings"), where))
    return criteria


def criterion_timing(criterion: Criterion, head: Headline) -> tuple[str, str, str]:
    """The results metric a setting's seeds are judged by (the criterion's, else the one the setting is ranked
    by), the curve column timed (the criterion's, else ``val/acc``, or for RL the selection rounds' column of
    the metric: ``select/win_rate`` for ``eval/win_rate``) and the unit of its steps."""
    rl = head in (EVAL_WIN, EVAL_RETURN)
    metric = criterion.metric or head.metric
    curve = criterion.curve or (metric.replace("eval/", "select/", 1) if rl else "val/acc")
    return metric, curve, "env steps" if rl else "steps"


def _reaches(value: float, threshold: float) -> bool:
    return value >= threshold - SOLVED_TOLERANCE


def has_curve(run: RunRecord, column: str) -> bool:
    """Whether the run's curves hold a value in ``column``."""
    return run.curves is not None and column in run.curves.columns and bool(run.curves[column].notna().any())


def first_reached(run: RunRecord, column: str, threshold: float) -> float | None:
    """The first step at which the run's curve ``column`` reached ``threshold``; None where it never did (or
    the curves lack the column: :func:`has_curve`)."""
    if not has_curve(run, column):
        return None
    curves = run.curves
    points = curves[curves[column].notna() & curves["step"].notna()]  # type: ignore[index]
    reached = points[[_reaches(float(value), threshold) for value in points[column]]]
    return float(reached["step"].min()) if len(reached) else None


def wall_time_at(run: RunRecord, step: float) -> float | None:
    """An estimate of the wall time at which the run was at ``step``: the step times its recorded wall time over
    its final step count (environment steps for RL); None where either is not recorded."""
    wall = recorded_wall_time(run)
    final = as_number(run.results.get("env_steps" if run.is_rl else "steps"))
    return step * wall / final if wall is not None and final else None


def fmt_duration(seconds: float) -> str:
    """``"40 s"``, ``"12.5 min"``, ``"2.1 h"``."""
    if seconds < 100:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 90 * 60 else f"{seconds / 3600:.1f} h"


def solved_summary(runs: list[RunRecord], criterion: Criterion, metric: str, curve: str,
                   unit: str = "steps") -> dict[str, Any] | None:
    """How many of ``runs`` (one per seed) solved their task by ``criterion`` (``k`` of ``n``, the seeds whose
    results hold ``metric``), and, for those whose ``curve`` reached the threshold, the median step at which it
    first did and the median of the wall times :func:`wall_time_at` estimates there. A seed that solved it but
    whose curves lack the column (``lacking``), or whose validation never reached it (``below``), is counted,
    not timed. None where no seed reports ``metric`` or the runs do not share the criterion's settings."""
    if any(differences(run, criterion.settings) for run in runs):
        return None
    measured = [run for run in runs if run.metric(metric) is not None]
    if not measured:
        return None
    solved = [run for run in measured if _reaches(run.metric(metric), criterion.threshold)]  # type: ignore[arg-type]
    steps: list[float] = []
    walls: list[float | None] = []
    for run in solved:
        step = first_reached(run, curve, criterion.threshold)
        if step is not None:
            steps.append(step)
            walls.append(wall_time_at(run, step))
    lacking = sum(not has_curve(run, curve) for run in solved)
    below = len(solved) - len(steps) - lacking
    median_steps = statistics.median(steps) if steps else None
    median_wall = statistics.median(walls) if walls and None not in walls else None  # type: ignore[type-var]
    text = f"solved {len(solved)}/{len(measured)}"
    if median_steps is not None:
        wall = f"≈ {fmt_duration(median_wall)}" if median_wall is not None else "wall time –"
        text += f", median {fmt_count(median_steps)} {unit} ({wall})"
        text += f" over {len(steps)}" if len(steps) < len(solved) else ""
    elif solved:
        text += f", {unit} –"
    notes = ([f"{lacking} without {curve} in {'its' if lacking == 1 else 'their'} curves"] if lacking else []) + \
        ([f"{below} whose {curve} never reached it"] if below else [])
    text += f"; {', '.join(notes)}" if notes else ""
    return {"k": len(solved), "n": len(measured), "steps": median_steps, "wall_s": median_wall,
            "timed": len(steps), "lacking": lacking, "below": below, "text": text}


def metric_name(metric: str) -> str:
    """A results metric as a row names it (the derived held-out mean in words)."""
    return HELD_OUT_ACC.header.removesuffix(" (%)") + " (mean over the sets)" if metric == HELD_OUT else metric


def criterion_text(criterion: Criterion, metric: str, curve: str, unit: str = "steps") -> str:
    """The criterion as a row states it: ``"solved: test/acc ≥ 95%; how fast: steps to the first val/acc ≥
    95%"``."""
    percent = metric.endswith("/acc") or "win_rate" in metric
    threshold = f"{100 * criterion.threshold:g}%" if percent else f"{criterion.threshold:g}"
    return f"solved: {metric_name(metric)} ≥ {threshold}; how fast: {unit} to the first {curve} ≥ {threshold}"
