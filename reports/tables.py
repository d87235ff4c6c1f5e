"""The numbers on the pages: the task x model matrix, the published-vs-ours tables and facts, and a run's
metrics (with the final evaluation of reinforcement-learning runs).

Plain data (dicts and strings) for the templates; no HTML here.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.runs import FLOAT32_SLACK
from reports.papers import FactSpec, PaperSpec, TableSpec
from reports.perf import PERF
from reports.settings import check as check_settings
from reports.settings import describe, differences, other_sets_read
from reports.store import (
    CURRICULUM,
    HELD_OUT,
    SINGLE,
    RunRecord,
    base_label,
    cfg_get,
    fingerprint_of,
    main_group,
    natural_key,
    per_seed,
    puzzle_types,
    variant_label,
)

MAIN_METRIC = "test/acc"
NO_RUN = "no run yet"
NOT_MEASURED = "not measured"
WIN_RATE = "eval/win_rate"
RETURN = "eval/episode_return"
PUZZLE_TYPES = {
    "boxworld": "L-d: solution length, distractor branches",
    "bridge_boxworld": "L-b-c: solution length, bridge lock (source) and bridge key (target) colours, numbered "
                       "from the gem; L-0-0 without a bridge",
}
"""How the BoxWorld envs name their puzzle types (``info["puzzle_type"]``), for the captions."""


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


def anchor(*parts: str) -> str:
    return "runs-" + "-".join(parts)


KILLED = "killed mid-run"  # a summary's word for a run that says running but whose process is gone (RunRecord.gone)


def status_summary(runs: list[RunRecord]) -> str:
    """``1 completed, 2 failed``: how many runs have each status, a run whose process is gone counted as killed."""
    counts = Counter(KILLED if run.gone else run.status for run in runs)
    return ", ".join(f"{counts[status]} {status}" for status in sorted(counts))


# ----- index ---------------------------------------------------------------------------------------------

def headline(runs: list[RunRecord]) -> Headline:
    """Test accuracy for supervised runs (on the held-out sets where the task has them: :data:`HELD_OUT`); for
    RL runs the eval win rate, or the eval return where the task reports no wins. The latest
    completed run that was evaluated decides, so that a stale run of an older runner does not."""
    if not any(run.is_rl for run in runs):
        return HELD_OUT_ACC if any(run.metric(HELD_OUT) is not None for run in runs) else TEST_ACC
    evaluated = [run for run in runs if run.status == "completed" and run.metric(RETURN) is not None]
    if evaluated:
        latest = max(evaluated, key=lambda run: run.sort_key())
        return EVAL_WIN if latest.metric(WIN_RATE) is not None else EVAL_RETURN
    wins = any(run.metric(WIN_RATE) is not None or (run.curves is not None and "train/win_rate" in run.curves.columns)
               for run in runs)  # none evaluated yet: whether training reports wins
    return EVAL_WIN if wins else EVAL_RETURN


def _best_variant(runs: list[RunRecord], head: Headline) -> dict[str, Any] | None:
    """Among the completed runs' configurations, the one with the best mean headline metric over seeds."""
    found = _best_seeds(runs, head)
    return found[1] if found else None


def _best_seeds(runs: list[RunRecord], head: Headline) -> tuple[list[RunRecord], dict[str, Any]] | None:
    """:func:`_best_variant`'s configuration: its runs (one per seed) and what a cell shows of it."""
    groups: dict[str, list[RunRecord]] = {}
    for run in runs:
        if run.status == "completed" and run.metric(head.metric) is not None:
            groups.setdefault(run.fingerprint, []).append(run)
    best: tuple[list[RunRecord], dict[str, Any]] | None = None
    for key in sorted(groups):
        chosen = per_seed(groups[key])
        mean, sd = mean_sd([head.scale * run.metric(head.metric) for run in chosen])  # type: ignore[operator]
        if best is None or mean > best[1]["mean"]:
            best = (chosen, {"mean": mean, "text": fmt(mean), "sd": fmt(sd) if sd is not None else None,
                             "variant": variant_label(chosen[0]), "seeds": len(chosen), "unit": head.unit,
                             "label": head.label, "budget": budget(chosen)})
    return best


def budget(runs: list[RunRecord]) -> str:
    """How much the runs trained, so that a ranking of time-capped runs shows what each had: their mean steps
    (environment steps for RL), and the accelerator where one was used (``"5,121 steps"``, ``"100,000 steps on
    cuda: NVIDIA H100"``)."""
    rl = any(run.is_rl for run in runs)
    counts = [run.results.get("env_steps" if rl else "steps") for run in runs]
    counts = [c for c in counts if isinstance(c, int | float) and not isinstance(c, bool)]
    text = f"{statistics.fmean(counts):,.0f} {'env steps' if rl else 'steps'}" if counts else ""
    gpus = sorted({run.gpu for run in runs if run.gpu})
    return "; ".join(part for part in (text, " and ".join(f"on cuda: {gpu}" for gpu in gpus)) if part)


def matrix(runs: list[RunRecord], papers: list[PaperSpec]) -> dict[str, Any]:
    """Rows: the registry's tasks; columns: its models (and any task or model a run or a paper names that the
    registry no longer has). A pair the registry cannot run shows its reason; a runnable pair without runs
    says so; a pair with runs shows its best configuration's held-out metric."""
    from harness.registry import REGISTRY

    registry_tasks, registry_models = REGISTRY.tasks, REGISTRY.models
    tasks = list(registry_tasks) + sorted({run.task for run in runs} - set(registry_tasks))
    models = list(registry_models) + sorted({run.model for run in runs} - set(registry_models))
    by_pair: dict[tuple[str, str], list[RunRecord]] = {}
    for run in runs:
        by_pair.setdefault((run.task, run.model), []).append(run)
    rows = []
    for task in tasks:
        cells = []
        for model in models:
            pair_runs = by_pair.get((task, model), [])
            if task in registry_tasks and model in registry_models:
                compat = REGISTRY.compatibility(registry_tasks[task], registry_models[model])
            else:
                compat = None
            if compat is not None and not compat.ok and not pair_runs:
                cells.append({"model": model, "empty": True, "incompatible": True, "text": compat.reason})
                continue
            if not pair_runs:
                cells.append({"model": model, "empty": True, "incompatible": False, "text": NO_RUN})
                continue
            seeds = {str(run.seed) for run in pair_runs if run.status == "completed"}
            head = headline(pair_runs)
            cells.append({"model": model, "empty": False, "best": _best_variant(pair_runs, head), "metric": head.metric,
                          "n_runs": len(pair_runs), "n_seeds": len(seeds), "statuses": status_summary(pair_runs),
                          "anchor": anchor(task, model),
                          "origins": "/".join(sorted({run.origin for run in pair_runs})),
                          "stale": sum(run.is_stale for run in pair_runs)})
        rows.append({"task": task, "cells": cells})
    return {"models": models, "rows": rows}


