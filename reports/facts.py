"""A paper page's facts: each published number beside ours, from the runs or from a benchmark's file
(:func:`fact_rows`; the facts are read by :mod:`reports.papers`)."""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

from reports.papers import FactSpec
from reports.perf import PERF
from reports.settings import differences
from reports.store import RunRecord, cfg_get
from reports.tables import NO_RUN, as_number, read_json_object

NOT_MEASURED = "not measured"


def fmt_number(value: float | None, decimals: int = 1) -> str:
    """A number with thousands separators and ``decimals`` places; a dash for none."""
    return "–" if value is None or math.isnan(value) else f"{value:,.{decimals}f}"


def _reduce(values: list[float], how: str) -> float:
    return {"median": statistics.median, "mean": statistics.fmean, "min": min, "max": max}[how](values)


def _ours_from_runs(fact: FactSpec, runs: list[RunRecord]) -> dict[str, Any]:
    spec = fact.ours
    task, model = str(spec["runs"]["task"]), str(spec["runs"]["model"])
    key, how, scale = str(spec["value"]), str(spec.get("reduce", "median")), float(spec.get("scale", 1.0))
    found = [(run, as_number(cfg_get(run.results, key))) for run in runs
             if run.task == task and run.model == model and run.status == "completed"]
    valued = [(run, value) for run, value in found if value is not None]
    used = [(run, value) for run, value in valued if not run.is_stale and not differences(run, fact.settings)]
    if not used:
        unlike = f"; {len(valued)} run(s) with other settings" if valued else ""
        return {"value": None, "text": NO_RUN if not valued else "no like-for-like run",
                "where": f"completed runs of {task} / {model}: {key}{unlike}", "runs": []}
    value = scale * _reduce([v for _, v in used], how)
    n = len(used)
    return {"value": value, "text": fmt_number(value, fact.decimals),
            "where": f"{how} over {n} completed run{'' if n == 1 else 's'} of {task} / {model}: {key}",
            "runs": [run.run_id for run, _ in used]}


PUBLISHED_PERF = Path("results") / PERF
"""Where ``make perf-publish`` keeps the benchmark records (reports.perf), under the files root."""


def _ours_from_file(fact: FactSpec, files_root: Path) -> dict[str, Any]:
    """A figure from a benchmark file: ``bench/NAME.json`` as ``make perf`` writes it (a record whose
    ``figures`` hold the benchmark's numbers; a bare figures object is read too), else the published record
    ``results/perf/NAME.json`` of the same benchmark."""
    name, key = str(fact.ours["file"]), str(fact.ours["value"])
    shown = name
    data = read_json_object(files_root / name)
    if data is None and Path(name).parts[:1] == ("bench",):
        published = PUBLISHED_PERF / Path(name).name
        data = read_json_object(files_root / published)
        shown = f"{published.as_posix()} (the published record)" if data is not None else name
    record = data.get("figures") if data is not None and isinstance(data.get("figures"), dict) else data
    value = as_number(cfg_get(record, key)) if record is not None else None
    context = ", ".join(f"{k} {record[k]}" for k in ("device", "threads") if record is not None and k in record)
    where = f"{shown}: {key}" + (f" ({context})" if context else "")
    if value is None:
        return {"value": None, "text": NOT_MEASURED, "where": where if data is not None else f"{name} (absent)",
                "runs": []}
    value *= float(fact.ours.get("scale", 1.0))
    return {"value": value, "text": fmt_number(value, fact.decimals), "where": where, "runs": []}


def fact_rows(facts: list[FactSpec], runs: list[RunRecord], files_root: Path) -> list[dict[str, Any]]:
    """The facts of a paper, each with the published number and ours (see :mod:`reports.papers`)."""
    ours: dict[str, dict[str, Any]] = {}
    for fact in facts:
        if "runs" in fact.ours:
            ours[fact.id] = _ours_from_runs(fact, runs)
        elif "file" in fact.ours:
            ours[fact.id] = _ours_from_file(fact, files_root)
    labels = {fact.id: fact.label for fact in facts}
    for fact in facts:
        if "divide" in fact.ours:
            top, bottom = (ours[str(name)] for name in fact.ours["divide"])
            where = " ÷ ".join(f"ours for “{labels[str(name)]}”" for name in fact.ours["divide"])
            if top["value"] is None or not bottom["value"]:
                ours[fact.id] = {"value": None, "text": NOT_MEASURED, "where": where, "runs": []}
            else:
                value = top["value"] / bottom["value"]
                ours[fact.id] = {"value": value, "text": fmt_number(value, fact.decimals), "where": where,
                                 "runs": [*top["runs"], *bottom["runs"]]}
    rows = []
    for fact in facts:
        published = fact.published_text or fmt_number(fact.published, fact.decimals)
        rows.append({"id": fact.id, "label": fact.label, "unit": fact.unit, "published": published,
                     "has_published": fact.published is not None,
                     "source": fact.source, "note": fact.note, **ours[fact.id]})
    return rows
