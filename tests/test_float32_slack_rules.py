"""One float32 slack for "the same figure": ``harness predict`` (a split whose recomputed accuracy disagrees with
the one the run reported), the run page's "agrees" column and the report's "solved" threshold all read
:data:`harness.runs.FLOAT32_SLACK`, with the same boundary: a difference within the slack agrees, one beyond it
does not."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from harness.runners.predictions import disagreeing
from harness.runs import FLOAT32_SLACK
from reports.run_tables import predictions_view
from reports.solved import SOLVED_TOLERANCE


def page_view(tmp_path: Path, acc: float, reported: float, gpu: str | None = None) -> dict[str, Any]:
    """The run page's predictions section for one split of 1,000 examples whose recomputed accuracy is ``acc``."""
    folder = tmp_path / "predictions"
    folder.mkdir(exist_ok=True)
    summary = {"test": {"examples": 1000, "wrong": 50, "acc": acc, "reported_acc": reported}}
    (folder / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    view = predictions_view(SimpleNamespace(path=tmp_path, rel_path="runs/t/m/r", gpu=gpu))
    assert view is not None
    return view


def page_agrees(tmp_path: Path, acc: float, reported: float) -> str:
    """The run page's "agrees" cell for one split whose recomputed accuracy is ``acc``."""
    return page_view(tmp_path, acc, reported)["splits"][0]["agrees"]


@pytest.mark.parametrize(("offset", "agree"), [(0.0, True), (0.5e-6, True), (0.999e-6, True), (1.001e-6, False),
                                               (-2e-6, False)])
def test_predict_and_run_page_draw_the_same_line(tmp_path: Path, offset: float, agree: bool) -> None:
    reported = 0.5  # exact in binary: the offset alone decides
    acc = reported + offset
    assert (disagreeing({"test": {"acc": acc, "reported_acc": reported}}) == []) is agree
    assert (page_agrees(tmp_path, acc, reported) == "yes") is agree


def test_a_float32_figure_agrees_with_its_exact_fraction(tmp_path: Path) -> None:
    stored = float(np.float32(950 / 1000))  # 0.949999988...
    assert disagreeing({"test": {"acc": 0.95, "reported_acc": stored}}) == []
    assert page_agrees(tmp_path, 0.95, stored) == "yes"
    assert page_agrees(tmp_path, 0.951, stored) == "no (+0.10 points, 1 example(s))"
    assert page_agrees(tmp_path, 0.947, stored) == "no (-0.30 points, 3 example(s))"


def test_a_gpu_runs_page_says_its_predictions_were_computed_on_the_cpu(tmp_path: Path) -> None:
    """The predictions of a run trained on a GPU are computed on the CPU from its checkpoint; the page names the
    GPU (the template then says why a split may differ by an example: cuDNN's TF32 convolutions)."""
    assert page_view(tmp_path, 0.9, 0.9, gpu="NVIDIA H200")["gpu"] == "NVIDIA H200"
    assert page_view(tmp_path, 0.9, 0.9)["gpu"] is None


def test_solved_threshold_uses_the_same_slack() -> None:
    assert SOLVED_TOLERANCE == FLOAT32_SLACK == 1e-6