def setting_label(run: RunRecord) -> str:
    """What a run was measured under, apart from its model: ``base_label`` plus, where the task reads files,
    its data set and source (bAbI on the official files is not ranked with bAbI on generated data); the data set
    only where the run read files (one trained on generated data and tested on it read none)."""
    source = cfg_get(run.config, "task.source")
    test_on = cfg_get(run.config, "task.test_on")
    reads_files = source != "generator" or (isinstance(test_on, list) and "files" in test_on)
    data_set = cfg_get(run.config, "task.data_set") if reads_files else None
    data = [str(value) for value in (data_set, source) if value is not None]
    data += [f"files also from {other}" for other in other_sets_read(run)]  # a set's missing file
    return base_label(run) + (f" ({', '.join(data)})" if data else "")


def rankings(runs: list[RunRecord], criteria: dict[str, Criterion] | None = None) -> list[dict[str, Any]]:
    """The matrix's second view, like for like: per task and setting (:func:`setting_label`: the task's variant
    and data, the protocol, the RL algorithm and the profile, none of which depends on the model), the models
    that ran under it, best first, each by the mean over seeds of its best configuration there. A model's
    cpu-profile run is thus never ranked against another's paper-profile run, nor bAbI task 1 against task 2.
    Settings where only one model ran are listed too; models without a completed run are left out.

    Where the task has a criterion for having solved it (``criteria``, by default :data:`SOLVED_FILE`), each
    entry's ``solved`` says how many of its seeds met it and how fast (:func:`solved_summary`), and the row's
    ``criterion`` states it; otherwise both are None."""
    criteria = load_criteria() if criteria is None else criteria
    settings: dict[tuple[str, str], dict[str, list[RunRecord]]] = {}
    for run in runs:
        if run.status == "completed":
            settings.setdefault((run.task, setting_label(run)), {}).setdefault(run.model, []).append(run)
    ranked = []
    for (task, setting), by_model in sorted(settings.items(), key=lambda item: natural_key(" ".join(item[0]))):
        head = headline([run for group in by_model.values() for run in group])
        best = [(model, _best_seeds(group, head)) for model, group in by_model.items()]
        ordered = sorted(((model, found) for model, found in best if found),
                         key=lambda pair: (-pair[1][1]["mean"], pair[0]))
        criterion = criteria.get(task)
        timing = _timing(criterion, head) if criterion else None
        entries = [{"rank": i, "model": model, **cell,
                    "solved": solved_summary(chosen, criterion, *timing) if criterion and timing else None}
                   for i, (model, (chosen, cell)) in enumerate(ordered, start=1)]
        if entries:
            base = base_label(next(iter(by_model.values()))[0])  # the variant label of a run with no other config
            stated = criterion_text(criterion, *timing) if criterion and timing and \
                any(entry["solved"] for entry in entries) else None
            if stated and timing and timing[0] != head.metric:  # the figures shown are not what the criterion reads
                stated = f"ranked by {_metric_name(head.metric)}; {stated}"
            ranked.append({"task": task, "setting": setting, "setting_base": base, "entries": entries,
                           "criterion": stated})
    return ranked


# ----- when a seed has solved a task ---------------------------------------------------------------------

SOLVED_FILE = Path(__file__).with_name("solved.yaml")
"""The tasks' criteria for having solved them, each with its source (:func:`load_criteria`)."""


SOLVED_TOLERANCE = FLOAT32_SLACK
"""How far below a threshold a value may fall and still reach it: accuracies are float32 fractions, and 950 right of
1,000 is stored as 0.94999999."""


def above_line(value: float, line: float, scale: float = 1.0) -> bool:
    """Whether a figure is above a paper's line between passing and failing (``value > line``, e.g. Table 3's test
    error above 5%), a figure within float32's slack of the line counting as on it: 950 right of 1,000 is stored as
    1 - 0.95 computed in floating point (0.0500000000000000444), which the paper's 5.00 does not fail. ``scale``:
    the factor both are in (100 for percent)."""
    return value > line + scale * FLOAT32_SLACK


@dataclass(frozen=True)
class Criterion:
    """When a seed has solved a task: its held-out ``metric`` (None: the metric its setting is ranked by) reached
    ``threshold``; how fast is when its validation curve ``curve`` (None: ``val/acc``, or an RL run's selection
    column) first did. ``settings``: the config it was stated for (:mod:`reports.settings`)."""

    threshold: float
    metric: str | None = None
    curve: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)


def load_criteria(path: Path = SOLVED_FILE) -> dict[str, Criterion]:
    """The criteria of ``path`` by task (see the file's header). Raises ``ValueError`` naming the file and task
    for an entry it cannot read; an absent file has none."""
    if not path.exists():
        return {}
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a mapping of tasks")
    criteria = {}
    for task, entry in data.items():
        where = f"{path}: {task}"
        if not isinstance(entry, dict) or not set(entry) <= {"threshold", "metric", "curve", "settings"}:
            raise ValueError(f"{where}: must map threshold (and optionally metric, curve, settings) to values")
        threshold = _as_number(entry.get("threshold"))
        if threshold is None:
            raise ValueError(f"{where}: threshold must be a number")
        names = {key: entry.get(key) for key in ("metric", "curve")}
        if any(value is not None and not isinstance(value, str) for value in names.values()):
            raise ValueError(f"{where}: metric and curve must be metric names")
        criteria[str(task)] = Criterion(threshold, names["metric"], names["curve"],
                                        check_settings(entry.get("settings"), where))
    return criteria


