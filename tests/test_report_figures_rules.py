"""The report's curve data against their documented rules (reports/figures.py docstrings), on tiny hand-made runs.

Seaborn's line plots draw the estimator over the rows sharing an x with an error band (Waskom, 2021, "seaborn:
statistical data visualization", JOSS 6(60):3021); the report documents its choice as the mean over seeds with a
band of one standard deviation. RL curves are read one point per step (the last written, should a resumed run have
written a step twice) and put on a common grid of steps spanning the longest run, each curve interpolated only
within its own range (numpy.interp); pruning curves show the mean and the best accuracy over head subsets, as
percentages, one panel per relation set (and protocol).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from reports import figures
from reports.store import RunRecord
from tests.run_records import run_record


def _run(model: str, seed: int, **fields: Any) -> RunRecord:
    return run_record(f"{model}-s{seed}", task="t", model=model, path=Path(f"/runs/t/{model}/s{seed}"),
                      rel_path=f"t/{model}/s{seed}", results={"seed": seed}, **{"config": {"seed": seed}, **fields})


def test_the_plotted_line_is_the_mean_over_seeds(monkeypatch: pytest.MonkeyPatch) -> None:
    kept: list[Any] = []
    monkeypatch.setattr(figures, "to_svg", lambda fig: kept.append(fig) or "<svg/>")
    data = pd.DataFrame({"step": [1, 1, 1, 2, 2, 2], "value": [0.0, 10.0, 50.0, 20.0, 20.0, 80.0],
                         "panel": "p", "model": "m", "seed": ["0", "1", "2"] * 2})
    assert figures.facet_lines("t", data, x="step", y="value", panel="panel", hue="model", xlabel="x", ylabel="y",
                               hue_title="model") is not None
    (line,) = kept[0].axes[0].lines
    assert list(line.get_ydata()) == pytest.approx([20.0, 40.0])  # means; the medians would be 10 and 20


def test_an_rl_curve_keeps_the_last_value_written_at_a_step_in_step_order() -> None:
    frame = pd.DataFrame({"step": [10, 20, 20, 30, 5], "train/win_rate": [0.1, 0.2, 0.9, 0.3, 0.05]})
    curve = figures.rl_curve(frame, "train/win_rate", 100.0)
    assert curve["step"].tolist() == [5, 10, 20, 30]
    assert curve["value"].tolist() == pytest.approx([5.0, 10.0, 90.0, 30.0])  # scaled to %, the resumed 0.9 kept


def test_curves_are_interpolated_on_a_grid_spanning_the_longest_run_within_each_runs_range() -> None:
    long = pd.DataFrame({"step": [0.0, 100.0], "train/win_rate": [0.0, 1.0]})
    short = pd.DataFrame({"step": [0.0, 50.0], "train/win_rate": [0.0, 0.5]})
    lone = pd.DataFrame({"step": [10.0], "train/win_rate": [0.3]})
    rl = {"rl": {}}
    runs = [_run("a", 0, curves=long, config={"seed": 0, **rl}), _run("b", 0, curves=short, config={"seed": 0, **rl}),
            _run("c", 0, curves=lone, config={"seed": 0, **rl})]
    data, column = figures.rl_training_data(runs, "t", points=4)
    assert column == "train/win_rate"
    assert sorted(set(data["model"])) == ["a", "b"]  # a lone point is no line
    a, b = data[data["model"] == "a"], data[data["model"] == "b"]
    grid = [25.0, 50.0, 75.0, 100.0]  # np.linspace(0, 100, 5)[1:]: the longest run's last step
    assert a["step"].tolist() == grid and a["value"].tolist() == pytest.approx([25.0, 50.0, 75.0, 100.0])
    assert b["step"].tolist() == [25.0, 50.0]  # its own range ends at 50, which is included
    assert b["value"].tolist() == pytest.approx(np.interp([25.0, 50.0], [0.0, 50.0], [0.0, 50.0]).tolist())


def test_pruning_curves_show_mean_and_best_as_percentages_one_panel_per_relation_set_and_protocol() -> None:
    points = [{"heads": 1, "mean": 0.4, "best": 0.6}, {"heads": 2, "mean": 0.7, "best": 0.9}]
    single = _run("m", 0, pruning=points, config={"seed": 0, "task": {"tasks": [1, 2]}})
    joint = _run("m", 1, pruning=points[:1], config={"seed": 1, "task": {"tasks": [1, 2]},
                                                      "protocol": {"name": "curriculum"}})
    data = figures.pruning_data([single, joint], "t")
    rows = sorted(map(tuple, data[["panel", "seed", "heads", "kind", "value"]].itertuples(index=False)))
    assert rows == sorted([("1+2", "0", 1, "mean", 40.0), ("1+2", "0", 1, "best", 60.0),
                           ("1+2", "0", 2, "mean", 70.0), ("1+2", "0", 2, "best", 90.0),
                           ("1+2 (curriculum)", "1", 1, "mean", 40.0), ("1+2 (curriculum)", "1", 1, "best", 60.0)])
