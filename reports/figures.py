"""The report's figures, drawn with seaborn on matplotlib ``Figure`` objects (no pyplot state, Agg-free
SVG output) and returned as SVG text to inline in a page.

Byte-stable output: every figure gets its own fixed ``svg.hashsalt`` (so ids are stable and differ
between figures on one page), no metadata block (no date, no creator) and text kept as text. Error bands
are the standard deviation over seeds (``errorbar="sd"``), never a bootstrap.

A stepwise (world-state) run's page adds the long-horizon rollout of Moskvichev & Liu 2021, §7.2 ("trained on
sequences of length 5 and tested on sequences of lengths up to 10000"): accuracy against the step on a log axis,
with the training trajectory length marked (:func:`rollout_figure`).
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import matplotlib as mpl
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from reports.papers import PaperSpec
from reports.store import CURRICULUM, SINGLE, RunRecord, cfg_get, main_group, per_seed, puzzle_types

_SVG_METADATA = {"Date": None, "Format": None, "Type": None, "Creator": None}
_PALETTE = sns.color_palette("tab10") + sns.color_palette("Dark2")
_DASHES = [(), (4, 2), (1, 1.5), (6, 2, 1, 2)]
CURVE_STATUSES = ("completed", "running")


@contextmanager
def _style(name: str) -> Iterator[None]:
    rc = {**sns.axes_style("whitegrid"), **sns.plotting_context("paper"),
          "svg.hashsalt": f"reports:{name}", "svg.fonttype": "none", "font.family": "sans-serif",
          "text.parse_math": False,  # labels are run ids, stage and metric names: a `$` in one is a `$`
          "axes.titley": 1.0}  # titles just above their axes: no figure has ticks on top for a title to clear,
    # and matplotlib's search for such ticks (every axes' tight box, at every draw) was a third of a figure's time
    with mpl.rc_context(rc):
        yield


def to_svg(fig: Figure) -> str:
    """The figure as an ``<svg>`` element (no XML prolog), ready to inline in HTML."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata=_SVG_METADATA)
    text = buffer.getvalue()
    start = text.find("<svg")
    return re.sub(r"\n{2,}", "\n", text[start:]).strip() + "\n"


def _fixed_margins(fig: Figure, *, left: float = 0.56, right: float = 0.35, bottom: float = 0.45, top: float = 0.28,
                   wspace: float = 0.2, hspace: float = 0.55) -> None:
    """Margins in inches (``wspace``, ``hspace``: fractions of an axes' width, height) for the figures every run
    page draws. Constrained layout would measure every label in an extra draw, which is half of a run page's
    build time; these figures have one shape (titles above, the x label below, short tick labels), so fixed
    margins fit them."""
    width, height = fig.get_size_inches()
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height,
                        wspace=wspace, hspace=hspace)


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
    """For each task of the paper: val/acc (%) against step of every (row value, model, seed) with supervised
    runs (a table without ``config_key``: one panel per task)."""
    out: dict[str, pd.DataFrame] = {}
    for task in paper.tasks:
        frames = []
        for table in paper.tables:
            rows = [row for row in table.rows if table.task_for(row) == task]
            values = list(dict.fromkeys(row.get(table.row_key) for row in rows)) if table.row_key else rows[:1]
            for value in values:
                picked = [r for r in runs if r.task == task and r.protocol == SINGLE and r.status in CURVE_STATUSES
                          and not r.is_rl and (table.config_key is None or _matches(r, table.config_key, value))]
                for model in sorted({r.model for r in picked}):
                    for run in per_seed(main_group([r for r in picked if r.model == model])[0]):
                        curve = _curve(run.curves, "val/acc", 100.0)
                        curve["panel"] = f"{table.row_key} = {value}" if table.row_key else task
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


def rl_curve(frame: pd.DataFrame | None, column: str, scale: float = 1.0) -> pd.DataFrame:
    """``column`` against environment steps, one point per step (the last, should a resumed run have written a
    step twice), in step order."""
    curve = _curve(frame, column, scale).drop_duplicates(subset="step", keep="last")
    return curve.sort_values("step", kind="stable").reset_index(drop=True)