def _timing(criterion: Criterion, head: Headline) -> tuple[str, str, str]:
    """The results metric a setting's seeds are judged by (the criterion's, else the one the setting is ranked
    by), the curve column timed (the criterion's, else ``val/acc``, or for RL the selection rounds' column of
    the metric: ``select/win_rate`` for ``eval/win_rate``) and the unit of its steps."""
    rl = head in (EVAL_WIN, EVAL_RETURN)
    metric = criterion.metric or head.metric
    curve = criterion.curve or (metric.replace("eval/", "select/", 1) if rl else "val/acc")
    return metric, curve, "env steps" if rl else "steps"


def _reaches(value: float, threshold: float) -> bool:
    return value >= threshold - SOLVED_TOLERANCE


def has_curve(run: RunRecord, column: str) -> bool:
    """Whether the run's curves hold a value in ``column``."""
    return run.curves is not None and column in run.curves.columns and bool(run.curves[column].notna().any())


def first_reached(run: RunRecord, column: str, threshold: float) -> float | None:
    """The first step at which the run's curve ``column`` reached ``threshold``; None where it never did (or
    the curves lack the column: :func:`has_curve`)."""
    if not has_curve(run, column):
        return None
    curves = run.curves
    points = curves[curves[column].notna() & curves["step"].notna()]  # type: ignore[index]
    reached = points[[_reaches(float(value), threshold) for value in points[column]]]
    return float(reached["step"].min()) if len(reached) else None


def wall_time_at(run: RunRecord, step: float) -> float | None:
    """An estimate of the wall time at which the run was at ``step``: the step times its recorded wall time over
    its final step count (environment steps for RL); None where either is not recorded."""
    wall = recorded_wall_time(run)
    final = _as_number(run.results.get("env_steps" if run.is_rl else "steps"))
    return step * wall / final if wall is not None and final else None


def fmt_duration(seconds: float) -> str:
    """``"40 s"``, ``"12.5 min"``, ``"2.1 h"``."""
    if seconds < 100:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 90 * 60 else f"{seconds / 3600:.1f} h"


def solved_summary(runs: list[RunRecord], criterion: Criterion, metric: str, curve: str,
                   unit: str = "steps") -> dict[str, Any] | None:
    """How many of ``runs`` (one per seed) solved their task by ``criterion`` (``k`` of ``n``, the seeds whose
    results hold ``metric``), and, for those whose ``curve`` reached the threshold, the median step at which it
    first did and the median of the wall times :func:`wall_time_at` estimates there. A seed that solved it but
    whose curves lack the column (``lacking``), or whose validation never reached it (``below``), is counted,
    not timed. None where no seed reports ``metric`` or the runs do not share the criterion's settings."""
    if any(differences(run, criterion.settings) for run in runs):
        return None
    measured = [run for run in runs if run.metric(metric) is not None]
    if not measured:
        return None
    solved = [run for run in measured if _reaches(run.metric(metric), criterion.threshold)]  # type: ignore[arg-type]
    steps: list[float] = []
    walls: list[float | None] = []
    for run in solved:
        step = first_reached(run, curve, criterion.threshold)
        if step is not None:
            steps.append(step)
            walls.append(wall_time_at(run, step))
    lacking = sum(not has_curve(run, curve) for run in solved)
    below = len(solved) - len(steps) - lacking
    median_steps = statistics.median(steps) if steps else None
    median_wall = statistics.median(walls) if walls and None not in walls else None  # type: ignore[type-var]
    text = f"solved {len(solved)}/{len(measured)}"
    if median_steps is not None:
        wall = f"≈ {fmt_duration(median_wall)}" if median_wall is not None else "wall time –"
        text += f", median {fmt_count(median_steps)} {unit} ({wall})"
        text += f" over {len(steps)}" if len(steps) < len(solved) else ""
    elif solved:
        text += f", {unit} –"
    notes = ([f"{lacking} without {curve} in {'its' if lacking == 1 else 'their'} curves"] if lacking else []) + \
        ([f"{below} whose {curve} never reached it"] if below else [])
    text += f"; {', '.join(notes)}" if notes else ""
    return {"k": len(solved), "n": len(measured), "steps": median_steps, "wall_s": median_wall,
            "timed": len(steps), "lacking": lacking, "below": below, "text": text}


def _metric_name(metric: str) -> str:
    """A results metric as a row names it (the derived held-out mean in words)."""
    return HELD_OUT_ACC.header.removesuffix(" (%)") + " (mean over the sets)" if metric == HELD_OUT else metric


def criterion_text(criterion: Criterion, metric: str, curve: str, unit: str = "steps") -> str:
    """The criterion as a row states it: ``"solved: test/acc ≥ 95%; how fast: steps to the first val/acc ≥
    95%"``."""
    percent = metric.endswith("/acc") or "win_rate" in metric
    threshold = f"{100 * criterion.threshold:g}%" if percent else f"{criterion.threshold:g}"
    return f"solved: {_metric_name(metric)} ≥ {threshold}; how fast: {unit} to the first {curve} ≥ {threshold}"


def curve_progress(run: RunRecord) -> dict[str, int]:
    """The steps and epochs (``{"steps": n, "epochs": n}``, either left out) that a run which did not complete
    reached by its curves, where they stand in for ``results.json``'s: a run still running (or killed) has not
    brought that up to date, and a diverged or failed run records 0. Empty for a completed run."""
    curves = run.curves
    if curves is None or curves.empty or run.status == "completed":
        return {}
    found = {}
    for key, column in (("steps", "step"), ("epochs", "epoch")):
        if column not in curves or not curves[column].notna().any():
            continue
        reached = int(curves[column].max())
        recorded = run.results.get(key)
        if run.status == "running" or not isinstance(recorded, int | float) or reached > recorded:
            found[key] = reached
    return found


def progress(run: RunRecord) -> dict[str, Any]:
    """Steps and epochs as shown (thousands separated, as everywhere else): from ``results.json``, which a run still
    running (or killed) has not brought up to date, so for such a run from its curves so far
    (:func:`curve_progress`)."""
    found = {key: fmt_count(run.results[key]) if key in run.results else "–" for key in ("steps", "epochs")}
    for key, reached in curve_progress(run).items():
        found[key] = (f"{reached:,} (its curves so far)" if run.status == "running" else
                      f"{reached:,} (its curves, up to where it {_ENDED.get(run.status, 'ended')})")
    return found


