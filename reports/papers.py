"""The published tables, read from ``reports/papers/*.yaml``.

A paper file holds ``paper`` (the page name), ``title``, ``citation``, optional ``notes`` (lines shown on
the page), ``tables`` and optional ``facts``. Each table has ``id``, ``title``, ``task``, ``protocol`` (a
description), ``metric`` (a template filled from the row, e.g. ``test_{object_set}/acc``), ``config_key`` (the
run config entry a row is matched on, e.g. ``task.tasks``) and ``rows``. In a row, a list value is a model's
published cell ``[mean, sd]`` (``sd`` may be null) and a scalar value identifies the row. Optional
fields: ``row_key`` (the row field compared with ``config_key``; inferred when absent), ``tolerance``
(points, default 2), ``scale`` (our metric's factor to the published unit, default 100: fractions to %),
``decimals`` (default 1), ``source``, ``column_notes`` (model -> text), ``settings`` (what the published numbers
were measured under, as config keys of our runs: see :mod:`reports.settings`; a row may add its own
``settings``, merged over the table's) and ``verdict_above`` (a threshold in published units, for a paper that
reports on which side of it a number fell rather than the number, e.g. TPR-RNN's Table 3, "failed tasks
(err > 5%)": its cells are then ``[above]`` or ``[not_above]``, and ours agrees when it falls on the same side).
A table without ``config_key`` matches rows on the task alone; a row's own ``task`` field overrides the table's
``task`` (which may then be left out), so one table can hold rows of several tasks.

A fact is one published scalar beside ours: ``id``, ``label``, ``published`` (a number or null),
optional ``published_text`` (shown instead of the number, e.g. "> 93"), ``unit``, ``decimals`` (default 1),
``source``, ``note``, ``settings`` (for facts read from runs: only runs that share them count) and ``ours``,
one of

* ``{runs: {task: T, model: M}, value: <dotted results.json key>, reduce: median | mean | min | max}``: over
  the completed runs of (T, M) that report the value;
* ``{file: <path under the files root, e.g. bench/agents.json>, value: <dotted JSON key>}``: a benchmark's
  output (the whole file or its last JSON line); "not measured" when the file or the key is absent;
* ``{divide: [<fact id>, <fact id>]}``: the ratio of two other facts' values of ours.

Runs and file sources take an optional ``scale`` (our value's factor to the published unit, default 1).
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from reports.settings import check as check_settings

DEFAULT_TOLERANCE = 2.0
VERDICTS = ("above", "not_above")  # a verdict table's published cells
REDUCTIONS = ("median", "mean", "min", "max")


@dataclass
class TableSpec:
    id: str
    title: str
    task: str
    metric: str
    config_key: str | None
    row_key: str | None
    rows: list[dict[str, Any]]
    models: list[str]
    protocol: str = ""
    source: str = ""
    tolerance: float = DEFAULT_TOLERANCE
    scale: float = 100.0
    decimals: int = 1
    column_notes: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    verdict_above: float | None = None

    def labels(self, row: dict[str, Any]) -> dict[str, Any]:
        """The row's identifying fields (everything that is not a model's cell or its settings)."""
        return {key: value for key, value in row.items() if not isinstance(value, list) and key != "settings"}

    def settings_for(self, row: dict[str, Any]) -> dict[str, Any]:
        """The table's settings with the row's own merged over them, row fields filled in."""
        from reports.settings import fill

        return fill({**self.settings, **(row.get("settings") or {})}, self.labels(row))

    def metric_for(self, row: dict[str, Any]) -> str:
        return self.metric.format(**self.labels(row))

    def task_for(self, row: dict[str, Any]) -> str:
        """The row's task: its own ``task`` field, else the table's."""
        return str(row.get("task") or self.task)

    @property
    def tasks(self) -> list[str]:
        """The tasks of the rows, in first-seen order."""
        return list(dict.fromkeys(self.task_for(row) for row in self.rows)) or [self.task]


@dataclass
class FactSpec:
    """One published scalar and where ours comes from (see the module docstring)."""

    id: str
    label: str
    published: float | None
    ours: dict[str, Any]
    published_text: str = ""
    unit: str = ""
    decimals: int = 1
    source: str = ""
    note: str = ""
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass
class PaperSpec:
    name: str
    title: str
    citation: str
    tables: list[TableSpec]
    notes: list[str] = field(default_factory=list)
    source_file: str = ""
    facts: list[FactSpec] = field(default_factory=list)

    @property
    def page(self) -> str:
        return f"{self.name}.html"

    @property
    def tasks(self) -> list[str]:
        return list(dict.fromkeys(task for table in self.tables for task in table.tasks))


def _infer_row_key(config_key: str, metric: str, rows: list[dict[str, Any]]) -> str:
    scalars = [key for key, value in (rows[0] if rows else {}).items()
               if not isinstance(value, list) and key != "settings"]
    last = config_key.rsplit(".", 1)[-1]
    if last in scalars:
        return last
    in_template = {name for _, name, _, _ in string.Formatter().parse(metric) if name}
    candidates = [key for key in scalars if key not in in_template]
    if not candidates:
        raise ValueError(f"cannot tell which row field matches {config_key}; add row_key")
    return candidates[0]


def _table(data: dict[str, Any], where: str) -> TableSpec:
    for key in ("id", "metric", "rows"):
        if key not in data:
            raise ValueError(f"{where}: a table lacks {key!r}")
    rows = [dict(row) for row in data["rows"]]
    if "task" not in data and not all(row.get("task") for row in rows):
        raise ValueError(f"{where}: table {data['id']} lacks 'task' (on the table or on every row)")
    models: list[str] = []
    for row in rows:
        models.extend(key for key, value in row.items() if isinstance(value, list) and key not in models)
    config_key = str(data["config_key"]) if data.get("config_key") else None
    row_key = str(data.get("row_key") or _infer_row_key(config_key, str(data["metric"]), rows)) if config_key \
        else None
    table = TableSpec(
        id=str(data["id"]), title=str(data.get("title") or data["id"]), task=str(data.get("task") or ""),
        metric=str(data["metric"]), config_key=config_key, row_key=row_key, rows=rows, models=models,
        protocol=str(data.get("protocol") or ""), source=str(data.get("source") or ""),
        tolerance=float(data.get("tolerance", DEFAULT_TOLERANCE)), scale=float(data.get("scale", 100.0)),
        decimals=int(data.get("decimals", 1)),
        column_notes={str(k): str(v) for k, v in (data.get("column_notes") or {}).items()},
        settings=check_settings(data.get("settings"), f"{where}: table {data['id']}"),
        verdict_above=None if data.get("verdict_above") is None else float(data["verdict_above"]),
    )
    for row in rows:
        if table.verdict_above is not None:
            for model in models:
                if model in row and row[model] not in [[verdict] for verdict in VERDICTS]:
                    raise ValueError(f"{where}: table {table.id} has verdict_above: its {model} cells must be "
                                     f"[above] or [not_above], not {row[model]!r}")
        check_settings(row.get("settings"), f"{where}: table {table.id}, a row")
        try:
            table.metric_for(row)
        except (KeyError, IndexError) as exc:
            raise ValueError(f"{where}: table {table.id}: metric {table.metric!r} needs row field {exc}") from exc
    return table


def _check_ours(ours: Any, where: str) -> dict[str, Any]:
    """A fact's ``ours`` mapping, checked to name one source (runs, file or divide) with what it needs."""
    if not isinstance(ours, dict):
        raise ValueError(f"{where}: 'ours' must be a mapping")
    if "runs" in ours:
        runs = ours["runs"]
        if not isinstance(runs, dict) or not {"task", "model"} <= set(runs) or "value" not in ours:
            raise ValueError(f"{where}: 'ours.runs' needs task and model, and 'ours.value' a results key")
        if str(ours.get("reduce", "median")) not in REDUCTIONS:
            raise ValueError(f"{where}: 'ours.reduce' must be one of {', '.join(REDUCTIONS)}")
    elif "file" in ours:
        if "value" not in ours:
            raise ValueError(f"{where}: 'ours.file' needs 'ours.value' (a dotted JSON key)")
    elif "divide" in ours:
        if not isinstance(ours["divide"], list) or len(ours["divide"]) != 2:
            raise ValueError(f"{where}: 'ours.divide' must list two fact ids")
    else:
        raise ValueError(f"{where}: 'ours' needs one of runs, file, divide")
    return dict(ours)


