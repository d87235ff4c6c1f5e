"""The report's figures, drawn with seaborn on matplotlib ``Figure`` objects (no pyplot state, Agg-free
SVG output) and returned as SVG text to inline in a page.

Byte-stable output: every figure gets its own fixed ``svg.hashsalt`` (so ids are stable and differ
between figures on one page), no metadata block (no date, no creator) and text kept as text. Error bands
are the standard deviation over seeds (``errorbar="sd"``), never a bootstrap.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import matplotlib as mpl
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from reports.papers import PaperSpec
from reports.store import CURRICULUM, SINGLE, RunRecord, cfg_get, main_group, per_seed

_SVG_METADATA = {"Date": None, "Format": None, "Type": None, "Creator": None}
_PALETTE = sns.color_palette("tab10") + sns.color_palette("Dark2")
_DASHES = [(), (4, 2), (1, 1.5), (6, 2, 1, 2)]
CURVE_STATUSES = ("completed", "running")


@contextmanager
def _style(name: str) -> Iterator[None]:
    rc = {**sns.axes_style("whitegrid"), **sns.plotting_context("paper"),
          "svg.hashsalt": f"reports:{name}", "svg.fonttype": "none", "font.family": "sans-serif"}
    with mpl.rc_context(rc):
        yield


def to_svg(fig: Figure) -> str:
    """The figure as an ``<svg>`` element (no XML prolog), ready to inline in HTML."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata=_SVG_METADATA)
    text = buffer.getvalue()
    start = text.find("<svg")
    return re.sub(r"\n{2,}", "\n", text[start:]).strip() + "\n"


def _colours(levels: list[str]) -> dict[str, Any]:
    return {level: _PALETTE[i % len(_PALETTE)] for i, level in enumerate(levels)}