def _on_grid(curve: pd.DataFrame, grid: np.ndarray) -> pd.DataFrame:
    """The curve linearly interpolated at the grid points within its own step range (raw if too short)."""
    if len(curve) < 2:
        return curve
    inside = grid[(grid >= curve["step"].iloc[0]) & (grid <= curve["step"].iloc[-1])]
    values = np.interp(inside, curve["step"].to_numpy(dtype=float), curve["value"].to_numpy(dtype=float))
    return pd.DataFrame({"step": inside, "value": values})


def rl_training_data(runs: list[RunRecord], task: str, points: int = 200) -> tuple[pd.DataFrame, str]:
    """The training win rate (%) of the task's RL runs against environment steps (the episode return where no
    run reports wins), one line per (model, seed) on a common grid of steps so that seeds average; and the
    column used."""
    picked = [r for r in runs if r.task == task and r.is_rl and r.protocol == SINGLE and r.status in CURVE_STATUSES]
    wins = any(not rl_curve(r.curves, "train/win_rate").empty for r in picked)
    column, scale = ("train/win_rate", 100.0) if wins else ("train/episode_return", 1.0)
    picked = [r for r in picked if len(rl_curve(r.curves, column)) >= 2]  # a line, not a lone point
    chosen = [(model, run) for model in sorted({r.model for r in picked})
              for run in per_seed(main_group([r for r in picked if r.model == model])[0])]
    curves = [(model, run, rl_curve(run.curves, column, scale)) for model, run in chosen]
    if not curves:
        return pd.DataFrame(columns=["panel", "model", "seed", "step", "value"]), column
    grid = np.linspace(0.0, max(float(curve["step"].iloc[-1]) for _, _, curve in curves), points + 1)[1:]
    frames = []
    for model, run, curve in curves:
        frame = _on_grid(curve, grid)
        frame["panel"], frame["model"], frame["seed"] = task, model, str(run.seed)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True), column


# ----- figures -------------------------------------------------------------------------------------------

def paper_figures(runs: list[RunRecord], paper: PaperSpec,
                  facet_lines: Callable[..., str | None] = facet_lines) -> list[dict[str, str]]:
    """The paper page's figures: validation curves per task, then head pruning and curriculum stages.
    ``facet_lines``: what draws each figure (:func:`facet_lines`, or the report's cache in front of it)."""
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
    for task in paper.tasks:
        data, column = rl_training_data(runs, task)
        wins = column == "train/win_rate"
        svg = facet_lines(f"{paper.name}:{task}:rl", data, x="step", y="value", panel="panel", hue="model",
                          xlabel="environment steps", ylabel="win rate (%)" if wins else "episode return",
                          hue_title="model")
        if svg:
            what = "win rate" if wins else "episode return"
            window = ", the mean over the episodes that iteration finished (a handful: noisy)" if wins else ""
            figures.append({"title": f"{task}: training {what} against environment steps",
                            "caption": f"{column} (each iteration's value{window}), interpolated onto common steps; "
                                       "mean over seeds (completed and running runs), band = sd over seeds.",
                            "svg": svg})
    return figures


def final_group_columns(run: RunRecord) -> list[str]:
    """A stepwise run's validation accuracy at the last step of the trajectory, per query group
    (``val/final/<group>/acc``), in the order of ``metrics.csv``."""
    if run.curves is None:
        return []
    return [str(c) for c in run.curves.columns
            if str(c).startswith("val/final/") and str(c).endswith("/acc") and str(c).count("/") == 3]


