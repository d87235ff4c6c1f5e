"""A paper page's tables: each published cell beside ours (:func:`compare_cell`), the like-for-like runs' mean
over seeds, coloured by how far it lies from the published number, or by which side of the paper's line it falls
(:func:`above_line`)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from harness.runs import FLOAT32_SLACK
from reports.papers import TableSpec
from reports.settings import describe, differences
from reports.store import SINGLE, RunRecord, cfg_get, fingerprint_of, main_group, per_seed, variant_label
from reports.tables import NO_RUN, fmt, mean_sd, status_summary


def above_line(value: float, line: float, scale: float = 1.0) -> bool:
    """Whether a figure is above a paper's line between passing and failing (``value > line``, e.g. Table 3's test
    error above 5%), a figure within float32's slack of the line counting as on it: 950 right of 1,000 is stored as
    1 - 0.95 computed in floating point (0.0500000000000000444), which the paper's 5.00 does not fail. ``scale``:
    the factor both are in (100 for percent)."""
    return value > line + scale * FLOAT32_SLACK


def _same(config_value: Any, row_value: Any) -> bool:
    if isinstance(config_value, list):
        return [str(v) for v in config_value] == [str(row_value)]
    return config_value is not None and str(config_value) == str(row_value)


def matching_runs(runs: list[RunRecord], table: TableSpec, row: dict[str, Any], model: str) -> list[RunRecord]:
    """Runs of the row's task and ``model`` under the single protocol whose config matches the row (any
    config when the table has no ``config_key``)."""
    task = table.task_for(row)
    return [run for run in runs
            if run.task == task and run.model == model and run.protocol == SINGLE
            and (table.config_key is None
                 or _same(cfg_get(run.config, table.config_key), row.get(table.row_key)))]


def colour(diff: float, tolerance: float) -> str:
    if abs(diff) <= tolerance:
        return "match-green"
    if abs(diff) <= 3 * tolerance:
        return "match-amber"
    return "match-red"


def _beside(runs: list[RunRecord], metric: str, scale: float, d: int, settings: dict[str, Any]) -> list[str]:
    """Runs that are not like for like, grouped by what differs: ``"n 6 ≠ 9: 95.5 (n=1)"``; stale runs too."""
    groups: dict[tuple[str, str], list[RunRecord]] = {}
    for run in runs:
        diffs = differences(run, settings)
        if run.is_stale:
            diffs.append("stale code")
        # one group per configuration: two configurations that differ from the paper alike are still two
        # experiments, and one run per seed across them would keep only the latest and hide the other
        groups.setdefault(("; ".join(diffs) or "same settings", fingerprint_of(run)), []).append(run)
    shared = Counter(label for label, _ in groups)
    out = []
    for (label, _), members in sorted(groups.items(), key=lambda item: (item[0][0], variant_label(item[1][0]))):
        chosen = per_seed(members)
        mean, _ = mean_sd([scale * run.metric(metric) for run in chosen])  # type: ignore[operator]
        origins = sorted({run.origin for run in chosen})
        named = f"{label} ({variant_label(chosen[0])})" if shared[label] > 1 else label
        out.append(f"{named}: {fmt(mean, d)} (n={len(chosen)}, {'/'.join(origins)})")
    return out


def _verdict_text(verdict: str, table: TableSpec) -> str:
    """A verdict cell as the paper states it: ``"> 5"`` or ``"≤ 5"``."""
    return f"{'>' if verdict == 'above' else '≤'} {table.verdict_above:g}"


def compare_cell(runs: list[RunRecord], table: TableSpec, row: dict[str, Any], model: str) -> dict[str, Any]:
    """A published cell beside ours. Ours is the mean over seeds of the completed, not stale runs whose
    config matches the row and every setting of the published number; any other completed run of the row's
    task and model is listed beside it (``beside``), labelled with what differs, and never coloured."""
    published = row.get(model)
    d = table.decimals
    verdict = published[0] if table.verdict_above is not None and isinstance(published, list) else None
    pub_mean = float(published[0]) if verdict is None and isinstance(published, list) and published \
        and published[0] is not None else None
    pub_sd = published[1] if isinstance(published, list) and len(published) > 1 else None
    cell: dict[str, Any] = {
        "published": _verdict_text(verdict, table) if verdict else fmt(pub_mean, d) if pub_mean is not None else "–",
        "published_sd": str(pub_sd) if pub_sd is not None else None,
        "ours": NO_RUN, "ours_sd": None, "n": 0, "diff": "", "css": "no-run", "runs": [], "note": None,
        "variant": None, "alternatives": None, "beside": [], "origins": "",
    }
    metric = table.metric_for(row)
    settings = table.settings_for(row)
    candidates = matching_runs(runs, table, row, model)
    completed = [run for run in candidates if run.status == "completed" and run.metric(metric) is not None]
    like = [run for run in completed if not run.is_stale and not differences(run, settings)]
    unlike = [run for run in completed if run not in like]
    cell["beside"] = _beside(unlike, metric, table.scale, d, settings)
    if not like:
        if unlike:
            cell.update(ours="no like-for-like run", css="no-match")
        elif candidates:
            cell["note"] = status_summary(candidates)
        return cell
    group, others = main_group(like)
    chosen = per_seed(group)
    mean, sd = mean_sd([table.scale * run.metric(metric) for run in chosen])  # type: ignore[operator]
    cell.update(ours=fmt(mean, d), ours_sd=fmt(sd, d) if sd is not None else None, n=len(chosen),
                runs=[{"run_id": run.run_id, "page": run.page, "seed": run.seed, "origin": run.origin}
                      for run in chosen],
                variant=variant_label(chosen[0]), origins="/".join(sorted({run.origin for run in chosen})))
    if others:
        alternatives = []
        for other in others:
            other_runs = per_seed(other)
            other_mean, _ = mean_sd([table.scale * run.metric(metric) for run in other_runs])  # type: ignore[operator]
            alternatives.append(f"{variant_label(other_runs[0])}: {fmt(other_mean, d)} (n={len(other_runs)})")
        cell["note"] = f"+{len(others)} other config{'s' if len(others) > 1 else ''}"
        cell["alternatives"] = "; ".join(alternatives)
    lost = [run for run in candidates if run.status == "diverged" and fingerprint_of(run) == fingerprint_of(chosen[0])]
    if lost:  # seeds of the same configuration that ended on a non-finite loss: untested, outside the mean
        cell["note"] = "; ".join(filter(None, [cell["note"], f"{len(lost)} more diverged"]))
    if verdict is not None:
        agrees = above_line(mean, table.verdict_above, table.scale) == (verdict == "above")
        cell.update(diff="same side" if agrees else "other side", css="match-green" if agrees else "match-red")
    elif pub_mean is not None:
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
            "task": ", ".join(table.tasks), "config_key": table.config_key, "row_key": table.row_key,
            "tolerance": fmt(table.tolerance, 1), "tolerance3": fmt(3 * table.tolerance, 1),
            "verdict_above": None if table.verdict_above is None else f"{table.verdict_above:g}",
            "label_keys": label_keys, "models": table.models, "rows": rows,
            "column_notes": [{"model": m, "note": n} for m, n in sorted(table.column_notes.items())],
            "settings": describe(table.settings),
            "summary": {key: summary.get(key, 0) for key in
                        ("match-green", "match-amber", "match-red", "no-match", "no-run", "no-published")}}
