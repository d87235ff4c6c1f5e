"""The numbers on the pages: the task x model matrix, the published-vs-ours tables and a run's metrics.

Plain data (dicts and strings) for the templates; no HTML here.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from typing import Any

from reports.papers import PaperSpec, TableSpec
from reports.store import SINGLE, RunRecord, cfg_get, main_group, per_seed, variant_label

MAIN_METRIC = "test/acc"
NO_RUN = "no run yet"


def fmt(value: Any, decimals: int = 1) -> str:
    """A number with ``decimals`` places; a dash for none or NaN; anything else as text."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return f"{value:.{decimals}f}"


def mean_sd(values: list[float]) -> tuple[float, float | None]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def anchor(*parts: str) -> str:
    return "runs-" + "-".join(parts)


def status_summary(runs: list[RunRecord]) -> str:
    counts = Counter(run.status for run in runs)
    return ", ".join(f"{counts[status]} {status}" for status in sorted(counts))


# ----- index ---------------------------------------------------------------------------------------------

def _best_variant(runs: list[RunRecord]) -> dict[str, Any] | None:
    """Among the completed runs' configurations, the one with the best mean test/acc over seeds."""
    groups: dict[str, list[RunRecord]] = {}
    for run in runs:
        if run.status == "completed" and run.metric(MAIN_METRIC) is not None:
            groups.setdefault(run.fingerprint, []).append(run)
    best = None
    for key in sorted(groups):
        chosen = per_seed(groups[key])
        mean, sd = mean_sd([100 * run.metric(MAIN_METRIC) for run in chosen])  # type: ignore[operator]
        if best is None or mean > best["mean"]:
            best = {"mean": mean, "text": fmt(mean), "sd": fmt(sd) if sd is not None else None,
                    "variant": variant_label(chosen[0]), "seeds": len(chosen)}
    return best


def matrix(runs: list[RunRecord], papers: list[PaperSpec]) -> dict[str, Any]:
    """Rows: tasks; columns: models; every pair seen in the store or in a paper's table."""
    tasks = {run.task for run in runs}
    models = {run.model for run in runs}
    for paper in papers:
        for table in paper.tables:
            tasks.add(table.task)
            models.update(table.models)
    by_pair: dict[tuple[str, str], list[RunRecord]] = {}
    for run in runs:
        by_pair.setdefault((run.task, run.model), []).append(run)
    rows = []
    for task in sorted(tasks):
        cells = []
        for model in sorted(models):
            pair_runs = by_pair.get((task, model), [])
            if not pair_runs:
                cells.append({"model": model, "empty": True, "text": NO_RUN})
                continue
            seeds = {str(run.seed) for run in pair_runs if run.status == "completed"}
            cells.append({"model": model, "empty": False, "best": _best_variant(pair_runs),
                          "n_runs": len(pair_runs), "n_seeds": len(seeds), "statuses": status_summary(pair_runs),
                          "anchor": anchor(task, model)})
        rows.append({"task": task, "cells": cells})
    return {"models": sorted(models), "rows": rows}


def run_row(run: RunRecord) -> dict[str, Any]:
    acc = run.metric(MAIN_METRIC)
    wall = run.results.get("wall_time_s")
    return {
        "run_id": run.run_id, "page": run.page, "status": run.status, "seed": run.seed,
        "variant": variant_label(run) if run.status != "unreadable" else "–",
        "acc": fmt(100 * acc) if acc is not None else "–", "steps": run.results.get("steps", "–"),
        "wall": fmt(float(wall), 0) if isinstance(wall, int | float) else "–",
        "finished": run.results.get("finished_at") or "–",
    }


def run_groups(runs: list[RunRecord]) -> list[dict[str, Any]]:
    """The runs, one table per (task, model)."""
    groups: dict[tuple[str, str], list[RunRecord]] = {}
    for run in runs:
        groups.setdefault((run.task, run.model), []).append(run)
    return [{"task": task, "model": model, "anchor": anchor(task, model),
             "runs": [run_row(run) for run in groups[(task, model)]]} for task, model in sorted(groups)]


def provenance(runs: list[RunRecord]) -> dict[str, Any]:
    """The git commits and package versions the runs report."""
    commits: dict[str, dict[str, Any]] = {}
    versions: dict[str, set[str]] = {}
    for run in runs:
        git = run.results.get("git")
        if isinstance(git, dict) and git.get("commit"):
            entry = commits.setdefault(str(git["commit"]), {"commit": str(git["commit"]), "runs": 0, "dirty": set()})
            entry["runs"] += 1
            entry["dirty"].add("dirty" if git.get("dirty") else "clean" if git.get("dirty") is False else "unknown")
        found = run.results.get("versions")
        if isinstance(found, dict):
            for package, version in found.items():
                versions.setdefault(str(package), set()).add(str(version))
    return {
        "commits": [{**entry, "dirty": ", ".join(sorted(entry["dirty"]))}
                    for _, entry in sorted(commits.items())],
        "versions": [{"package": package, "versions": ", ".join(sorted(found))}
                     for package, found in sorted(versions.items())],
    }


