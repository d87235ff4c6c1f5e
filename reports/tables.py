"""What the report's tables share: the metric a cell shows (:class:`Headline`), the number formats, a mean with
its sample standard deviation, a count of the runs' statuses, and a JSON object read from a file.

Plain data (dicts and strings) for the templates; no HTML here. The tables themselves are in
:mod:`reports.index_tables`, :mod:`reports.paper_tables`, :mod:`reports.facts`, :mod:`reports.run_tables` and
:mod:`reports.rl_tables`.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reports.store import HELD_OUT, RunRecord

MAIN_METRIC = "test/acc"
NO_RUN = "no run yet"
WIN_RATE = "eval/win_rate"
RETURN = "eval/episode_return"


@dataclass(frozen=True)
class Headline:
    """The number a task x model cell and a runs table show: a results metric, scaled, with its unit."""

    metric: str
    scale: float
    unit: str
    label: str
    header: str


TEST_ACC = Headline(MAIN_METRIC, 100.0, "%", "", "test/acc (%)")
HELD_OUT_ACC = Headline(HELD_OUT, 100.0, "%", "held-out", "held-out test acc (%)")
EVAL_WIN = Headline(WIN_RATE, 100.0, "%", "eval win rate", "eval win rate (%)")
EVAL_RETURN = Headline(RETURN, 1.0, "", "eval return", "eval return")


def fmt(value: Any, decimals: int = 1) -> str:
    """A number with ``decimals`` places; a dash for none or NaN; anything else as text."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return f"{value:.{decimals}f}"


def mean_sd(values: list[float]) -> tuple[float, float | None]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


KILLED = "killed mid-run"  # a summary's word for a run that says running but whose process is gone (RunRecord.gone)


def status_summary(runs: list[RunRecord]) -> str:
    """``1 completed, 2 failed``: how many runs have each status, a run whose process is gone counted as killed."""
    counts = Counter(KILLED if run.gone else run.status for run in runs)
    return ", ".join(f"{counts[status]} {status}" for status in sorted(counts))


def as_number(value: Any) -> float | None:
    """``value`` as a float where it is a finite int or float (not a bool); None otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def fmt_count(value: Any) -> str:
    """A count with thousands separators and no decimals; a dash for anything that is not a finite number."""
    number = as_number(value)
    return f"{number:,.0f}" if number is not None else "–"


def fmt_percent(value: float | None) -> str:
    """A fraction as a percentage with one decimal (``0.953`` as ``"95.3"``); a dash for none."""
    return fmt(100 * value) if value is not None else "–"


def read_json_object(path: Path) -> dict[str, Any] | None:
    """A JSON object from ``path``: the whole file, else its last line that is one (a benchmark's captured
    output ends with its JSON line); None when absent or unreadable."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    candidates = [text, *reversed([line for line in text.splitlines() if line.strip().startswith("{")])]
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    return None
