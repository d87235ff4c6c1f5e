"""The README's speed tables against their documented rules (reports/perf.py, module docstring and renderers).

Every figure in a table is copied or derived from one stored record: ratios are taken within one record against the
case measured beside it (a stack size against the plain model, a board count against one env, a task against task
1), rates from times are their reciprocals (1000 / ms per step), and rows come in the order the tables promise
(fastest model first, batches and tasks by number). Each test renders a tiny hand-made record and compares the cells
with values worked out by hand here, so they share no formatting code with the module.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from reports import perf


def _rows(lines: list[str]) -> list[list[str]]:
    """The body cells of the first Markdown table in ``lines`` (header and rule dropped)."""
    body = [line for line in lines if line.startswith("|")][2:]
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in body]


def _header(lines: list[str]) -> list[str]:
    return [cell.strip() for cell in next(line for line in lines if line.startswith("|")).strip("|").split(" | ")]


def test_a_stack_sizes_ratio_is_its_rate_over_the_plain_models() -> None:
    figures = {"models": {"predinet": {"batches_per_s": {"1": {"plain": 40.0, "stack5": 100.0, "stack10": 30.0}}}}}
    rows = _rows(perf._stacked(figures))
    assert rows == [["predinet", "1", "40.0", "100.0 (2.50x)", "30.0 (0.75x)"]]  # 100/40, 30/40; plain: no ratio
    assert _header(perf._stacked(figures))[2:] == ["plain batches/s", "stack5 batches/s (x plain)",
                                                   "stack10 batches/s (x plain)"]


def test_boards_are_listed_by_count_with_their_ratio_to_one_env() -> None:
    figures = {"single_bridge_steps_per_s": 500.0, "vector1024_bridge_steps_per_s": 2_000_000.0,
               "vector1024_bridge_vs_single": 4000.0, "vector64_bridge_steps_per_s": 6400.0,
               "vector64_bridge_vs_single": 12.8}
    lines = perf._boxworld(figures)
    assert _header(lines)[1:] == ["one env", "64 boards (x one env)", "1,024 boards (x one env)"]
    assert _rows(lines) == [["bridge BoxWorld, paper configuration", "500", "6,400 (12.80x)",
                             "2.00 M (4000.00x)"]]
    assert perf._rate(1_000_000.0) == "1.00 M" and perf._rate(999_999.0) == "999,999"


def test_the_relations_models_come_fastest_first_with_batches_per_second_from_ms() -> None:
    figures = {"batch_size": 10, "threads": 1, "ms_per_step": {"slow": 50.0, "fast": 4.0, "mid": 20.0},
               "minutes_per_100k_batches": {"slow": 120.0, "fast": 89.0, "mid": 90.0}}
    rows = _rows(perf._relations_models(figures))
    # 1000 / 4 = 250 batches/s; 89 min stays minutes, 90 min and more is shown in hours (90 / 60 = 1.5)
    assert rows == [["`fast`", "4.0", "250", "89.0 min"], ["`mid`", "20.0", "50", "1.5 h"],
                    ["`slow`", "50.0", "20", "2.0 h"]]


def test_the_agents_table_keeps_each_models_time_in_its_own_column_batches_by_number() -> None:
    figures = {"ms": {"64": {"relational": 10.0, "simplicial": 30.0}, "8": {"relational": 2.0, "simplicial": 5.0}},
               "ratio": {"64": 3.0, "8": 2.5}}
    lines = perf._agents(figures)
    assert _header(lines)[1:4] == ["relational ms", "simplicial ms", "simplicial / relational (time)"]
    assert [row[:4] for row in _rows(lines)] == [["8", "2.0", "5.0", "2.50"], ["64", "10.0", "30.0", "3.00"]]


def test_the_babi_table_shows_each_tasks_rate_against_task_1_as_recorded() -> None:
    figures = {"tasks": {"10": {"statements": 20, "examples_per_s": 500.0, "vs_task_1": 0.5},
                         "2": {"statements": 40, "examples_per_s": 250.0, "vs_task_1": 0.25},
                         "1": {"statements": 10, "examples_per_s": 1000.0, "vs_task_1": 1.0}}}
    rows = _rows(perf._babi(figures))
    assert [(row[0], row[3], row[4]) for row in rows] == [("1", "1,000", "1.00"), ("2", "250", "0.25"),
                                                          ("10", "500", "0.50")]


def test_an_unknown_records_figures_are_listed_with_their_full_dotted_names() -> None:
    rows = perf._flat({"benchmark": "x", "a": {"b": 1.5, "c": {"d": 2000}}, "e": "text"})
    assert rows == [["a.b", "1.5"], ["a.c.d", "2,000"], ["e", "text"]]


def test_the_provenance_line_says_when_the_code_had_uncommitted_changes() -> None:
    record: dict[str, Any] = {"name": "start", "command": "python -m x", "started": "2026-01-02T03:04:05+00:00",
                              "seconds": 12.0, "machine": {"cpus": 2, "processor": "p", "load_average": [1.0, 2.0,
                                                                                                         3.0]},
                              "git": {"commit": "0123456789abcdef", "dirty": True}}
    line = perf._provenance(record)
    assert "commit 0123456789 with uncommitted changes;" in line and "load average 1.0/2.0/3.0" in line
    record["git"]["dirty"] = False
    assert "commit 0123456789;" in perf._provenance(record)


def test_a_record_keeps_the_load_before_and_after_and_the_last_printed_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    loads = iter([(1.0, 1.0, 1.0), (5.0, 5.0, 5.0)])
    monkeypatch.setattr(os, "getloadavg", lambda: next(loads))
    monkeypatch.setattr(perf, "_gpu_name", lambda: None)
    script = "print('{\"early\": 1}'); print('warming up'); print('{\"late\": 2}'); print('')"
    assert perf.run_benchmark("probe", [sys.executable, "-c", script], tmp_path) == 0
    record = json.loads((tmp_path / "probe.json").read_text())
    assert record["figures"] == {"late": 2}  # the last non-empty line, not the first JSON one
    assert record["machine"]["load_average"] == [1.0, 1.0, 1.0]
    assert record["machine"]["load_average_after"] == [5.0, 5.0, 5.0]
