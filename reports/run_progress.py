"""How far a run got and how long it took, as the tables show it: its steps and epochs (for a run not completed,
from its curves so far) and its recorded wall time."""

from __future__ import annotations

from typing import Any

from reports.store import RunRecord
from reports.tables import as_number, fmt_count


def curve_progress(run: RunRecord) -> dict[str, int]:
    """The steps and epochs (``{"steps": n, "epochs": n}``, either left out) that a run which did not complete
    reached by its curves, where they stand in for ``results.json``'s: a run still running (or killed) has not
    brought that up to date, and a diverged or failed run records 0. Empty for a completed run."""
    curves = run.curves
    if curves is None or curves.empty or run.status == "completed":
        return {}
    found = {}
    for key, column in (("steps", "step"), ("epochs", "epoch")):
        if column not in curves or not curves[column].notna().any():
            continue
        reached = int(curves[column].max())
        recorded = run.results.get(key)
        if run.status == "running" or not isinstance(recorded, int | float) or reached > recorded:
            found[key] = reached
    return found


def progress(run: RunRecord) -> dict[str, Any]:
    """Steps and epochs as shown (thousands separated, as everywhere else): from ``results.json``, which a run still
    running (or killed) has not brought up to date, so for such a run from its curves so far
    (:func:`curve_progress`)."""
    found = {key: fmt_count(run.results[key]) if key in run.results else "–" for key in ("steps", "epochs")}
    for key, reached in curve_progress(run).items():
        found[key] = (f"{reached:,} (its curves so far)" if run.status == "running" else
                      f"{reached:,} (its curves, up to where it {_ENDED.get(run.status, 'ended')})")
    return found


_ENDED = {"diverged": "diverged", "failed": "failed", "interrupted": "was interrupted"}


def recorded_wall_time(run: RunRecord) -> float | None:
    """The wall time ``results.json`` records, in seconds; None where it records no number, or 0 s for a running
    (or killed) run: ``results.json`` holds 0 s until an attempt ends, which is not how long it has run."""
    wall = as_number(run.results.get("wall_time_s"))
    return None if wall is None or (run.status == "running" and wall == 0) else wall


def wall_time(run: RunRecord, text: str) -> str:
    """``text`` (the recorded wall time, formatted), or "–" for a running (or killed) run that has recorded none
    yet (:func:`recorded_wall_time`)."""
    return "–" if run.status == "running" and recorded_wall_time(run) is None else text