_ENDED = {"diverged": "diverged", "failed": "failed", "interrupted": "was interrupted"}


@dataclass(frozen=True)
class Stop:
    """What ended a supervised or stepwise run (:func:`run_stop`): ``kind`` one of :data:`STOP_KINDS`, ``text`` as
    the tables say it ("10-minute cap", "val/acc reached 0.99")."""

    kind: str
    text: str


STOP_KINDS = ("cap", "target", "epoch_limit", "patience", "iteration_limit")


def _cap_stop(cap: object) -> Stop | None:
    """The time cap ``cap`` (seconds) as a Stop: in minutes where it is a whole number of tenths of a minute
    ("4.5-minute cap"), else in seconds ("430-second cap", not "7.16667-minute cap"); None where there is none."""
    if not isinstance(cap, int | float) or isinstance(cap, bool) or not cap:
        return None
    return Stop("cap", f"{cap / 60:g}-minute cap" if float(cap) % 6 == 0 else f"{cap:g}-second cap")


def _validation_steps(run: RunRecord) -> list[int]:
    """The optimiser step of each of a supervised run's validations (its curves' rows with the monitored metric),
    in order; empty where its curves or monitor are not at hand."""
    best = run.results.get("best")
    monitor = best.get("metric") if isinstance(best, dict) else None
    curves = run.curves
    if not isinstance(monitor, str) or curves is None or monitor not in curves.columns or "step" not in curves:
        return []
    return [int(step) for step in curves.dropna(subset=[monitor])["step"]]


def last_epoch_part(run: RunRecord) -> float | None:
    """The part of its last epoch that a supervised run trained, when the time cap cut that epoch short (e.g.
    0.13); None when the last epoch was whole, or where the curves cannot tell (a single validation).

    Lightning's time cap (``train.max_time_s``) stops training after a batch and then still validates, so a capped
    run's last validation, and perhaps its best checkpoint, can come part way through an epoch, which
    ``results.json`` counts as a whole one. An epoch's length in steps is the step of the first validation; the
    other stops (a target reached, patience spent, the epoch limit) act only at an epoch's end."""
    steps, epochs = run.results.get("steps"), run.results.get("epochs")
    validations = _validation_steps(run)
    if len(validations) < 2 or not isinstance(steps, int) or not isinstance(epochs, int) or validations[0] <= 0:
        return None
    part = steps / validations[0] - (epochs - 1)
    return part if 0 < part < 1 else None


def capped_in_first_epoch(run: RunRecord) -> bool:
    """Whether the time cap stopped a completed supervised run inside its first epoch: it validated there once,
    and ``results.json`` counts that as epoch 1, though how much of the epoch it was no earlier validation tells
    (:func:`last_epoch_part` needs two), so the steps it trained are what says how far it got."""
    stop = run_stop(run)
    return (last_epoch_part(run) is None and run.results.get("epochs") == 1
            and isinstance(run.results.get("steps"), int) and stop is not None and stop.kind == "cap")


def epochs_text(epochs: float) -> str:
    """A number of epochs as trained: whole ones as an integer, an epoch cut short with one decimal, rounded down
    (5.13 as "5.1", 15.08 as "15.0": not whole, never "16")."""
    return str(int(epochs)) if epochs == int(epochs) else f"{math.floor(epochs * 10) / 10:.1f}"


def run_stop(run: RunRecord) -> Stop | None:
    """What ended a completed supervised run, read from its config and results by the runner's stopping rules
    (harness/runners/supervised.py; results.json records no reason): a last epoch cut short, which only the
    ``train.max_time_s`` cap does (:func:`last_epoch_part`); the monitored validation metric reaching
    ``train.stop_at``; ``train.max_epochs``; ``train.early_stop_patience`` epochs without a strictly better one
    (Lightning's EarlyStopping, counted from the best epoch); otherwise, with epochs left, the time cap. A stepwise
    run by its own runner's rules (:func:`_stepwise_stop`). None for an RL run (RL runs record their own
    ``stop_reason``), a curriculum (each stage stops by these rules on its own), a run not completed, or one none
    of these rules explains."""
    results = run.results
    epochs, best = results.get("epochs"), results.get("best")
    if run.is_stepwise and not run.is_rl:
        return _stepwise_stop(run)
    if run.is_rl or run.protocol == CURRICULUM or run.status != "completed" \
            or not isinstance(epochs, int) or not isinstance(best, dict):
        return None
    cap = cfg_get(run.config, "train.max_time_s")
    at_cap = _cap_stop(cap)
    if at_cap and last_epoch_part(run) is not None:
        return at_cap
    monitor, value, best_epoch = best.get("metric"), best.get("value"), best.get("epoch")
    target = cfg_get(run.config, "train.stop_at")
    if isinstance(target, int | float) and isinstance(value, int | float) and (
            value >= target if cfg_get(run.config, "train.monitor_mode") != "min" else value <= target):
        return Stop("target", f"{monitor} reached {float(target)!r}")
    limit = cfg_get(run.config, "train.max_epochs")
    if isinstance(limit, int) and epochs >= limit:
        return Stop("epoch_limit", "its epoch limit")
    patience = cfg_get(run.config, "train.early_stop_patience")
    if isinstance(patience, int) and isinstance(best_epoch, int) and epochs - best_epoch >= patience:
        return Stop("patience", f"{patience} epoch{'s' * (patience != 1)} without a better {monitor}")
    return at_cap


