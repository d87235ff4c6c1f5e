"""The index page's tables: the task x model matrix (:func:`matrix`), the models ranked per task and setting
(:func:`rankings`), the runs of each task and model (:func:`run_groups`) and the commits and package versions the
runs report (:func:`provenance`)."""

from __future__ import annotations

import statistics
from typing import Any

from reports.papers import PaperSpec
from reports.run_progress import progress, wall_time
from reports.settings import other_sets_read
from reports.solved import Criterion, criterion_text, criterion_timing, load_criteria, metric_name, solved_summary
from reports.store import HELD_OUT, RunRecord, base_label, cfg_get, natural_key, per_seed, variant_label
from reports.tables import (
    EVAL_RETURN,
    EVAL_WIN,
    HELD_OUT_ACC,
    NO_RUN,
    RETURN,
    TEST_ACC,
    WIN_RATE,
    Headline,
    fmt,
    fmt_count,
    mean_sd,
    status_summary,
)


def anchor(*parts: str) -> str:
    return "runs-" + "-".join(parts)


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

    Where the task has a criterion for having solved it (``criteria``, by default
    :data:`reports.solved.SOLVED_FILE`), each entry's ``solved`` says how many of its seeds met it and how fast
    (:func:`reports.solved.solved_summary`), and the row's ``criterion`` states it; otherwise both are None."""
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
        timing = criterion_timing(criterion, head) if criterion else None
        entries = [{"rank": i, "model": model, **cell,
                    "solved": solved_summary(chosen, criterion, *timing) if criterion and timing else None}
                   for i, (model, (chosen, cell)) in enumerate(ordered, start=1)]
        if entries:
            base = base_label(next(iter(by_model.values()))[0])  # the variant label of a run with no other config
            stated = criterion_text(criterion, *timing) if criterion and timing and \
                any(entry["solved"] for entry in entries) else None
            if stated and timing and timing[0] != head.metric:  # the figures shown are not what the criterion reads
                stated = f"ranked by {metric_name(head.metric)}; {stated}"
            ranked.append({"task": task, "setting": setting, "setting_base": base, "entries": entries,
                           "criterion": stated})
    return ranked


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