# ----- paper tables --------------------------------------------------------------------------------------

def _same(config_value: Any, row_value: Any) -> bool:
    if isinstance(config_value, list):
        return [str(v) for v in config_value] == [str(row_value)]
    return config_value is not None and str(config_value) == str(row_value)


def matching_runs(runs: list[RunRecord], table: TableSpec, row: dict[str, Any], model: str) -> list[RunRecord]:
    """Runs of the table's task and ``model`` under the single protocol whose config matches the row."""
    return [run for run in runs
            if run.task == table.task and run.model == model and run.protocol == SINGLE
            and _same(cfg_get(run.config, table.config_key), row.get(table.row_key))]


def colour(diff: float, tolerance: float) -> str:
    if abs(diff) <= tolerance:
        return "match-green"
    if abs(diff) <= 3 * tolerance:
        return "match-amber"
    return "match-red"


def compare_cell(runs: list[RunRecord], table: TableSpec, row: dict[str, Any], model: str) -> dict[str, Any]:
    published = row.get(model)
    d = table.decimals
    pub_mean = float(published[0]) if isinstance(published, list) and published and published[0] is not None \
        else None
    pub_sd = published[1] if isinstance(published, list) and len(published) > 1 else None
    cell: dict[str, Any] = {
        "published": fmt(pub_mean, d) if pub_mean is not None else "–",
        "published_sd": str(pub_sd) if pub_sd is not None else None,
        "ours": NO_RUN, "ours_sd": None, "n": 0, "diff": "", "css": "no-run", "runs": [], "note": None,
        "variant": None, "alternatives": None,
    }
    metric = table.metric_for(row)
    completed = [run for run in matching_runs(runs, table, row, model)
                 if run.status == "completed" and run.metric(metric) is not None]
    if not completed:
        others = matching_runs(runs, table, row, model)
        if others:
            cell["note"] = status_summary(others)
        return cell
    group, others = main_group(completed)
    chosen = per_seed(group)
    mean, sd = mean_sd([table.scale * run.metric(metric) for run in chosen])  # type: ignore[operator]
    cell.update(ours=fmt(mean, d), ours_sd=fmt(sd, d) if sd is not None else None, n=len(chosen),
                runs=[{"run_id": run.run_id, "page": run.page, "seed": run.seed} for run in chosen],
                variant=variant_label(chosen[0]))
    if others:
        alternatives = []
        for other in others:
            other_runs = per_seed(other)
            other_mean, _ = mean_sd([table.scale * run.metric(metric) for run in other_runs])  # type: ignore[operator]
            alternatives.append(f"{variant_label(other_runs[0])}: {fmt(other_mean, d)} (n={len(other_runs)})")
        cell["note"] = f"+{len(others)} other config{'s' if len(others) > 1 else ''}"
        cell["alternatives"] = "; ".join(alternatives)
    if pub_mean is not None:
        diff = mean - pub_mean
        text = f"{diff:+.{d}f}"
        cell.update(diff=text if float(text) != 0 else f"{0:.{d}f}", css=colour(diff, table.tolerance))
    else:
        cell["css"] = "no-published"
    return cell


def compare_table(runs: list[RunRecord], table: TableSpec) -> dict[str, Any]:
    label_keys: list[str] = []
    for row in table.rows:
        label_keys.extend(key for key in table.labels(row) if key not in label_keys)
    rows = [{"labels": [row.get(key, "") for key in label_keys], "metric": table.metric_for(row),
             "cells": [compare_cell(runs, table, row, model) for model in table.models]} for row in table.rows]
    summary = Counter(cell["css"] for row in rows for cell in row["cells"])
    return {"id": table.id, "title": table.title, "protocol": table.protocol, "source": table.source,
            "task": table.task, "config_key": table.config_key, "row_key": table.row_key,
            "tolerance": fmt(table.tolerance, 1), "tolerance3": fmt(3 * table.tolerance, 1),
            "label_keys": label_keys, "models": table.models, "rows": rows,
            "column_notes": [{"model": m, "note": n} for m, n in sorted(table.column_notes.items())],
            "summary": {key: summary.get(key, 0) for key in
                        ("match-green", "match-amber", "match-red", "no-run", "no-published")}}


# ----- one run -------------------------------------------------------------------------------------------

def metric_rows(metrics: dict[str, Any]) -> list[dict[str, str]]:
    rows = []
    for name in sorted(metrics):
        value = metrics[name]
        if isinstance(value, int | float) and not isinstance(value, bool):
            percent = f"{100 * value:.2f}%" if name.endswith(("/acc", "/error")) else ""
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
                     "steps": results.get("steps", "–"),
                     "best": f"{best.get('metric')} = {fmt(best.get('value'), 4)} at step {best.get('step')}"
                     if best else "–",
                     "acc": fmt(100 * acc) if isinstance(acc, int | float) else "–"})
    return rows