def _stepwise_stop(run: RunRecord) -> Stop | None:
    """What ended a completed stepwise run, by the rules of harness/runners/stepwise.py (results.json records no
    reason), which are checked at each validation: validation accuracy reaching ``stepwise.stop_at`` (the best
    value is the one that reached it), ``stepwise.iterations`` outer cycles, else the ``stepwise.max_time_s`` cap
    (which validates at the cycle it stops at). None for a run not completed or none of these explains."""
    steps, best = run.results.get("steps"), run.results.get("best")
    if run.status != "completed" or not isinstance(steps, int):
        return None
    target, value = cfg_get(run.config, "stepwise.stop_at"), best.get("value") if isinstance(best, dict) else None
    if isinstance(target, int | float) and isinstance(value, int | float) and value >= target:
        return Stop("target", f"val/acc reached {float(target)!r}")
    iterations = cfg_get(run.config, "stepwise.iterations")
    if isinstance(iterations, int) and steps >= iterations:
        return Stop("iteration_limit", "its iteration limit")
    cap = cfg_get(run.config, "stepwise.max_time_s")
    return _cap_stop(cap)


def stop_rule(run: RunRecord) -> str | None:
    """What ended a completed supervised run, as the tables say it (:func:`run_stop`); None where unknown."""
    stop = run_stop(run)
    return stop.text if stop else None


def _capped_alone_on_a_cpu(run: RunRecord) -> bool:
    """Whether a completed supervised run was stopped by the time cap and trained on the CPU, alone and in one
    attempt: a GPU is not bitwise deterministic, a stack's members train as one, and a fresh run does not draw a
    resumed one's random numbers."""
    stop = run_stop(run)
    return not run.is_stepwise and stop is not None and stop.kind == "cap" and not run.gpu \
        and not run.stack and len(run.results.get("attempts") or []) <= 1


def checkpoint_budget(run: RunRecord) -> int | None:
    """For a completed supervised run that the time cap stopped, the epochs up to its tested (best) checkpoint,
    where that checkpoint closed a whole epoch; None for any other run. Trained for exactly these epochs without
    the cap (``train.max_epochs=K train.max_time_s=null``), the same config and seed train the same budget on a
    machine of any speed, and on the same kind of CPU reach that checkpoint again, bit for bit: each epoch's order
    is drawn from the seed, a CPU run is deterministic (harness/runners/supervised.py), and the cap changes nothing
    before it stops training (on another kind of CPU the arithmetic rounds differently, and the difference grows
    with training: the README's Results section gives runs repeated both ways). None, too, for a run trained on a
    GPU (not bitwise deterministic), in a stack (its members train as one), or resumed (a fresh run does not draw
    the resumed one's random numbers)."""
    best, epochs = run.results.get("best"), run.results.get("epochs")
    if not _capped_alone_on_a_cpu(run) or not isinstance(best, dict) or not isinstance(epochs, int):
        return None
    best_epoch = best.get("epoch")
    if not isinstance(best_epoch, int) or best_epoch < 1:
        return None
    if best_epoch < epochs or (len(_validation_steps(run)) >= 2 and last_epoch_part(run) is None):
        return best_epoch
    return None


def budget_settings(epochs: int) -> dict[str, Any]:
    """The config settings that train a capped run's :func:`checkpoint_budget`: that many epochs, without the cap."""
    return {"train.max_epochs": epochs, "train.max_time_s": None}


def step_budget(run: RunRecord) -> int | None:
    """For a completed supervised run that the time cap stopped where :func:`checkpoint_budget` has no epochs (its
    tested checkpoint is the validation the cap made part way through its last epoch, or its curves hold that one
    validation only), the optimiser steps it trained; None for any other run, and like checkpoint_budget for a run
    trained on a GPU, in a stack or resumed. The cap stops training after a batch and validates there;
    ``train.max_steps`` (:func:`step_settings`) stops after that step and validates there too, so the same config
    trained for these steps without the cap reaches that validation and checkpoint again, part way through the
    epoch or at its end."""
    steps = run.results.get("steps")
    if not _capped_alone_on_a_cpu(run) or not isinstance(steps, int) or steps < 1 or checkpoint_budget(run) is not None:
        return None
    validations = _validation_steps(run)
    return steps if validations and validations[-1] == steps else None


def step_settings(steps: int) -> dict[str, Any]:
    """The config settings that train a capped run's :func:`step_budget`: that many steps, without the cap."""
    return {"train.max_steps": steps, "train.max_time_s": None}


def cycle_budget(run: RunRecord) -> int | None:
    """For a completed stepwise run that its time cap stopped, the outer cycles it trained; None for any other run.
    Trained for exactly these cycles without the cap (:func:`cycle_settings`), the same config and seed train the
    run again on a machine of any speed: each cycle's worlds are drawn from the seed and the cycle's number
    (``cycle_generator`` in harness/runners/stepwise.py), the cap changes nothing before it stops training, and the
    last cycle is validated either way (the cap validates where it stops, the iteration limit at its end). None,
    too, for a run trained on a GPU (not bitwise deterministic) or resumed."""
    stop, steps = run_stop(run), run.results.get("steps")
    if not run.is_stepwise or stop is None or stop.kind != "cap" or not isinstance(steps, int) or steps < 1 \
            or run.gpu or len(run.results.get("attempts") or []) > 1:
        return None
    return steps


def cycle_settings(cycles: int) -> dict[str, Any]:
    """The config settings that train a capped stepwise run's :func:`cycle_budget`: that many cycles, no cap."""
    return {"stepwise.iterations": cycles, "stepwise.max_time_s": None}


def capped_budget(run: RunRecord) -> dict[str, Any] | None:
    """The settings that train a capped run's budget without the cap (:func:`checkpoint_budget`, else
    :func:`step_budget`, for a supervised run, :func:`cycle_budget` for a stepwise one); None where it has none."""
    if run.is_stepwise:
        cycles = cycle_budget(run)
        return None if cycles is None else cycle_settings(cycles)
    epochs = checkpoint_budget(run)
    if epochs is not None:
        return budget_settings(epochs)
    steps = step_budget(run)
    return None if steps is None else step_settings(steps)


def recorded_wall_time(run: RunRecord) -> float | None:
    """The wall time ``results.json`` records, in seconds; None where it records no number, or 0 s for a running
    (or killed) run: ``results.json`` holds 0 s until an attempt ends, which is not how long it has run."""
    wall = _as_number(run.results.get("wall_time_s"))
    return None if wall is None or (run.status == "running" and wall == 0) else wall


def wall_time(run: RunRecord, text: str) -> str:
    """``text`` (the recorded wall time, formatted), or "–" for a running (or killed) run that has recorded none
    yet (:func:`recorded_wall_time`)."""
    return "–" if run.status == "running" and recorded_wall_time(run) is None else text


