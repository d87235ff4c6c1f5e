"""A reinforcement-learning run's page table (:func:`rl_summary`): its env steps and throughput, and its final
evaluation beside its last training iteration, overall and per puzzle type."""

from __future__ import annotations

import math
from typing import Any

from reports.store import RunRecord, cfg_get, puzzle_types
from reports.tables import RETURN, WIN_RATE, as_number, fmt, fmt_count, fmt_percent

PUZZLE_TYPES = {
    "boxworld": "L-d: solution length, distractor branches",
    "bridge_boxworld": "L-b-c: solution length, bridge lock (source) and bridge key (target) colours, numbered "
                       "from the gem; L-0-0 without a bridge",
}
"""How the BoxWorld envs name their puzzle types (``info["puzzle_type"]``), for the captions."""


def last_value(run: RunRecord, name: str) -> float | None:
    """The run's final ``name`` from results.json, else the last value of that column in metrics.csv (a run
    still in progress)."""
    value = run.metric(name)
    if value is not None or run.curves is None or name not in run.curves.columns:
        return value
    points = run.curves[name].dropna()
    return float(points.iloc[-1]) if len(points) else None


def _last_iteration(run: RunRecord, name: str) -> float | None:
    """``name`` in the run's last training iteration: results.json's final metrics when it has them, else the last
    row of metrics.csv that has a training win rate. Not the column's last value wherever it was: a puzzle type
    that no episode of the last iteration ended on has no value there, and an older one would pass for it."""
    if run.metrics:
        return run.metric(name)
    curves = run.curves
    if curves is None or name not in curves.columns or "train/win_rate" not in curves.columns:
        return None
    rows = curves[curves["train/win_rate"].notna()]
    if rows.empty:
        return None
    value = as_number(rows[name].iloc[-1])
    return value if value is not None and math.isfinite(value) else None


def rl_summary(run: RunRecord) -> dict[str, Any] | None:
    """An RL run's env steps, throughput and final evaluation beside its last training iteration; None for a
    supervised run."""
    if not run.is_rl:
        return None
    results = run.results
    rate = as_number(cfg_get(results, "throughput.env_steps_per_s"))
    train_time = as_number(results.get("train_time_s"))
    wins = last_value(run, WIN_RATE) is not None or last_value(run, "train/win_rate") is not None
    rows = [{"name": "win rate (%)", "eval": fmt_percent(last_value(run, WIN_RATE)),
             "train": fmt_percent(last_value(run, "train/win_rate"))}] if wins else []
    rows += [
        {"name": "episode return", "eval": fmt(last_value(run, RETURN), 2),
         "train": fmt(last_value(run, "train/episode_return"), 2)},
        {"name": "episode length", "eval": fmt(last_value(run, "eval/episode_len"), 1),  # runs from before it: –
         "train": fmt(last_value(run, "train/episode_len"), 1)},
        {"name": "episodes", "eval": fmt_count(last_value(run, "eval/episodes")),
         "train": fmt_count(last_value(run, "train/episodes"))},
    ]
    types = [{"type": kind, "eval": fmt_percent(last_value(run, f"{WIN_RATE}/{kind}")),
              "train": fmt_percent(_last_iteration(run, f"train/win_rate/{kind}"))} for kind in puzzle_types(run)]
    return {
        "env_steps": fmt_count(results.get("env_steps", results.get("steps"))),
        "iterations": fmt_count(results.get("iterations")),
        "stop_reason": results.get("stop_reason") or "–",
        "train_time": f"{train_time:,.0f} s" if train_time is not None else "–",
        "throughput": f"{rate:,.0f} env steps/s (median over iterations)" if rate is not None else "–",
        "evaluated": any(name.startswith("eval/") for name in run.metrics),
        "algorithm": cfg_get(run.config, "rl.algorithm") or "–",
        "rows": rows, "puzzle_types": types, "puzzle_format": PUZZLE_TYPES.get(run.task, ""),
    }