def _fact(data: dict[str, Any], where: str) -> FactSpec:
    """One entry of a paper's ``facts``."""
    for key in ("id", "label", "ours"):
        if key not in data:
            raise ValueError(f"{where}: a fact lacks {key!r}")
    published = data.get("published")
    if published is not None and (isinstance(published, bool) or not isinstance(published, int | float)):
        raise ValueError(f"{where}: fact {data['id']}: 'published' must be a number or null")
    return FactSpec(
        id=str(data["id"]), label=str(data["label"]), published=None if published is None else float(published),
        ours=_check_ours(data["ours"], f"{where}: fact {data['id']}"),
        published_text=str(data.get("published_text") or ""), unit=str(data.get("unit") or ""),
        decimals=int(data.get("decimals", 1)), source=str(data.get("source") or ""), note=str(data.get("note") or ""),
        settings=check_settings(data.get("settings"), f"{where}: fact {data['id']}"),
    )


def _facts(items: list[Any], where: str) -> list[FactSpec]:
    """A paper's facts; a ratio may only divide facts that read runs or files."""
    facts = [_fact(item, where) for item in items]
    plain = {fact.id for fact in facts if "divide" not in fact.ours}
    for fact in facts:
        for other in fact.ours.get("divide") or []:
            if str(other) not in plain:
                raise ValueError(f"{where}: fact {fact.id} divides by {other!r}, which is not a runs or file fact")
    return facts


def load_paper(path: Path) -> PaperSpec:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a mapping")
    return PaperSpec(
        name=str(data.get("paper") or path.stem), title=str(data.get("title") or path.stem),
        citation=str(data.get("citation") or ""), notes=[str(n) for n in data.get("notes") or []],
        tables=[_table(t, str(path)) for t in data.get("tables") or []], source_file=path.name,
        facts=_facts(list(data.get("facts") or []), str(path)),
    )


def load_papers(papers_dir: Path) -> list[PaperSpec]:
    """Every ``*.yaml`` in ``papers_dir``, sorted by file name."""
    if not papers_dir.is_dir():
        return []
    return [load_paper(path) for path in sorted(papers_dir.glob("*.yaml"))]