def run_row(run: RunRecord, head: Headline = TEST_ACC) -> dict[str, Any]:
    """One line of the index's runs table; ``acc`` is the headline metric (test/acc unless RL)."""
    acc = run.metric(head.metric)
    wall = run.results.get("wall_time_s")
    return {
        "run_id": run.run_id, "page": run.page, "status": run.status, "gone": run.gone, "seed": run.seed,
        "origin": run.origin,
        "stale": run.is_stale,
        "variant": (variant_label(run) if run.status != "unreadable" else "–")
        + (f" (a reproduce check of {run.reproduces})" if run.reproduces else ""),
        "acc": fmt(head.scale * acc) if acc is not None else "–",
        "steps": fmt_count(run.results["env_steps"]) if run.is_rl and "env_steps" in run.results
        else progress(run)["steps"],
        "wall": wall_time(run, fmt(float(wall), 0) if isinstance(wall, int | float) else "–") + _stack_mark(run),
        "finished": run.results.get("finished_at") or "–",
    }


def _stack_mark(run: RunRecord) -> str:
    """For a member of a stack (``stack`` in its results.json), `` (a stack of K)``: its wall time is the stack's,
    shared by its members; '' for a run trained alone."""
    return f" (a stack of {len(run.stack)})" if run.stack else ""


def run_groups(runs: list[RunRecord]) -> list[dict[str, Any]]:
    """The runs, one table per (task, model)."""
    groups: dict[tuple[str, str], list[RunRecord]] = {}
    for run in runs:
        groups.setdefault((run.task, run.model), []).append(run)
    out = []
    for task, model in sorted(groups):
        head = headline(groups[(task, model)])
        out.append({"task": task, "model": model, "anchor": anchor(task, model), "header": head.header,
                    "steps_header": "env steps" if head in (EVAL_WIN, EVAL_RETURN) else "steps",
                    "runs": [run_row(run, head) for run in groups[(task, model)]]})
    return out


def provenance(runs: list[RunRecord]) -> dict[str, Any]:
    """The git commits and package versions the runs report."""
    commits: dict[str, dict[str, Any]] = {}
    versions: dict[str, set[str]] = {}
    for run in runs:
        git = run.results.get("git")
        if isinstance(git, dict) and git.get("commit"):
            entry = commits.setdefault(str(git["commit"]), {"commit": str(git["commit"]), "runs": 0, "dirty": set()})
            entry["runs"] += 1
            entry["dirty"].add("dirty" if git.get("dirty") else "clean" if git.get("dirty") is False else "unknown")
        found = run.results.get("versions")
        if isinstance(found, dict):
            for package, version in found.items():
                versions.setdefault(str(package), set()).add(str(version))
    return {
        "commits": [{**entry, "dirty": ", ".join(sorted(entry["dirty"]))}
                    for _, entry in sorted(commits.items())],
        "versions": [{"package": package, "versions": ", ".join(sorted(found))}
                     for package, found in sorted(versions.items())],
    }


# ----- paper tables --------------------------------------------------------------------------------------

def _same(config_value: Any, row_value: Any) -> bool:
    if isinstance(config_value, list):
        return [str(v) for v in config_value] == [str(row_value)]
    return config_value is not None and str(config_value) == str(row_value)


def matching_runs(runs: list[RunRecord], table: TableSpec, row: dict[str, Any], model: str) -> list[RunRecord]:
    """Runs of the row's task and ``model`` under the single protocol whose config matches the row (any
    config when the table has no ``config_key``)."""
    task = table.task_for(row)
    return [run for run in runs
            if run.task == task and run.model == model and run.protocol == SINGLE
            and (table.config_key is None
                 or _same(cfg_get(run.config, table.config_key), row.get(table.row_key)))]


def colour(diff: float, tolerance: float) -> str:
    if abs(diff) <= tolerance:
        return "match-green"
    if abs(diff) <= 3 * tolerance:
        return "match-amber"
    return "match-red"


def _beside(runs: list[RunRecord], metric: str, scale: float, d: int, settings: dict[str, Any]) -> list[str]:
    """Runs that are not like for like, grouped by what differs: ``"n 6 ≠ 9: 95.5 (n=1)"``; stale runs too."""
    groups: dict[tuple[str, str], list[RunRecord]] = {}
    for run in runs:
        diffs = differences(run, settings)
        if run.is_stale:
            diffs.append("stale code")
        # one group per configuration: two configurations that differ from the paper alike are still two
        # experiments, and one run per seed across them would keep only the latest and hide the other
        groups.setdefault(("; ".join(diffs) or "same settings", fingerprint_of(run)), []).append(run)
    shared = Counter(label for label, _ in groups)
    out = []
    for (label, _), members in sorted(groups.items(), key=lambda item: (item[0][0], variant_label(item[1][0]))):
        chosen = per_seed(members)
        mean, _ = mean_sd([scale * run.metric(metric) for run in chosen])  # type: ignore[operator]
        origins = sorted({run.origin for run in chosen})
        named = f"{label} ({variant_label(chosen[0])})" if shared[label] > 1 else label
        out.append(f"{named}: {fmt(mean, d)} (n={len(chosen)}, {'/'.join(origins)})")
    return out


def _verdict_text(verdict: str, table: TableSpec) -> str:
    """A verdict cell as the paper states it: ``"> 5"`` or ``"≤ 5"``."""
    return f"{'>' if verdict == 'above' else '≤'} {table.verdict_above:g}"