def _curve_line(ax: Any, subset: pd.DataFrame, colour: Any, **label: Any) -> None:
    """One curve of the run page: markers when few points; dense ones raw and faint under a running mean."""
    many = len(subset) >= 30
    ax.plot(subset["step"], subset["value"], color=colour, linewidth=0.6 if many else 1.0,
            alpha=0.35 if many else 1.0, marker=None if many else "o", markersize=3, **label)
    if many:  # a running mean over about 2% of the points over the raw, noisy per-batch values
        window = max(3, len(subset) // 50)
        smooth = subset["value"].rolling(window, min_periods=1, center=True).mean()
        ax.plot(subset["step"], smooth, color=colour, linewidth=1.2)


def run_figures(run: RunRecord) -> list[dict[str, str]]:
    """A run's training loss and validation accuracy (a stepwise run's: with the last-step accuracy of each
    query group), and its curriculum stages if any (an RL run: its learning curves, :func:`rl_run_figures`)."""
    if run.is_rl:
        return rl_run_figures(run)
    figures = []
    frames = []
    loss_column = "train/loss" if run.curves is not None and "train/loss" in run.curves else "train/epoch_loss"
    accuracy = "val accuracy (%)"
    finals = final_group_columns(run) if run.is_stepwise else []
    for column, panel, scale in ((loss_column, "training loss", 1.0), ("val/acc", accuracy, 100.0),
                                 *((column, accuracy, 100.0) for column in finals)):
        curve = _curve(run.curves, column, scale)
        curve["panel"], curve["series"] = panel, column
        frames.append(curve)
    data = pd.concat(frames, ignore_index=True)
    if not data.empty:
        with _style(f"run:{run.page}"):
            fig = Figure(figsize=(8.0, 2.8))
            _fixed_margins(fig)
            axes = fig.subplots(1, 2, squeeze=False)[0]
            for ax, (panel, subset) in zip(axes, ((p, data[data["panel"] == p]) for p in dict.fromkeys(
                    data["panel"])), strict=False):
                series = list(dict.fromkeys(subset["series"]))
                if len(series) == 1:
                    _curve_line(ax, subset, _PALETTE[0])
                else:  # val/acc and the last-step accuracy of each group (stepwise runs)
                    for index, column in enumerate(series):
                        label = "all steps" if column == "val/acc" else f"last step: {column.split('/')[2]}"
                        _curve_line(ax, subset[subset["series"] == column], _PALETTE[index % len(_PALETTE)],
                                    label=label)
                    ax.legend(fontsize=7, frameon=False)
                ax.set_title(panel, fontsize=9)
                ax.set_xlabel("outer cycle" if run.is_stepwise else "step")
            for ax in axes[data["panel"].nunique():]:
                ax.set_visible(False)
            caption = (f"{loss_column} and val/acc against the training step "
                       "(dense curves: raw values faint, running mean solid).")
            if run.is_stepwise:
                caption = (f"{loss_column} (mean step loss of the logged cycles) and val/acc (every step of the "
                           "validation trajectories) against the outer cycle of Algorithm 1"
                           + ("; the other lines: validation accuracy at the trajectory's last step, per query "
                              "group" if finals else "")
                           + " (dense curves: raw values faint, running mean solid).")
            figures.append({"title": "Curves", "caption": caption, "svg": to_svg(fig)})
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


def _rollout_caption(run: RunRecord, length: Any) -> str:
    info = run.results.get("rollout") if isinstance(run.results.get("rollout"), dict) else {}

    def number(key: str) -> float | None:
        value = info.get(key)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    worlds, longest, seconds, rate = number("worlds"), number("longest"), number("seconds"), number("world_steps_per_s")
    held_out = f"{worlds:,.0f} held-out test worlds" if worlds is not None else "held-out test worlds"
    rolled = f", rolled {longest:,.0f} steps" if longest is not None else ""
    text = (f"Accuracy (%) of the best checkpoint on {held_out}{rolled}, against the step (log scale): all "
            "queries in black, each query group in colour; queries asked at every step up to 100, then at "
            "log-spaced steps.")
    if isinstance(length, int) and not isinstance(length, bool):
        text += f" The dashed line marks the training trajectory length (stepwise.steps = {length})."
    if seconds is not None:
        text += f" The rollout took {seconds:,.1f} s"
        text += f" ({rate:,.0f} world-steps/s)." if rate is not None else "."
    else:
        text += " Its duration was not recorded."
    return text


def rollout_figure(run: RunRecord) -> dict[str, str] | None:
    """A stepwise run's long-horizon rollout (``rollout.csv``): accuracy (%) against the step on a log x axis,
    one line per column (``acc`` in black, each ``<group>/acc`` in colour), the training trajectory length
    (config ``stepwise.steps``) as a dashed vertical line. None without a curve."""
    frame = run.rollout
    if frame is None or frame.empty:
        return None
    groups = [str(c) for c in frame.columns if c not in ("step", "acc")]
    colours = _colours(groups)
    length = cfg_get(run.config, "stepwise.steps")
    handles: list[Line2D] = []
    with _style(f"run:{run.page}:rollout"):
        fig = Figure(figsize=(7.5, 3.0), layout="constrained")
        ax = fig.subplots()
        lines = [(column, colours[column], 1.0, column.removesuffix("/acc")) for column in groups]
        if "acc" in frame.columns:  # drawn last, on top of the groups; listed first
            lines.append(("acc", "black", 1.4, "all queries"))
        for column, colour, width, label in lines:
            points = frame[["step", column]].dropna()
            if points.empty:
                continue
            ax.plot(points["step"], 100.0 * points[column], color=colour, linewidth=width,
                    marker="o" if len(points) < 30 else None, markersize=3)
            handles.insert(0 if column == "acc" else len(handles), Line2D([], [], color=colour, linewidth=width,
                                                                         label=label))
        if not handles:
            return None
        if isinstance(length, int) and not isinstance(length, bool) and length > 0:
            ax.axvline(length, color="0.35", linestyle="--", linewidth=1.0)
            handles.append(Line2D([], [], color="0.35", linestyle="--", linewidth=1.0,
                                  label=f"training length T = {length}"))
        ax.set_xscale("log")  # tick labels as plain numbers: the report's style turns mathtext off
        ax.xaxis.set_major_locator(LogLocator(base=10))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}" if value >= 1 else f"{value:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_ylim(-3, 103)
        ax.set_xlabel("step of the rollout (log scale)")
        ax.set_ylabel("accuracy (%)")
        fig.legend(handles=handles, loc="outside right upper", fontsize=8, frameon=False)
        svg = to_svg(fig)
    return {"title": "Long-horizon rollout", "caption": _rollout_caption(run, length), "svg": svg}


# ----- reinforcement-learning runs -----------------------------------------------------------------------

EVAL_MARKER = {"marker": "*", "markersize": 9, "linestyle": "none", "color": "black", "zorder": 5}
LEARNER_PANELS = (("learner/total_loss", "total loss"), ("learner/pi_loss", "policy loss"),
                  ("learner/vf_loss", "value loss"), ("learner/entropy", "entropy"),
                  ("learner/grad_norm", "gradient norm"), ("perf/env_steps_per_s", "env steps/s"))


def _compact(value: float, _position: Any = None) -> str:
    """A tick label of a count axis: 250k, 1.5M (environment steps run to millions, on panels 2 inches wide)."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"


def _line(ax: Any, curve: pd.DataFrame, **style: Any) -> None:
    """A curve as a line; with markers when it has few points."""
    few = len(curve) < 30
    ax.plot(curve["step"], curve["value"], marker="o" if few else None, markersize=3, **style)


def _eval_point(ax: Any, run: RunRecord, column: str, scale: float, **style: Any) -> bool:
    """The final evaluation's value as a marker at the run's last step; whether there was one."""
    point = rl_curve(run.curves, column, scale)
    if point.empty:
        return False
    ax.plot(point["step"].iloc[-1:], point["value"].iloc[-1:], **{**EVAL_MARKER, **style})
    return True


def _win_panel(ax: Any, run: RunRecord, types: list[str]) -> list[Line2D]:
    """Training win rate, overall (black) and per puzzle type (colours), with the final evaluation's values;
    returns the legend handles."""
    colours = _colours(types)
    handles = []
    overall = rl_curve(run.curves, "train/win_rate", 100.0)
    if not overall.empty:  # drawn last, on top of the puzzle types
        handles.append(Line2D([], [], color="black", linewidth=1.4, label="all puzzles"))
    for kind in types:
        curve = rl_curve(run.curves, f"train/win_rate/{kind}", 100.0)
        if not curve.empty:
            _line(ax, curve, color=colours[kind], linewidth=0.8, alpha=0.85)
        _eval_point(ax, run, f"eval/win_rate/{kind}", 100.0, marker="o", markersize=4, color=colours[kind])
        handles.append(Line2D([], [], color=colours[kind], linewidth=0.8, label=kind))
    if not overall.empty:
        _line(ax, overall, color="black", linewidth=1.4)
    if _eval_point(ax, run, "eval/win_rate", 100.0):
        handles.append(Line2D([], [], **EVAL_MARKER, label="final evaluation"))
    ax.set_title("win rate (%)", fontsize=9)
    ax.set_ylim(-3, 103)
    return handles


def _return_panel(ax: Any, run: RunRecord) -> bool:
    """Training episode return (each iteration's mean) with the final evaluation's; whether it has data."""
    curve = rl_curve(run.curves, "train/episode_return")
    if not curve.empty:
        _line(ax, curve, color=_PALETTE[0], linewidth=1.0)
    evaluated = _eval_point(ax, run, "eval/episode_return", 1.0)
    ax.set_title("episode return", fontsize=9)
    return evaluated or not curve.empty


def _rl_learning_figure(run: RunRecord) -> dict[str, str] | None:
    """Win rate (when the env reports wins) and episode return against environment steps."""
    frame = run.curves
    wins = frame is not None and any(str(c).startswith(("train/win_rate", "eval/win_rate")) for c in frame.columns)
    types = puzzle_types(run)
    with _style(f"run:{run.page}:rl"):
        fig = Figure(figsize=(9.0 if wins else 5.0, 3.0), layout="constrained")
        axes = fig.subplots(1, 2 if wins else 1, squeeze=False)[0]
        handles = _win_panel(axes[0], run, types) if wins else []
        has_return = _return_panel(axes[-1], run)
        if not handles and not has_return:
            return None
        if not wins:
            handles = [Line2D([], [], color=_PALETTE[0], label="training (per iteration)"),
                       Line2D([], [], **EVAL_MARKER, label="final evaluation")]
        for ax in axes:
            ax.set_xlabel("environment steps")
            ax.xaxis.set_major_formatter(FuncFormatter(_compact))
        fig.legend(handles=handles, title="puzzle type" if types else None, loc="outside right upper", fontsize=7,
                   title_fontsize=8, frameon=False)
        svg = to_svg(fig)
    caption = ("Training curves against environment steps sampled: the win rate (overall and per puzzle type) and "
               "the return are each iteration's mean over the episodes it finished (a handful: noisy); markers at "
               "the end: "
               "the final evaluation (a star overall, dots per puzzle type)." if wins else
               "Training episode return (each iteration's mean) against environment steps sampled; the star is the "
               "final evaluation's mean return.")
    return {"title": "Learning curves", "caption": caption, "svg": svg}


def _rl_learner_figure(run: RunRecord) -> dict[str, str] | None:
    """The learner's diagnostics and the throughput, one small panel each."""
    panels = [(title, rl_curve(run.curves, column)) for column, title in LEARNER_PANELS]
    panels = [(title, curve) for title, curve in panels if not curve.empty]
    if not panels:
        return None
    cols = min(3, len(panels))
    rows = math.ceil(len(panels) / cols)
    with _style(f"run:{run.page}:learner"):
        fig = Figure(figsize=(9.0, 2.3 * rows + 0.2))
        _fixed_margins(fig, wspace=0.25)
        axes = fig.subplots(rows, cols, squeeze=False)
        for index, (title, curve) in enumerate(panels):
            ax = axes[index // cols][index % cols]
            _line(ax, curve, color=_PALETTE[1], linewidth=0.9)
            ax.set_title(title, fontsize=9)
            ax.set_xlabel("environment steps" if index // cols == rows - 1 else "")
            ax.xaxis.set_major_formatter(FuncFormatter(_compact))
        for index in range(len(panels), rows * cols):
            axes[index // cols][index % cols].set_visible(False)
        svg = to_svg(fig)
    return {"title": "Learner", "caption": "The learner's losses, policy entropy and gradient norm (each "
                                           "iteration's values) and the sampling throughput, against environment "
                                           "steps.", "svg": svg}


def rl_run_figures(run: RunRecord) -> list[dict[str, str]]:
    """An RL run's learning curves (win rate per puzzle type, return) and its learner's diagnostics."""
    if run.curves is None:
        return []
    return [figure for figure in (_rl_learning_figure(run), _rl_learner_figure(run)) if figure]