def facet_lines(name: str, data: pd.DataFrame, *, x: str, y: str, panel: str, hue: str, style: str | None = None,
                xlabel: str, ylabel: str, hue_title: str, style_title: str = "", ncols: int = 4) -> str | None:
    """One line panel per value of ``panel`` (in first-seen order), a colour per ``hue`` value and a dash
    per ``style`` value; mean over the rows sharing an x, band = sd over seeds. None for no data."""
    data = data.dropna(subset=[x, y])
    if data.empty:
        return None
    panels = list(dict.fromkeys(data[panel]))
    hues = sorted(dict.fromkeys(data[hue]), key=str)
    styles = sorted(dict.fromkeys(data[style]), key=str) if style else []
    colours = _colours(hues)
    dashes = {level: _DASHES[i % len(_DASHES)] for i, level in enumerate(styles)}
    cols = min(ncols, len(panels))
    rows = math.ceil(len(panels) / cols)
    with _style(name):
        fig = Figure(figsize=(2.9 * cols + 1.6, 2.4 * rows + 0.3), layout="constrained")
        axes = fig.subplots(rows, cols, squeeze=False, sharey=True)
        for index, value in enumerate(panels):
            ax = axes[index // cols][index % cols]
            subset = data[data[panel] == value]
            sns.lineplot(data=subset, x=x, y=y, hue=hue, hue_order=[h for h in hues if h in set(subset[hue])],
                         palette=colours, style=style, dashes=dashes if style else True,
                         style_order=[s for s in styles if s in set(subset[style])] if style else None,
                         errorbar="sd", estimator="mean", legend=False, ax=ax)
            ax.set_title(str(value), fontsize=9)
            ax.set_xlabel(xlabel if index // cols == rows - 1 else "")
            ax.set_ylabel(ylabel if index % cols == 0 else "")
        for index in range(len(panels), rows * cols):
            axes[index // cols][index % cols].set_visible(False)
        handles = [Line2D([], [], color=colours[h], label=str(h)) for h in hues]
        if style:
            handles.append(Line2D([], [], color="none", label=""))
            handles += [Line2D([], [], color="0.3", dashes=dashes[s], label=f"{style_title}: {s}") for s in styles]
        fig.legend(handles=handles, title=hue_title, loc="outside right upper", fontsize=8, title_fontsize=8,
                   frameon=False)
        return to_svg(fig)


# ----- data ----------------------------------------------------------------------------------------------

def _curve(frame: pd.DataFrame | None, column: str, scale: float = 1.0) -> pd.DataFrame:
    if frame is None or column not in frame.columns:
        return pd.DataFrame({"step": [], "value": []})
    points = frame[["step", column]].dropna()
    return pd.DataFrame({"step": points["step"].to_numpy(), "value": scale * points[column].to_numpy()})


def _matches(run: RunRecord, key: str, value: Any) -> bool:
    found = cfg_get(run.config, key)
    if isinstance(found, list):
        return [str(v) for v in found] == [str(value)]
    return found is not None and str(found) == str(value)


def validation_data(runs: list[RunRecord], paper: PaperSpec) -> dict[str, pd.DataFrame]:
    """For each task of the paper: val/acc (%) against step of every (row value, model, seed) with runs."""
    out: dict[str, pd.DataFrame] = {}
    for task in paper.tasks:
        tables = [t for t in paper.tables if t.task == task]
        frames = []
        for table in tables:
            values = list(dict.fromkeys(row.get(table.row_key) for row in table.rows))
            for value in values:
                picked = [r for r in runs if r.task == task and r.protocol == SINGLE and r.status in CURVE_STATUSES
                          and _matches(r, table.config_key, value)]
                for model in sorted({r.model for r in picked}):
                    for run in per_seed(main_group([r for r in picked if r.model == model])[0]):
                        curve = _curve(run.curves, "val/acc", 100.0)
                        curve["panel"] = f"{table.row_key} = {value}"
                        curve["model"], curve["seed"] = model, str(run.seed)
                        frames.append(curve)
        if frames:
            data = pd.concat(frames, ignore_index=True).drop_duplicates(subset=["panel", "model", "seed", "step"])
            out[task] = data
    return out


def pruning_data(runs: list[RunRecord], task: str) -> pd.DataFrame:
    """Head-pruning curves (accuracy % against heads kept), mean and best over subsets, per relation."""
    picked = [r for r in runs if r.task == task and r.status == "completed" and r.pruning]
    records = []
    groups: dict[tuple[str, str], list[RunRecord]] = {}
    for run in picked:
        tasks = cfg_get(run.config, "task.tasks")
        label = "+".join(map(str, tasks)) if isinstance(tasks, list) else "all"
        if run.protocol != SINGLE:
            label += f" ({run.protocol})"
        groups.setdefault((label, run.model), []).append(run)
    for (label, model), group in sorted(groups.items()):
        for run in per_seed(group):
            for point in run.pruning or []:
                for kind in ("mean", "best"):
                    if isinstance(point.get(kind), int | float):
                        records.append({"panel": label, "model": model, "seed": str(run.seed),
                                        "heads": point["heads"], "kind": kind, "value": 100.0 * point[kind]})
    return pd.DataFrame.from_records(records, columns=["panel", "model", "seed", "heads", "kind", "value"])


def curriculum_data(runs: list[RunRecord], task: str) -> pd.DataFrame:
    """Each curriculum stage's val/acc (%) against the stage's own step, one panel per model (and target)."""
    picked = [r for r in runs if r.task == task and r.protocol == CURRICULUM and r.stages
              and r.status in (*CURVE_STATUSES, "failed", "diverged")]
    targets = {", ".join(map(str, cfg_get(r.config, "protocol.target", []) or [])) for r in picked}
    groups: dict[tuple[str, str], list[RunRecord]] = {}
    for run in picked:
        target = ", ".join(map(str, cfg_get(run.config, "protocol.target", []) or []))
        label = run.model if len(targets) == 1 else f"{run.model}: {target}"
        groups.setdefault((label, run.model), []).append(run)
    frames = []
    for (label, _), group in sorted(groups.items()):
        for run in per_seed(group):
            for stage, info in run.stages.items():
                curve = _curve(info.get("curves"), "val/acc", 100.0)
                curve["panel"], curve["stage"], curve["seed"] = label, stage, str(run.seed)
                frames.append(curve)
    if not frames:
        return pd.DataFrame(columns=["panel", "stage", "seed", "step", "value"])
    return pd.concat(frames, ignore_index=True)


# ----- figures -------------------------------------------------------------------------------------------

def paper_figures(runs: list[RunRecord], paper: PaperSpec) -> list[dict[str, str]]:
    """The paper page's figures: validation curves per task, then head pruning and curriculum stages."""
    figures = []
    for task, data in validation_data(runs, paper).items():
        svg = facet_lines(f"{paper.name}:{task}:val", data, x="step", y="value", panel="panel", hue="model",
                          xlabel="training step", ylabel="val accuracy (%)", hue_title="model")
        if svg:
            figures.append({"title": f"{task}: validation accuracy against training steps",
                            "caption": "Mean over seeds (completed and running runs of the single protocol), "
                                       "band = sd over seeds.", "svg": svg})
    for task in paper.tasks:
        svg = facet_lines(f"{paper.name}:{task}:pruning", pruning_data(runs, task), x="heads", y="value",
                          panel="panel", hue="model", style="kind", xlabel="heads kept",
                          ylabel="accuracy (%)", hue_title="model", style_title="subsets", ncols=3)
        if svg:
            figures.append({"title": f"{task}: head pruning",
                            "caption": "Accuracy with only q randomly chosen heads kept (mean and best over "
                                       "random subsets), averaged over seeds; band = sd over seeds.", "svg": svg})
        svg = facet_lines(f"{paper.name}:{task}:curriculum", curriculum_data(runs, task), x="step", y="value",
                          panel="panel", hue="stage", xlabel="step in stage", ylabel="val accuracy (%)",
                          hue_title="stage", ncols=3)
        if svg:
            figures.append({"title": f"{task}: curriculum stages (cf. PrediNet Fig. 4)",
                            "caption": "Validation accuracy of each stage of the four-stage protocol against the "
                                       "stage's own steps, one panel per model; band = sd over seeds.",
                            "svg": svg})
    return figures


def run_figures(run: RunRecord) -> list[dict[str, str]]:
    """A run's training loss and validation accuracy, and its curriculum stages if any."""
    figures = []
    frames = []
    loss_column = "train/loss" if run.curves is not None and "train/loss" in run.curves else "train/epoch_loss"
    for column, panel, scale in ((loss_column, "training loss", 1.0), ("val/acc", "val accuracy (%)", 100.0)):
        curve = _curve(run.curves, column, scale)
        curve["panel"], curve["series"] = panel, column
        frames.append(curve)
    data = pd.concat(frames, ignore_index=True)
    if not data.empty:
        with _style(f"run:{run.page}"):
            fig = Figure(figsize=(8.0, 2.8), layout="constrained")
            axes = fig.subplots(1, 2, squeeze=False)[0]
            for ax, (panel, subset) in zip(axes, ((p, data[data["panel"] == p]) for p in dict.fromkeys(
                    data["panel"])), strict=False):
                many = len(subset) >= 30
                ax.plot(subset["step"], subset["value"], color=_PALETTE[0], linewidth=0.6 if many else 1.0,
                        alpha=0.35 if many else 1.0, marker=None if many else "o", markersize=3)
                if many:  # a running mean over about 2% of the points over the raw, noisy per-batch values
                    window = max(3, len(subset) // 50)
                    smooth = subset["value"].rolling(window, min_periods=1, center=True).mean()
                    ax.plot(subset["step"], smooth, color=_PALETTE[0], linewidth=1.2)
                ax.set_title(panel, fontsize=9)
                ax.set_xlabel("step")
            for ax in axes[data["panel"].nunique():]:
                ax.set_visible(False)
            figures.append({"title": "Curves", "caption": f"{loss_column} and val/acc against the training step "
                                                          "(dense curves: raw values faint, running mean solid).",
                            "svg": to_svg(fig)})
    stage_frames = []
    for stage, info in run.stages.items():
        curve = _curve(info.get("curves"), "val/acc", 100.0)
        curve["panel"], curve["stage"], curve["seed"] = "stages", stage, str(run.seed)
        stage_frames.append(curve)
    if stage_frames:
        svg = facet_lines(f"run:{run.page}:stages", pd.concat(stage_frames, ignore_index=True), x="step", y="value",
                          panel="panel", hue="stage", xlabel="step in stage", ylabel="val accuracy (%)",
                          hue_title="stage")
        if svg:
            figures.append({"title": "Curriculum stages", "caption": "val/acc of each stage against its own steps.",
                            "svg": svg})
    return figures