def compare_cell(runs: list[RunRecord], table: TableSpec, row: dict[str, Any], model: str) -> dict[str, Any]:
    """A published cell beside ours. Ours is the mean over seeds of the completed, not stale runs whose
    config matches the row and every setting of the published number; any other completed run of the row's
    task and model is listed beside it (``beside``), labelled with what differs, and never coloured."""
    published = row.get(model)
    d = table.decimals
    verdict = published[0] if table.verdict_above is not None and isinstance(published, list) else None
    pub_mean = float(published[0]) if verdict is None and isinstance(published, list) and published \
        and published[0] is not None else None
    pub_sd = published[1] if isinstance(published, list) and len(published) > 1 else None
    cell: dict[str, Any] = {
        "published": _verdict_text(verdict, table) if verdict else fmt(pub_mean, d) if pub_mean is not None else "–",
        "published_sd": str(pub_sd) if pub_sd is not None else None,
        "ours": NO_RUN, "ours_sd": None, "n": 0, "diff": "", "css": "no-run", "runs": [], "note": None,
        "variant": None, "alternatives": None, "beside": [], "origins": "",
    }
    metric = table.metric_for(row)
    settings = table.settings_for(row)
    candidates = matching_runs(runs, table, row, model)
    completed = [run for run in candidates if run.status == "completed" and run.metric(metric) is not None]
    like = [run for run in completed if not run.is_stale and not differences(run, settings)]
    unlike = [run for run in completed if run not in like]
    cell["beside"] = _beside(unlike, metric, table.scale, d, settings)
    if not like:
        if unlike:
            cell.update(ours="no like-for-like run", css="no-match")
        elif candidates:
            cell["note"] = status_summary(candidates)
        return cell
    group, others = main_group(like)
    chosen = per_seed(group)
    mean, sd = mean_sd([table.scale * run.metric(metric) for run in chosen])  # type: ignore[operator]
    cell.update(ours=fmt(mean, d), ours_sd=fmt(sd, d) if sd is not None else None, n=len(chosen),
                runs=[{"run_id": run.run_id, "page": run.page, "seed": run.seed, "origin": run.origin}
                      for run in chosen],
                variant=variant_label(chosen[0]), origins="/".join(sorted({run.origin for run in chosen})))
    if others:
        alternatives = []
        for other in others:
            other_runs = per_seed(other)
            other_mean, _ = mean_sd([table.scale * run.metric(metric) for run in other_runs])  # type: ignore[operator]
            alternatives.append(f"{variant_label(other_runs[0])}: {fmt(other_mean, d)} (n={len(other_runs)})")
        cell["note"] = f"+{len(others)} other config{'s' if len(others) > 1 else ''}"
        cell["alternatives"] = "; ".join(alternatives)
    lost = [run for run in candidates if run.status == "diverged" and fingerprint_of(run) == fingerprint_of(chosen[0])]
    if lost:  # seeds of the same configuration that ended on a non-finite loss: untested, outside the mean
        cell["note"] = "; ".join(filter(None, [cell["note"], f"{len(lost)} more diverged"]))
    if verdict is not None:
        agrees = above_line(mean, table.verdict_above, table.scale) == (verdict == "above")
        cell.update(diff="same side" if agrees else "other side", css="match-green" if agrees else "match-red")
    elif pub_mean is not None:
        diff = mean - pub_mean
        text = f"{diff:+.{d}f}"
        cell.update(diff=text if float(text) != 0 else f"{0:.{d}f}", css=colour(diff, table.tolerance))
    else:
        cell["css"] = "no-published"
    return cell


def compare_table(runs: list[RunRecord], table: TableSpec) -> dict[str, Any]:
    label_keys: list[str] = []
    for row in table.rows:
        label_keys.extend(key for key in table.labels(row) if key not in label_keys)
    rows = [{"labels": [row.get(key, "") for key in label_keys], "metric": table.metric_for(row),
             "cells": [compare_cell(runs, table, row, model) for model in table.models]} for row in table.rows]
    summary = Counter(cell["css"] for row in rows for cell in row["cells"])
    return {"id": table.id, "title": table.title, "protocol": table.protocol, "source": table.source,
            "task": ", ".join(table.tasks), "config_key": table.config_key, "row_key": table.row_key,
            "tolerance": fmt(table.tolerance, 1), "tolerance3": fmt(3 * table.tolerance, 1),
            "verdict_above": None if table.verdict_above is None else f"{table.verdict_above:g}",
            "label_keys": label_keys, "models": table.models, "rows": rows,
            "column_notes": [{"model": m, "note": n} for m, n in sorted(table.column_notes.items())],
            "settings": describe(table.settings),
            "summary": {key: summary.get(key, 0) for key in
                        ("match-green", "match-amber", "match-red", "no-match", "no-run", "no-published")}}


# ----- one run -------------------------------------------------------------------------------------------

def metric_rows(metrics: dict[str, Any]) -> list[dict[str, str]]:
    rows = []
    for name in sorted(metrics):
        value = metrics[name]
        if isinstance(value, int | float) and not isinstance(value, bool):
            percent = f"{100 * value:.2f}%" if name.endswith(("/acc", "/error")) or "/win_rate" in name else ""
            rows.append({"name": name, "value": f"{value:.6g}", "percent": percent})
        else:
            rows.append({"name": name, "value": str(value), "percent": ""})
    return rows


def stage_rows(run: RunRecord) -> list[dict[str, Any]]:
    rows = []
    for name, stage in run.stages.items():
        results = stage["results"]
        best = results.get("best") if isinstance(results.get("best"), dict) else {}
        tasks = results.get("tasks")
        metrics = results.get("metrics") if isinstance(results.get("metrics"), dict) else {}
        acc = metrics.get(MAIN_METRIC)
        rows.append({"stage": name, "status": stage["status"],
                     "tasks": ", ".join(map(str, tasks)) if isinstance(tasks, list) else "–",
                     "steps": fmt_count(results.get("steps")),
                     "best": f"{best.get('metric')} = {fmt(best.get('value'), 4)} at step {best.get('step')}"
                     if best else "–",
                     "acc": fmt(100 * acc) if isinstance(acc, int | float) else "–"})
    return rows


# ----- published facts -----------------------------------------------------------------------------------

def fmt_number(value: float | None, decimals: int = 1) -> str:
    """A number with thousands separators and ``decimals`` places; a dash for none."""
    return "–" if value is None or math.isnan(value) else f"{value:,.{decimals}f}"


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


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


def _reduce(values: list[float], how: str) -> float:
    return {"median": statistics.median, "mean": statistics.fmean, "min": min, "max": max}[how](values)


