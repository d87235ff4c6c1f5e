"""The cells of the README's result tables: a metric's mean ± sd over seeds, run ids, wall times and what the runs
were trained on, each from the stored runs (:mod:`reports.readme` and its sections)."""

from __future__ import annotations

import statistics

from reports.store import RunRecord


def mean_sd(values: list[float], scale: float = 100.0, decimals: int = 1) -> str:
    if not values:
        return "–"
    mean = statistics.fmean(values) * scale
    text = f"{mean:.{decimals}f}"
    return text + (f" ± {statistics.stdev(values) * scale:.{decimals}f}" if len(values) > 1 else "")


def metric_values(runs: list[RunRecord], metric: str) -> list[float]:
    return [v for run in runs if (v := run.metric(metric)) is not None]


def run_ids(runs: list[RunRecord]) -> str:
    return ", ".join(f"`{run.run_id}`" + (" (stale)" if run.is_stale else "") for run in runs)


def minutes(runs: list[RunRecord]) -> str:
    """The mean wall time, and where the runs were not ordinary CPU runs: the GPU, the stacks they trained in."""
    times = [float(run.results["wall_time_s"]) for run in runs
             if isinstance(run.results.get("wall_time_s"), int | float)]
    return f"{statistics.fmean(times) / 60:.1f} min{machine_note(runs)}" if times else "–"


def machine_note(runs: list[RunRecord]) -> str:
    """" (stacked: 1 stack of 3; GPU: NVIDIA H100)" for runs trained as stacked members or on a GPU, else ""."""
    notes = []
    stacks = {tuple(run.results["stack"]) for run in runs if run.results.get("stack")}
    if stacks:
        sizes = sorted({len(stack) for stack in stacks})
        notes.append(f"stacked: {len(stacks)} stack{'s' if len(stacks) > 1 else ''} of "
                     + "/".join(map(str, sizes)))
    gpus = sorted({run.gpu for run in runs if run.gpu})
    if gpus:
        notes.append(f"GPU: {', '.join(gpus)}")
    return f" ({'; '.join(notes)})" if notes else ""


def mean_of(runs: list[RunRecord], key: str, within: str | None = None) -> str:
    """The mean of ``results.json``'s ``key`` (or ``within[key]``, e.g. its ``throughput``), without decimals."""
    found = [(run.results.get(within) or {}) if within else run.results for run in runs]
    values = [float(v) for record in found if isinstance(v := record.get(key), int | float)]
    return f"{statistics.fmean(values):,.0f}" if values else "–"
