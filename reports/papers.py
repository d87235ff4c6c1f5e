"""The published tables, read from ``reports/papers/*.yaml``.

A paper file holds ``paper`` (the page name), ``title``, ``citation``, optional ``notes`` (lines shown on
the page) and ``tables``. Each table has ``id``, ``title``, ``task``, ``protocol`` (a description),
``metric`` (a template filled from the row, e.g. ``test_{object_set}/acc``), ``config_key`` (the run
config entry a row is matched on, e.g. ``task.tasks``) and ``rows``. In a row, a list value is a model's
published cell ``[mean, sd]`` (``sd`` may be null) and a scalar value identifies the row. Optional
fields: ``row_key`` (the row field compared with ``config_key``; inferred when absent), ``tolerance``
(points, default 2), ``scale`` (our metric's factor to the published unit, default 100: fractions to %),
``decimals`` (default 1), ``source`` and ``column_notes`` (model -> text).
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

DEFAULT_TOLERANCE = 2.0


@dataclass
class TableSpec:
    id: str
    title: str
    task: str
    metric: str
    config_key: str
    row_key: str
    rows: list[dict[str, Any]]
    models: list[str]
    protocol: str = ""
    source: str = ""
    tolerance: float = DEFAULT_TOLERANCE
    scale: float = 100.0
    decimals: int = 1
    column_notes: dict[str, str] = field(default_factory=dict)

    def labels(self, row: dict[str, Any]) -> dict[str, Any]:
        """The row's identifying fields (everything that is not a model's cell)."""
        return {key: value for key, value in row.items() if not isinstance(value, list)}

    def metric_for(self, row: dict[str, Any]) -> str:
        return self.metric.format(**self.labels(row))


@dataclass
class PaperSpec:
    name: str
    title: str
    citation: str
    tables: list[TableSpec]
    notes: list[str] = field(default_factory=list)
    source_file: str = ""

    @property
    def page(self) -> str:
        return f"{self.name}.html"

    @property
    def tasks(self) -> list[str]:
        return list(dict.fromkeys(table.task for table in self.tables))


def _infer_row_key(config_key: str, metric: str, rows: list[dict[str, Any]]) -> str:
    scalars = [key for key, value in (rows[0] if rows else {}).items() if not isinstance(value, list)]
    last = config_key.rsplit(".", 1)[-1]
    if last in scalars:
        return last
    in_template = {name for _, name, _, _ in string.Formatter().parse(metric) if name}
    candidates = [key for key in scalars if key not in in_template]
    if not candidates:
        raise ValueError(f"cannot tell which row field matches {config_key}; add row_key")
    return candidates[0]


def _table(data: dict[str, Any], where: str) -> TableSpec:
    for key in ("id", "task", "metric", "config_key", "rows"):
        if key not in data:
            raise ValueError(f"{where}: a table lacks {key!r}")
    rows = [dict(row) for row in data["rows"]]
    models: list[str] = []
    for row in rows:
        models.extend(key for key, value in row.items() if isinstance(value, list) and key not in models)
    row_key = str(data.get("row_key") or _infer_row_key(str(data["config_key"]), str(data["metric"]), rows))
    table = TableSpec(
        id=str(data["id"]), title=str(data.get("title") or data["id"]), task=str(data["task"]),
        metric=str(data["metric"]), config_key=str(data["config_key"]), row_key=row_key, rows=rows, models=models,
        protocol=str(data.get("protocol") or ""), source=str(data.get("source") or ""),
        tolerance=float(data.get("tolerance", DEFAULT_TOLERANCE)), scale=float(data.get("scale", 100.0)),
        decimals=int(data.get("decimals", 1)),
        column_notes={str(k): str(v) for k, v in (data.get("column_notes") or {}).items()},
    )
    for row in rows:
        try:
            table.metric_for(row)
        except (KeyError, IndexError) as exc:
            raise ValueError(f"{where}: table {table.id}: metric {table.metric!r} needs row field {exc}") from exc
    return table


def load_paper(path: Path) -> PaperSpec:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a mapping")
    return PaperSpec(
        name=str(data.get("paper") or path.stem), title=str(data.get("title") or path.stem),
        citation=str(data.get("citation") or ""), notes=[str(n) for n in data.get("notes") or []],
        tables=[_table(t, str(path)) for t in data.get("tables") or []], source_file=path.name,
    )


def load_papers(papers_dir: Path) -> list[PaperSpec]:
    """Every ``*.yaml`` in ``papers_dir``, sorted by file name."""
    if not papers_dir.is_dir():
        return []
    return [load_paper(path) for path in sorted(papers_dir.glob("*.yaml"))]