def _ours_from_runs(fact: FactSpec, runs: list[RunRecord]) -> dict[str, Any]:
    spec = fact.ours
    task, model = str(spec["runs"]["task"]), str(spec["runs"]["model"])
    key, how, scale = str(spec["value"]), str(spec.get("reduce", "median")), float(spec.get("scale", 1.0))
    found = [(run, _as_number(cfg_get(run.results, key))) for run in runs
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
    value = _as_number(cfg_get(record, key)) if record is not None else None
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


# ----- one reinforcement-learning run ----------------------------------------------------------------------

def last_value(run: RunRecord, name: str) -> float | None:
    """The run's final ``name`` from results.json, else the last value of that column in metrics.csv (a run
    still in progress)."""
    value = run.metric(name)
    if value is not None or run.curves is None or name not in run.curves.columns:
        return value
    points = run.curves[name].dropna()
    return float(points.iloc[-1]) if len(points) else None


def _last_iteration(run: RunRecord, name: str) -> float | None:
    """``name`` in the run's last training iteration: results.json's final metrics when it has them, else the last
    row of metrics.csv that has a training win rate. Not the column's last value wherever it was: a puzzle type
    that no episode of the last iteration ended on has no value there, and an older one would pass for it."""
    if run.metrics:
        return run.metric(name)
    curves = run.curves
    if curves is None or name not in curves.columns or "train/win_rate" not in curves.columns:
        return None
    rows = curves[curves["train/win_rate"].notna()]
    if rows.empty:
        return None
    value = _as_number(rows[name].iloc[-1])
    return value if value is not None and math.isfinite(value) else None


def _percent(value: float | None) -> str:
    return fmt(100 * value) if value is not None else "–"


def fmt_count(value: Any) -> str:
    """A count with thousands separators and no decimals; a dash for anything that is not a finite number."""
    number = _as_number(value)
    return f"{number:,.0f}" if number is not None else "–"


def rl_summary(run: RunRecord) -> dict[str, Any] | None:
    """An RL run's env steps, throughput and final evaluation beside its last training iteration; None for a
    supervised run."""
    if not run.is_rl:
        return None
    results = run.results
    rate = _as_number(cfg_get(results, "throughput.env_steps_per_s"))
    train_time = _as_number(results.get("train_time_s"))
    wins = last_value(run, WIN_RATE) is not None or last_value(run, "train/win_rate") is not None
    rows = [{"name": "win rate (%)", "eval": _percent(last_value(run, WIN_RATE)),
             "train": _percent(last_value(run, "train/win_rate"))}] if wins else []
    rows += [
        {"name": "episode return", "eval": fmt(last_value(run, RETURN), 2),
         "train": fmt(last_value(run, "train/episode_return"), 2)},
        {"name": "episode length", "eval": fmt(last_value(run, "eval/episode_len"), 1),  # runs from before it: –
         "train": fmt(last_value(run, "train/episode_len"), 1)},
        {"name": "episodes", "eval": fmt_count(last_value(run, "eval/episodes")),
         "train": fmt_count(last_value(run, "train/episodes"))},
    ]
    types = [{"type": kind, "eval": _percent(last_value(run, f"{WIN_RATE}/{kind}")),
              "train": _percent(_last_iteration(run, f"train/win_rate/{kind}"))} for kind in puzzle_types(run)]
    return {
        "env_steps": fmt_count(results.get("env_steps", results.get("steps"))),
        "iterations": fmt_count(results.get("iterations")),
        "stop_reason": results.get("stop_reason") or "–",
        "train_time": f"{train_time:,.0f} s" if train_time is not None else "–",
        "throughput": f"{rate:,.0f} env steps/s (median over iterations)" if rate is not None else "–",
        "evaluated": any(name.startswith("eval/") for name in run.metrics),
        "algorithm": cfg_get(run.config, "rl.algorithm") or "–",
        "rows": rows, "puzzle_types": types, "puzzle_format": PUZZLE_TYPES.get(run.task, ""),
    }


PREDICTIONS_SHOWN = 12


def predictions_view(run: RunRecord) -> dict[str, Any] | None:
    """A run's stored per-example predictions (harness/runners/predictions.py): per test split the examples,
    the wrong ones and the accuracy recomputed from the file beside the reported one; and a sample of wrong
    answers (as text when the task renders examples, else as class ids). None when the run has none."""
    folder = run.path / "predictions"
    summary = read_json_object(folder / "summary.json")
    if summary is None:
        return None
    splits = []
    for split, numbers in summary.items():
        numbers = numbers if isinstance(numbers, dict) else {}
        acc, reported = _as_number(numbers.get("acc")), _as_number(numbers.get("reported_acc"))
        splits.append({"split": split, "examples": fmt_count(numbers.get("examples")),
                       "wrong": fmt_count(numbers.get("wrong")),
                       "acc": _percent(acc), "reported": _percent(reported),
                       "agrees": _agreement(acc, reported, _as_number(numbers.get("examples")))})
    try:
        wrong = json.loads((folder / "wrong.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        wrong = None
    text = isinstance(wrong, list)
    if not text:
        wrong = _wrong_rows(folder)
    return {"splits": splits, "wrong": (wrong or [])[:PREDICTIONS_SHOWN * 4], "text": text,
            "file": f"{run.rel_path}/predictions/predictions.csv.gz", "gpu": run.gpu}


def _agreement(acc: float | None, reported: float | None, examples: float | None) -> str:
    """The "agree" cell of a split: yes within float32 rounding, else the difference in points and in examples."""
    if acc is None or reported is None:
        return "–"
    if abs(acc - reported) <= FLOAT32_SLACK:
        return "yes"
    apart = "" if not examples else f", {fmt_count(round(abs(acc - reported) * examples))} example(s)"
    return f"no ({100 * (acc - reported):+.2f} points{apart})"


def _wrong_rows(folder: Path) -> list[dict[str, Any]]:
    """The first wrong rows of each split of the predictions table ([] when it cannot be read)."""
    import csv
    import gzip

    shown: Counter[str] = Counter()
    rows = []
    try:
        with gzip.open(folder / "predictions.csv.gz", "rt", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                if row.get("correct") == "0" and shown[row["split"]] < PREDICTIONS_SHOWN:
                    shown[row["split"]] += 1
                    rows.append(row)
    except (OSError, EOFError, ValueError, KeyError):
        return []
    return rows
