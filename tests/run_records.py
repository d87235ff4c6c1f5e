"""The hand-made runs of the report and README tests: one builder of :class:`reports.store.RunRecord`.

A test names only what its rule reads; the rest takes the defaults most tests share (a completed bAbI lstm run with
empty results, stored at ``<run_id>``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reports.store import RunRecord


def run_record(run_id: str = "r", *, task: str = "babi", model: str = "lstm", path: Path | None = None,
               rel_path: str | None = None, results: dict[str, Any] | None = None, status: str = "completed",
               **fields: Any) -> RunRecord:
    """A run record as the store would read it.

    ``rel_path`` defaults to ``run_id`` and ``path`` to ``Path(rel_path)``; ``results`` to a new empty dict (a dict
    given is kept, not copied). Every other field of :class:`RunRecord` (``config``, ``curves``, ``stale``, ``page``,
    ``gone``, ...) passes through ``fields`` unchanged, else takes the dataclass's own default.
    """
    rel_path = run_id if rel_path is None else rel_path
    return RunRecord(path=Path(rel_path) if path is None else path, rel_path=rel_path, task=task, model=model,
                     run_id=run_id, results={} if results is None else results, status=status, **fields)
