"""The README's result tables, generated from the reference store ``results/`` and nothing else.

    python -m reports.readme --write    # rewrite README.md between the results markers
    python -m reports.readme --check    # exit 1 when README.md and the store disagree (a test runs this)

One section per task family, then the speed tables of the published ``make perf`` records (``results/perf/``,
:mod:`reports.perf`). Runs are grouped by configuration (seeds pooled: mean ± sd, n); every row names
its run ids, so each number traces to a stored run with its config, curves and provenance. A paper's number
stands beside ours only when the runs match the settings it was measured under (``reports/papers/*.yaml``,
:mod:`reports.settings`); otherwise the paper's setting is named with what differs. Stale runs (their code has
changed since) are marked.
"""

from __future__ import annotations

import argparse
import difflib
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from reports.babi_generator import babi_generator_section
from reports.markdown import table as _table
from reports.paper_tables import above_line
from reports.papers import PaperSpec, TableSpec, load_papers
from reports.perf import speed_section
from reports.readme_cells import mean_of, mean_sd, metric_values, minutes, run_ids
from reports.readme_world import STREAM_TASKS, world_setting, world_state_section
from reports.reproduced import carried_section
from reports.reproduced import section as reproduced_section
from reports.settings import differences
from reports.stops import capped_in_first_epoch, epochs_text, last_epoch_part, run_stop
from reports.store import (
    ALL_OPERATIONS,
    CURRICULUM,
    REFERENCE,
    RunRecord,
    canonical_operations,
    cfg_get,
    fingerprint_of,
    flat_settings,
    load_stores,
    natural_key,
    shown_value,
    telling_keys,
    variant_label,
)

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RESULTS_DIR = ROOT / "results"
PAPERS_DIR = Path(__file__).resolve().parent / "papers"
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
STAGES = ("1_scratch", "2_pretrain", "3_frozen_central", "4_frozen_encoder")


ByConfig = dict[tuple[str, str], list[RunRecord]]


def _by_config(runs: list[RunRecord], task: str, status: str) -> ByConfig:
    """The runs of ``task`` with ``status``, by model and configuration (seeds pooled)."""
    found: ByConfig = {}
    for run in runs:
        if run.task == task and run.status == status:
            found.setdefault((run.model, fingerprint_of(run)), []).append(run)
    return found


def groups(runs: list[RunRecord], task: str) -> list[list[RunRecord]]:
    """The completed runs of ``task``, one group per configuration (seeds pooled), ordered by model and id."""
    ordered = sorted(_by_config(runs, task, "completed").values(),
                     key=lambda g: (g[0].model, natural_key(g[0].run_id)))
    return [sorted(group, key=lambda run: natural_key(str(run.seed))) for group in ordered]


def diverged_runs(runs: list[RunRecord], task: str) -> ByConfig:
    """The diverged runs of ``task`` (a non-finite loss ended them before their test), by model and configuration,
    so that a table of the completed seeds of a configuration can say how many seeds it lost."""
    return _by_config(runs, task, "diverged")


def diverged_section(runs: list[RunRecord]) -> list[str]:
    """Every diverged reference run, with its configuration and whether seeds of that configuration completed:
    the tables show completed runs, naming a diverged seed beside its configuration's completed ones
    (:func:`_seeds_and_ids`), so a configuration whose every seed diverged would otherwise appear in none."""
    lost = sorted((run for run in runs if run.status == "diverged"),
                  key=lambda run: (run.task, natural_key(run.run_id)))
    if not lost:
        return []
    completed = {(run.task, run.model, fingerprint_of(run)) for run in runs if run.status == "completed"}
    rows = [[f"`{run.run_id}`", run.task, run.model, variant_label(run), str(run.results.get("error") or "–"),
             "yes, in its table above" if (run.task, run.model, fingerprint_of(run)) in completed
             else "none: no table above shows this configuration"]
            for run in lost]
    return ["### Diverged runs", "",
            "A run whose training loss becomes non-finite stops there untested and is stored as diverged "
            "(`harness/runners/launch.py`). Every reference run that did, with what tells its configuration "
            "apart from the other configurations of its task and model:", "",
            *_table(["run", "task", "model", "configuration", "ended", "completed seeds of its configuration"],
                    rows)]


def _seeds_and_ids(group: list[RunRecord], diverged: ByConfig) -> tuple[str, str]:
    """A table's seeds and runs cells: the completed seeds of ``group`` and the diverged ones of its configuration,
    which have no test error and are named as such (``3 (1 diverged)``)."""
    lost = sorted(diverged.get((group[0].model, fingerprint_of(group[0])), []),
                  key=lambda run: natural_key(str(run.seed)))
    seeds = f"{len(group) + len(lost)} ({len(lost)} diverged)" if lost else str(len(group))
    return seeds, ", ".join([run_ids(group), *(f"`{run.run_id}` (diverged)" for run in lost)])


def published(papers: list[PaperSpec], runs: list[RunRecord], metric: str, scale: float = 1.0) -> str:
    """The paper's number for these runs' task, model and row, when the runs share its settings; else the
    paper's number with what differs; '–' when no paper reports it."""
    run = runs[0]
    for paper in papers:
        for table in paper.tables:
            for row in table.rows:
                if table.task_for(row) != run.task or table.metric_for(row) != metric or run.model not in row:
                    continue
                if table.config_key is not None and not _row_matches(run, table, row):
                    continue
                cell = row[run.model]
                if not isinstance(cell, list) or cell[0] is None:
                    continue
                value = f"{float(cell[0]) * scale:.{table.decimals}f}"
                diffs = differences(run, table.settings_for(row))
                return value if not diffs else f"{value} at other settings ({'; '.join(diffs)})"
    return "–"


def _row_matches(run: RunRecord, table: TableSpec, row: dict[str, Any]) -> bool:
    have = cfg_get(run.config, str(table.config_key))
    want = row.get(str(table.row_key))
    return ([str(v) for v in have] == [str(want)]) if isinstance(have, list) else str(have) == str(want)


def _babi_data(run: RunRecord) -> str:
    """The data set and source; a training file taken from another set (en-10k without task 3's) is named, for
    runs that trained on the files (a generated run that is also tested on the files trains on generated data)."""
    source = cfg_get(run.config, "task.source")
    data = f"{cfg_get(run.config, 'task.data_set')} ({source})"
    borrowed = source == "files" and "using en's" in str(run.results.get("data_source") or "")
    return data + ("; en's train file" if borrowed else "")


def _throughput(runs: list[RunRecord], key: str = "train/examples_per_s") -> str:
    return mean_of(runs, key, within="throughput")


def _budget(run: RunRecord) -> str:
    """The training time a run was allowed (``train.max_time_s``), in minutes ('–' when unbounded), and its early
    stopping (``train.early_stop_patience``: epochs without a better validation score) when it had one."""
    limit = cfg_get(run.config, "train.max_time_s")
    patience = cfg_get(run.config, "train.early_stop_patience")
    time = f"{float(limit) / 60:g} min" if isinstance(limit, int | float) else "–"
    return time + (f", patience {patience}" if isinstance(patience, int) else "")


def _all_tasks(group: list[RunRecord]) -> bool:
    return str(cfg_get(group[0].config, "task.babi_id")) == "all"


def told_apart(configurations: list[list[RunRecord]], row_key: Callable[[RunRecord], tuple[str, ...]],
               family_key: Callable[[RunRecord], tuple[str, ...]], named: Callable[[str], bool]
               ) -> list[list[tuple[str, str]]]:
    """For each configuration, the settings (name, value as shown) that name it beside the others of its family
    (the same ``family_key``: e.g. one model on one task, any budget), e.g. ``[("lr", "0.003")]``: the entries
    ``named`` accepts (the model's, say) where it departs from what most of its family share, and any entry that
    tells it apart from the configurations whose rows would otherwise read alike (the same ``row_key``). None
    for a configuration alone in its family, or that keeps every setting most of its family share
    (:func:`reports.store.telling_keys`)."""
    flat = [flat_settings(group[0].config) for group in configurations]  # a neutral added key: as if unset
    keys: list[list[str]] = [[] for _ in configurations]
    passes = ((family_key, named), (row_key, lambda key: True))
    for key_of, compared in passes:
        together: dict[tuple[str, ...], list[int]] = {}
        for index, group in enumerate(configurations):
            together.setdefault(key_of(group[0]), []).append(index)
        for indices in (indices for indices in together.values() if len(indices) > 1):
            entries = [{key: value for key, value in flat[index].items() if compared(key)} for index in indices]
            for index, telling in zip(indices, telling_keys(entries), strict=True):
                keys[index] += [key for key in telling if key not in keys[index]]
    return [[(key.rsplit(".", 1)[-1], shown_value(flat[index].get(key))) for key in sorted(keys[index])]
            for index in range(len(configurations))]


def _settings_order(settings: list[tuple[str, str]]) -> tuple[tuple[Any, ...], ...]:
    """Sorts settings by name, then numerically where a value is a number (0.003 before 0.01)."""
    order = []
    for name, value in settings:
        try:
            order.append((name, 0, float(value), ""))
        except ValueError:
            order.append((name, 1, 0.0, value))
    return tuple(order)


def _babi_row_key(run: RunRecord) -> tuple[str, ...]:
    """What a row of the bAbI list shows of a configuration: task, model, data, profile and budget."""
    return *_babi_family(run), _budget(run)


def _babi_family(run: RunRecord) -> tuple[str, ...]:
    """The configurations a bAbI row is told apart from: the same task, model, data and profile, any budget."""
    return str(cfg_get(run.config, "task.babi_id")), _babi_model(run), _babi_data(run), str(run.profile)


def _babi_named(key: str) -> bool:
    """The settings a bAbI row names where they depart from its family's: the model's and the optimiser's, except
    the memory operations, which the model column shows (the budget column shows ``train.*``'s time and
    patience; the data column ``task.*``)."""
    return key.startswith(("model.", "optim.")) and key != "model.operations"


def babi_section(runs: list[RunRecord], papers: list[PaperSpec]) -> list[str]:
    rows = []
    single = [group for group in groups(runs, "babi") if not _all_tasks(group)]

    def place(row: tuple[list[RunRecord], list[tuple[str, str]]]) -> tuple[Any, ...]:
        # rows told apart by their settings follow the plain ones of their task, in the order of those settings
        (run, *_), apart = row
        return (run.model, int(cfg_get(run.config, "task.babi_id") or 0), _babi_data(run), bool(apart),
                _settings_order(apart), natural_key(run.run_id))

    labelled = sorted(zip(single, told_apart(single, _babi_row_key, _babi_family, _babi_named), strict=True), key=place)
    order = [group for group, _ in labelled]
    diverged = diverged_runs(runs, "babi")
    for group, apart in labelled:
        run = group[0]
        error, (seeds, ids) = mean_sd(metric_values(group, "test/error"), 100, 2), _seeds_and_ids(group, diverged)
        settings = ", ".join(f"{name} {value}" for name, value in apart)
        model = f"{_babi_model(run)} ({settings})" if settings else _babi_model(run)
        rows.append([str(cfg_get(run.config, "task.babi_id")), model, _babi_data(run), str(run.profile),
                     _budget(run), seeds, error, published(papers, group, "test/error"),
                     mean_of(group, "steps"), _throughput(group), minutes(group), ids])
    header = ["bAbI task", "model", "data", "profile", "budget", "seeds", "test error %", "paper (Table 2)", "steps",
              "train examples/s", "wall time", "runs"]
    joint = [group for group in groups(runs, "babi") if _all_tasks(group)]
    plain = [group for group, apart in labelled if not apart]
    return ["### bAbI (Schlag & Schmidhuber 2018, Table 2)", "", *table2_summary_lines(plain, table3_line(papers)),
            *_table(header, rows), *fidelity_lines(order), *ablation_lines(plain, papers, diverged),
            *all_tasks_lines(joint, papers)]


SUMMARY_MAX_TIME_S = 1200  # the Table 2 summary counts runs allowed at most 20 minutes each


def _budget_size(run: RunRecord) -> tuple[float, float, float]:
    """How long a run could train, for comparing budgets: its time limit, epochs and early-stopping patience, each
    unbounded (infinite) when unset."""
    limits = (cfg_get(run.config, key) for key in ("train.max_time_s", "train.max_epochs", "train.early_stop_patience"))
    return tuple(float(limit) if isinstance(limit, int | float) else float("inf") for limit in limits)


def table2_summary_lines(plain_groups: list[list[RunRecord]], line: float) -> list[str]:
    """One sentence over the Table 2 list: of the full TPR-RNN's configurations on the official files at the ``cpu``
    profile, each task's at the largest budget it ran with (``_budget_size``; at most ``SUMMARY_MAX_TIME_S`` a run),
    on how many tasks the mean of its seeds' test errors is at or under ``line`` (the paper's 5%), and which tasks are
    above it. ``plain_groups`` are the configurations no other setting tells apart from their family's usual one (a
    changed learning rate, say, is left out). Nothing when there is no such configuration."""
    chosen: dict[int, list[RunRecord]] = {}
    for group in plain_groups:
        run = group[0]
        limit = cfg_get(run.config, "train.max_time_s")
        if (run.model != "tpr_rnn" or _ablated(run) or run.profile != "cpu" or _all_tasks(group)
                or cfg_get(run.config, "task.source") != "files" or not metric_values(group, "test/error")
                or not isinstance(limit, int | float) or limit > SUMMARY_MAX_TIME_S):
            continue
        babi_id = int(cfg_get(run.config, "task.babi_id"))
        if babi_id not in chosen or _budget_size(run) > _budget_size(chosen[babi_id][0]):
            chosen[babi_id] = group
    if not chosen:
        return []
    errors = {babi_id: statistics.fmean(metric_values(group, "test/error")) for babi_id, group in chosen.items()}
    above = [f"task {babi_id} ({100 * errors[babi_id]:.2f}%, {_babi_data(chosen[babi_id][0])})"
             for babi_id in sorted(errors) if above_line(errors[babi_id], line)]
    fewest, most = min(len(group) for group in chosen.values()), max(len(group) for group in chosen.values())
    seeds = f"{fewest} to {most} seeds" if fewest != most else f"{most} seed{'s' * (most > 1)}"
    return [f"The full TPR-RNN on the official files at the `cpu` profile, each task at the largest budget it ran with "
            f"(at most {SUMMARY_MAX_TIME_S / 60:g} minutes a run): test error at or under {100 * line:g}% on "
            f"{len(errors) - len(above)} of the {len(errors)} tasks, by the mean of {seeds} a task; above it: "
            f"{'; '.join(above) if above else 'none'}.", ""]


def _table3(papers: list[PaperSpec]) -> TableSpec | None:
    """Schlag & Schmidhuber 2018, Table 3 (``reports/papers/tpr_rnn.yaml``), when the papers have it."""
    return next((table for paper in papers if paper.name == "tpr_rnn" for table in paper.tables
                 if table.id == "table3"), None)


def table3_failed(papers: list[PaperSpec]) -> dict[tuple[int, tuple[str, ...]], bool]:
    """Table 3: (bAbI task, operations) -> whether that ablation failed the task (test error > 5%). The full
    model (all three) fails none there."""
    table = _table3(papers)
    return {(int(row["babi_id"]), canonical_operations(row["settings"]["model.operations"])):
            row["tpr_rnn"] == ["above"] for row in (table.rows if table else [])}


def table3_line(papers: list[PaperSpec]) -> float:
    """Table 3's line between passing and failing a task, as a fraction (its ``verdict_above`` of 5%)."""
    table = _table3(papers)
    return table.verdict_above / table.scale if table and table.verdict_above is not None else 0.05


def _operations(run: RunRecord) -> tuple[str, ...]:
    """TPR-RNN's memory operations (``model.operations``); all three for runs from before the option."""
    return canonical_operations(cfg_get(run.config, "model.operations") or ALL_OPERATIONS)


def _ablated(run: RunRecord) -> bool:
    """Whether some of TPR-RNN's memory operations are left out (Table 3's ablations)."""
    return set(_operations(run)) != set(ALL_OPERATIONS)


def _babi_model(run: RunRecord) -> str:
    """The model's name, with its memory operations when some are ablated (Table 3)."""
    return f"{run.model} ({' + '.join(_operations(run))})" if _ablated(run) else run.model


def _agreement(verdicts: list[bool]) -> str:
    """``N of the M`` for a list of agree/disagree verdicts."""
    return f"{sum(verdicts)} of the {len(verdicts)}"


def ablation_lines(babi_groups: list[list[RunRecord]], papers: list[PaperSpec],
                   diverged: ByConfig | None = None) -> list[str]:
    """Table 3's ablations (``model.operations``, ``sweeps/babi_tpr_rnn_ablations_cpu.yaml``) beside the full model's
    runs of the same tasks at the same budget on the same data source; nothing when there are none. ``babi_groups``
    are the plain configurations (:func:`told_apart` names no setting of theirs): a full model trained with another
    setting, e.g. ``task.trim_batches=true``, is not the one the ablations took parts away from, and an ablation
    trained with another setting (a learning rate, say) has no full model here to stand beside, so it stays in the
    Table 2 list only."""
    def task_budget_source(group: list[RunRecord]) -> tuple[Any, str, Any]:
        return cfg_get(group[0].config, "task.babi_id"), _budget(group[0]), cfg_get(group[0].config, "task.source")

    ablated = [group for group in babi_groups if _ablated(group[0])]
    settings = {task_budget_source(group) for group in ablated}
    full = [group for group in babi_groups if group[0].model == "tpr_rnn" and group not in ablated
            and task_budget_source(group) in settings]
    failed_in_paper, line, rows = table3_failed(papers), table3_line(papers), []
    table3 = _table3(papers)
    agreed: dict[bool, list[bool]] = {True: [], False: []}
    elsewhere = 0  # rows whose runs differ from Table 3's settings (generated data): shown, not counted
    for group in sorted(ablated + full, key=lambda g: (int(cfg_get(g[0].config, "task.babi_id")), _budget(g[0]),
                                                        -len(_operations(g[0])), _operations(g[0]))):
        run = group[0]
        babi_id, operations = int(cfg_get(run.config, "task.babi_id")), _operations(run)
        failed, errors = failed_in_paper.get((babi_id, operations), False), metric_values(group, "test/error")
        agrees = bool(errors) and above_line(statistics.fmean(errors), line) == failed
        diffs = differences(run, table3.settings) if table3 else []
        if errors and not diffs:
            agreed[_ablated(run)].append(agrees)
        elsewhere += bool(errors and diffs)
        seeds, ids = _seeds_and_ids(group, diverged or {})
        paper = ("> 5 (failed)" if failed else "≤ 5") + (f" at other settings ({'; '.join(diffs)})" if diffs else "")
        rows.append([str(babi_id), " + ".join(operations), _babi_data(run), str(run.profile), _budget(run),
                     seeds, mean_sd(errors, 100, 2), paper,
                     ("yes" if agrees else "no") if errors else "–", minutes(group), ids])
    if not ablated:
        return []
    header = ["bAbI task", "operations", "data", "profile", "budget", "seeds", "test error %", "paper (Table 3)",
              "agrees", "wall time", "runs"]
    return ["", "Ablations of the memory operations (Table 3; `model.operations`): the paper reports which tasks "
            "each variant fails (test error > 5%), not the errors. A row agrees when the mean of its seeds' errors "
            "(of those that completed: a diverged seed ended on a non-finite loss, untested) "
            f"falls on the paper's side of 5%: {_agreement(agreed[True])} rows of ablated variants agree, as do "
            f"{_agreement(agreed[False])} rows of the full model beside them"
            + (f" (of the rows at Table 3's settings; the {elsewhere} rows at other settings, e.g. trained on "
               "generated data, are shown but not counted)" if elsewhere else "")
            + ".", "", *_table(header, rows)]


def all_tasks_lines(joint_groups: list[list[RunRecord]], papers: list[PaperSpec]) -> list[str]:
    """The all-tasks setting (``task.babi_id=all``, ``sweeps/babi_all_tasks_cpu.yaml``): one table per
    configuration, a row per task (its own test file) and the mean, beside the paper's Table 4."""
    lines = []
    for group in joint_groups:
        run = group[0]
        rows = [[str(babi_id), mean_sd(metric_values(group, f"test_qa{babi_id}/error"), 100, 2),
                 published(papers, group, f"test_qa{babi_id}/error")] for babi_id in range(1, 21)]
        rows.append(["mean of the 20", mean_sd(metric_values(group, "test/error"), 100, 2),
                     published(papers, group, "test/error")])
        header = ["bAbI task", f"{run.model} test error % ({len(group)} seed{'s' if len(group) > 1 else ''})",
                  "paper (Table 4: mean of 8 runs)"]
        lines += ["", f"All-tasks setting: one {run.model} trained on the 20 tasks together ({_babi_data(run)}, "
                  f"{run.profile} profile, {mean_of(group, 'steps')} steps, {_throughput(group)} train examples/s, "
                  f"{minutes(group)}; {run_ids(group)}), tested on each task's test file.", "", *_table(header, rows)]
    return lines


FIDELITY_TARGET = 0.9  # accuracy on the official test file of a model trained only on generated data


def fidelity_lines(babi_groups: list[list[RunRecord]]) -> list[str]:
    """Generator fidelity: runs trained on the built-in generator's data and also tested on the official test
    file (``task.test_on=[files]``, ``sweeps/babi_generator_fidelity.yaml``); nothing when there are none. Runs
    with ablated memory operations measure the model, not the data: they stand in the ablation table only."""
    rows = []
    for group in babi_groups:
        run = group[0]
        official = metric_values(group, "test_files/acc")
        if cfg_get(run.config, "task.source") != "generator" or not official or _ablated(run):
            continue
        generated = metric_values(group, "test/acc")
        rows.append([str(cfg_get(run.config, "task.babi_id")), run.model, str(run.profile), _budget(run),
                     str(len(group)), mean_sd(generated, 100, 1), mean_sd(official, 100, 1),
                     "yes" if statistics.fmean(official) >= FIDELITY_TARGET else "no", run_ids(group)])
    if not rows:
        return []
    header = ["bAbI task", "model", "profile", "budget", "seeds", "test acc % (generated)",
              "test acc % (official file)", f">= {FIDELITY_TARGET:.0%}", "runs"]
    return ["", "Generator fidelity: trained only on the built-in generator's data (as many questions as en-10k), "
            "tested on a generated test set and on the official en-10k test file.", "", *_table(header, rows)]


def relations_section(runs: list[RunRecord], papers: list[PaperSpec]) -> list[str]:
    rows = []
    single = [run for run in runs if run.protocol != CURRICULUM]
    for group in sorted(groups(single, "relations_game"), key=_relation_order):
        run = group[0]
        real = sorted({key.split("/")[0] for r in group for key in r.metrics
                       if key.startswith("test_real_") and key.endswith("/acc")})
        cells = []
        for object_set in ("hexominoes", "stripes"):
            metric = f"test_{object_set}/acc"
            ours = mean_sd(metric_values(group, metric))
            cells.append(f"{ours} (paper {published(papers, group, metric, 1.0)})" if ours != "–" else "–")
        rows.append(["+".join(map(str, cfg_get(run.config, "task.tasks") or [])), run.model, str(run.profile),
                     str(len(group)), *cells,
                     ", ".join(f"{name[10:]} {mean_sd(metric_values(group, f'{name}/acc'))}" for name in real) or "–",
                     mean_of(group, "steps"), minutes(group), run_ids(group)])
    header = ["relation", "model", "profile", "seeds", "hexominoes %", "stripes %", "real mini sets %", "batches",
              "wall time", "runs"]
    lines = ["### Relations Game, single task (Shanahan et al. 2020, Table 1)", "", *_table(header, rows), ""]
    curriculum = [run for run in runs if run.protocol == CURRICULUM]
    rows = []
    for group in groups(curriculum, "relations_game"):
        run = group[0]
        stages = []
        for stage in STAGES:
            ours = mean_sd(metric_values(group, f"{stage}/test_stripes/acc"))
            real = metric_values(group, f"{stage}/test_real_col_patterns_stripes/acc")
            stages.append(ours + (f" (real {mean_sd(real)})" if real else ""))
        target = ", ".join(map(str, cfg_get(run.config, "protocol.target") or []))
        pretrain = ", ".join(map(str, cfg_get(run.config, "protocol.pretrain") or []))
        rows.append([run.model, f"{target} / {pretrain}", str(run.profile), str(len(group)), *stages,
                     _fact(papers, group, "stage3_" + run.model), minutes(group), run_ids(group)])
    header = ["model", "target / pre-training", "profile", "seeds", "1: scratch", "2: pre-train",
              "3: frozen CNN + central", "4: frozen CNN", "paper, stage 3", "wall time", "runs"]
    lines += ["Curriculum (Fig. 4): test accuracy (%) on stripes of each stage, generated images (the released "
              "column-pattern stripes set in brackets; stage 2 is tested on `between`).", "",
              *_table(header, rows)]
    return lines


RELATIONS = ("same", "between", "occurs", "xoccurs", "colour_shape")


def _relation_order(group: list[RunRecord]) -> tuple[Any, ...]:
    """Table 1's row order (then other tasks), then the model."""
    tasks = [str(t) for t in cfg_get(group[0].config, "task.tasks") or []]
    first = RELATIONS.index(tasks[0]) if len(tasks) == 1 and tasks[0] in RELATIONS else len(RELATIONS)
    return (first, "+".join(tasks), group[0].model)


def _fact(papers: list[PaperSpec], runs: list[RunRecord], fact_id: str) -> str:
    for paper in papers:
        for fact in paper.facts:
            if fact.id != fact_id:
                continue
            text = fact.published_text or (f"{fact.published:g}" if fact.published is not None else "–")
            diffs = differences(runs[0], fact.settings)
            return text if not diffs else f"{text} at other settings ({'; '.join(diffs)})"
    return "–"


def rl_section(runs: list[RunRecord], papers: list[PaperSpec]) -> list[str]:
    rows = []
    for task in ("boxworld", "bridge_boxworld"):
        for group in groups(runs, task):
            run = group[0]
            env = cfg_get(run.config, "task.env") or {}
            setting = ", ".join(f"{k} {v}" for k, v in env.items() if k in ("n", "solution_length", "num_distractors",
                                                                            "num_rows", "num_cols", "bridge_prob"))
            rows.append([task, run.model, setting, str(cfg_get(run.config, "rl.algorithm")), str(run.profile),
                         str(len(group)), mean_sd(metric_values(group, "eval/win_rate")),
                         published(papers, group, "eval/win_rate", 1.0), mean_of(group, "env_steps"),
                         ", ".join(sorted({str(r.results.get("stop_reason")) for r in group})), minutes(group),
                         run_ids(group)])
    header = ["task", "agent", "board", "algorithm", "profile", "seeds", "eval win rate %", "paper", "env steps",
              "stopped by", "wall time", "runs"]
    return ["### BoxWorld and bridge BoxWorld (Clift et al. 2020, §5)", "", *_table(header, rows)]


MATRIX_SWEEP = "matrix_cpu"  # sweeps/matrix_cpu.yaml: its runs fill the matrix section, not the papers' tables


def in_matrix(run: RunRecord) -> bool:
    return cfg_get(run.config, "tracking.group") == MATRIX_SWEEP


def _setting(run: RunRecord) -> str:
    """What a matrix cell ran on, beyond its task's name."""
    if run.task == "babi":
        return f"task {cfg_get(run.config, 'task.babi_id')}, {cfg_get(run.config, 'task.data_set')} " \
               f"({cfg_get(run.config, 'task.source')})"
    if run.task == "relations_game":
        return "+".join(map(str, cfg_get(run.config, "task.tasks") or []))
    if run.task == "listops":
        return f"{cfg_get(run.config, 'task.min_length')} < length < {cfg_get(run.config, 'task.max_length')}, " \
               f"{cfg_get(run.config, 'task.n_train')} training expressions ({cfg_get(run.config, 'task.source')})"
    if run.task == "pathfinder":
        patch = cfg_get(run.config, "model.patch_size")
        return f"{cfg_get(run.config, 'task.difficulty')}, {cfg_get(run.config, 'task.n_train')} training images " \
               f"({cfg_get(run.config, 'task.source')})" + (f", {patch}x{patch} patches" if patch else "")
    env = cfg_get(run.config, "task.env") or {}
    board = ", ".join(f"{k} {v}" for k, v in env.items() if k in ("n", "solution_length", "num_distractors"))
    if board or not run.is_rl:
        return board or "–"
    lr = cfg_get(run.config, "rl.optim.lr")  # an env without settings of its own (CartPole): the learning rate
    if not isinstance(lr, int | float):
        return "–"
    return f"{cfg_get(run.config, 'rl.optim.name')}, lr {float(lr):.0e}".replace("e-0", "e-")


def setting(run: RunRecord) -> str:
    """What the README's tables call the setting a run ran on, beyond its task's name (``task 1, en-10k (files)``):
    the matrix's and Long Range Arena's column, the world-state tables' for a stream task; "–" where a task has
    none to name."""
    return world_setting(run) if run.task in STREAM_TASKS else _setting(run)


def _held_out(run: RunRecord) -> str:
    """The cell's held-out numbers: test accuracy (on each of ``task.test_sets`` where the task has held-out
    sets, as the Relations Game's object sets), or the RL evaluation's return and win rate; for a run that did
    not complete, its status and reason."""
    if run.status != "completed":
        return f"{run.status}: {run.results.get('error') or 'no reason recorded'}"
    return _held_out_mean([run])


def _held_out_mean(runs: list[RunRecord]) -> str:
    """:func:`_held_out` of completed runs of one configuration: each number's mean ± sd over the runs."""
    first = runs[0]
    held_out = cfg_get(first.config, "task.test_sets")  # the Relations Game's held-out object sets
    if isinstance(held_out, list) and held_out:
        return ", ".join(f"{name} {mean_sd(values)}" for name in held_out
                         if (values := metric_values(runs, f"test_{name}/acc")))
    if first.is_rl:
        shown = [f"return {mean_sd(metric_values(runs, 'eval/episode_return'), 1.0)}"]
        if win_rates := metric_values(runs, "eval/win_rate"):
            shown.append(f"win rate {mean_sd(win_rates)}")
        return ", ".join(shown)
    return mean_sd(metric_values(runs, "test/acc"))


def _held_out_seeds(runs: list[RunRecord]) -> str:
    """A matrix cell's held-out numbers over its seeds: the completed runs' mean ± sd, then each other run's
    status and reason."""
    done = [run for run in runs if run.status == "completed"]
    shown = [_held_out_mean(done)] if done else []
    shown += [f"seed {run.seed}: {_held_out(run)}" if len(runs) > 1 else _held_out(run)
              for run in runs if run.status != "completed"]
    return "; ".join(shown)


def _training_seeds(runs: list[RunRecord]) -> str:
    """How far each seed of a matrix cell trained and what ended it (:func:`_training`)."""
    if len(runs) == 1:
        return _training(runs[0])
    return "; ".join(f"seed {run.seed}: {_training(run)}" for run in runs)


def _training(run: RunRecord) -> str:
    """How far the cell trained and what ended it."""
    if run.is_rl:
        return (f"{mean_of([run], 'env_steps')} env steps ({run.results.get('stop_reason') or '–'}){_peak(run)}"
                f"{_selected(run)}")
    best = run.results.get("best") if isinstance(run.results.get("best"), dict) else {}  # its "epoch" counts from 1
    epochs = run.results.get("epochs", "–")
    limit = cfg_get(run.config, "train.max_epochs")
    ended = _ended_by(run)
    part = last_epoch_part(run)  # the time cap cut the last epoch short: it counts as the part trained
    if capped_in_first_epoch(run):
        steps = run.results["steps"]
        return f"{steps:,} steps, within the first of {limit} epochs ({ended}), tested at its one validation"
    trained = epochs_text(epochs - 1 + part) if part is not None and isinstance(epochs, int) else epochs
    shown = f"{trained} of {limit} epochs" + (f" ({ended})" if ended else "")
    if not isinstance(best.get("epoch"), int):
        return shown
    best_epoch = trained if best["epoch"] == epochs else int(best["epoch"])
    return shown + f", best at epoch {best_epoch}"


def _ended_by(run: RunRecord) -> str | None:
    """What ended a supervised run before its epoch limit (:func:`reports.stops.run_stop`); at the time cap, with
    the training throughput it ran at, since how far a capped run got depends on the machine."""
    stop = run_stop(run)
    if stop is None or stop.kind == "epoch_limit":
        return None
    rate = (run.results.get("throughput") or {}).get("train/examples_per_s")
    return stop.text + (f", {rate:,.0f} examples/s" if stop.kind == "cap" and isinstance(rate, int | float) else "")


def _peak(run: RunRecord, metric: str = "train/episode_return") -> str:
    """An RL run's best training return on the way (its curve's maximum and the env step it was reached at),
    so that a policy that learned and later collapsed is told from one that never learned."""
    curves = run.curves
    if curves is None or metric not in curves.columns or "step" not in curves.columns:
        return ""
    values = curves[["step", metric]].dropna()
    if values.empty:
        return ""
    best = values.loc[values[metric].idxmax()]
    return f"; training return peaked at {best[metric]:.1f} at {int(best['step']):,} env steps"


def _selected(run: RunRecord) -> str:
    """Which policy of an RL run was evaluated: the best of its selection rounds (harness/runners/rl_select.py)."""
    chosen = run.results.get("selection")
    if not isinstance(chosen, dict) or not isinstance(chosen.get("env_steps"), int):
        return ""
    return f"; evaluated: its policy at {chosen['env_steps']:,} env steps"


def matrix_section(runs: list[RunRecord], papers: list[PaperSpec]) -> list[str]:
    chosen = sorted((run for run in runs if in_matrix(run) and run.task not in (*LRA_TASKS, *STREAM_TASKS)),
                    key=lambda run: (run.task, _setting(run), run.model, natural_key(run.run_id)))
    cells: dict[tuple[str, str, str], list[RunRecord]] = {}  # a cell's seeds, in the order of their run ids
    for run in chosen:
        cells.setdefault((run.task, _setting(run), run.model), []).append(run)
    rows = [[task, where, model, str(len(group)), _held_out_seeds(group), _training_seeds(group), minutes(group),
             run_ids(group)] for (task, where, model), group in cells.items()]
    header = ["task", "setting", "model", "seeds", "held-out: test acc % / RL evaluation (mean ± sd over seeds)",
              "training", "wall time (mean)", "runs"]
    return [f"### The matrix at the cpu profile (sweeps/matrix_cpu.yaml: {_seeds_note(cells)}, 10 minutes per cell)",
            "", "Cells of the task x model matrix that the adapters opened, on a 2-core machine. The training column "
            "says what ended each run: its epoch limit, a validation target reached (`train.stop_at`), 10 epochs "
            "without a better validation accuracy (bAbI), a time cap (the cell's 10 minutes, or its profile's own "
            "where shorter), or for RL its env-step budget, win rate or time limit. A capped run's training "
            "throughput stands beside its cap: how far it got depends on the machine's speed, which was not the same "
            "for every seed of a cell; the cap stops training part way through an epoch and validates there, so its "
            "epochs count that last one as the part trained (9.4 of 10), and a best epoch of 9.4 is that "
            "validation; a run the cap stopped within its first epoch, which validated only there, gives the steps "
            "it trained. Its ListOps and Pathfinder cells are in the Long Range Arena table above, its "
            "world-state cells in the world-state tables.", "", *_table(header, rows)]


def _seeds_note(cells: dict[tuple[str, str, str], list[RunRecord]]) -> str:
    """How many seeds the matrix's cells ran: "one seed", or "one seed; two on babi" where a task's differ."""
    counts: dict[str, frozenset[int]] = {}
    for (task, _, _), group in cells.items():
        counts[task] = counts.get(task, frozenset()) | {len(group)}
    if not counts:
        return "no runs"
    usual = statistics.mode(counts.values())
    said = [_number_words(usual) + (" seed" if usual == {1} else " seeds")]
    return "; ".join(said + [f"{_number_words(found)} on {task}" for task, found in counts.items() if found != usual])


def _number_words(numbers: frozenset[int]) -> str:
    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}
    return " or ".join(words.get(n, str(n)) for n in sorted(numbers))


LRA_TASKS = ("listops", "pathfinder")  # Long Range Arena: every run of these tasks goes in the LRA table
LRA_PAPER, LRA_TABLE, BEST_TABLE = "lra", "lra_table1", "best"  # reports/papers/lra.yaml
CHANCE = {"listops": "10", "pathfinder": "50"}


def _published_cell(papers: list[PaperSpec], run: RunRecord, table_id: str, columns: Sequence[str],
                    name_differences: bool = True) -> str:
    """The published numbers of ``columns`` in the row of ``run``'s task of a table of reports/papers/lra.yaml,
    with the settings this run does not share (so a shorter or smaller run is never read as a match)."""
    table = next((t for paper in papers if paper.name == LRA_PAPER for t in paper.tables if t.id == table_id), None)
    row = next((r for r in table.rows if table.task_for(r) == run.task), None) if table else None
    if table is None or row is None:
        return "–"
    values = [f"{name} {float(row[name][0]):.{table.decimals}f}" for name in columns
              if isinstance(row.get(name), list) and row[name][0] is not None]
    diffs = differences(run, table.settings_for(row)) if name_differences else []
    return ", ".join(values) + (f" (at {'; '.join(diffs)})" if diffs and values else "")


def _other_tests(runs: list[RunRecord]) -> str:
    """Accuracy on the runs' extra test sets (``test_<name>/acc``: e.g. ListOps's original split, Pathfinder
    images of the reference generator), each as the mean ± sd over the runs that have it."""
    names = sorted({key[len("test_"):-len("/acc")] for run in runs for key in run.results.get("metrics", {})
                    if key.startswith("test_") and key.endswith("/acc")})
    return ", ".join(f"{name} {mean_sd(metric_values(runs, f'test_{name}/acc'))}" for name in names) or "–"


def lra_section(runs: list[RunRecord], papers: list[PaperSpec]) -> list[str]:
    chosen = sorted((run for run in runs if run.task in LRA_TASKS),
                    key=lambda run: (run.task, _setting(run), run.model, natural_key(run.run_id)))
    configs: dict[tuple[str, str, str, str], list[RunRecord]] = {}  # a configuration's seeds, by run id
    for run in chosen:
        configs.setdefault((run.task, _setting(run), run.model, fingerprint_of(run)), []).append(run)
    rows = [[task, setting, model, str(len(group)), _held_out_seeds(group),
             _other_tests([run for run in group if run.status == "completed"]), CHANCE[task],
             _published_cell(papers, group[0], LRA_TABLE, ["transformer"]),
             _published_cell(papers, group[0], BEST_TABLE, ["mega"], name_differences=False), _training_seeds(group),
             minutes(group), run_ids(group)]
            for (task, setting, model, _), group in configs.items()]
    header = ["task", "setting", "model", "seeds", "test acc % (mean ± sd over seeds)", "other test sets", "chance",
              "LRA Transformer (Table 1)", "best published", "training", "wall time (mean)", "runs"]
    return ["### Long Range Arena: ListOps and Pathfinder-32", "",
            "Every stored run of the two LRA tasks, a row per configuration (its seeds pooled), beside LRA's "
            "Transformer and the best published result "
            "(reports/papers/lra.yaml). The published numbers are for full-length inputs and LRA's budgets (Mega's "
            "too); where a run differs, the LRA column names the settings it does not share, and the numbers are "
            "not a match.", "",
            *_table(header, rows)]


def _papers_only(section: Callable[[list[RunRecord], list[PaperSpec]], list[str]]
                 ) -> Callable[[list[RunRecord], list[PaperSpec]], list[str]]:
    """A paper's section over the runs that are not the matrix sweep's (those have their own table)."""
    return lambda runs, papers: section([run for run in runs if not in_matrix(run)], papers)


BABI_SECTION = _papers_only(babi_section)
SECTIONS: tuple[Callable[[list[RunRecord], list[PaperSpec]], list[str]], ...] = (
    BABI_SECTION, _papers_only(relations_section), _papers_only(rl_section), lra_section,
    world_state_section, matrix_section)


GENERATOR_STATS = Path("generators") / "pathfinder.json"  # under results/: tasks/pathfinder/compare.py --json
STAT_ROWS = ("label", "px=0", "px 1-63", "px 64-127", "px 128-191", "px 192-255", "nonzero", "bright comps",
             "peaks", "blobs")


def pathfinder_generator_section(results_dir: Path) -> list[str]:
    """Our Pathfinder generator's image statistics beside the reference generator's sample, from the stored
    output of ``python -m tasks.pathfinder.compare --json results/generators/pathfinder.json``."""
    path = results_dir / GENERATOR_STATS
    if not path.exists():
        return []
    stored = json.loads(path.read_text())
    levels = stored["levels"]
    columns = [(level, who) for level, entry in levels.items() for who in ("ours", "reference") if who in entry]
    rows = [[key, *(f"{levels[level][who][key]:.3f}" for level, who in columns)] for key in STAT_ROWS]
    header = ["statistic (mean per image)", *(f"{level}, {who}" for level, who in columns)]
    return ["### Pathfinder-32: our generator beside the reference generator", "",
            f"Image statistics of {stored['n']:,} images per level from our generator (v{stored['generator_version']}) "
            "and from the sample the reference generator (drewlinsley/pathfinder) made with LRA's parameters, in "
            f"LRA's layout (`{stored['command']}`; definitions in tasks/pathfinder/compare.py). px: the fraction "
            "of pixels in an intensity bin; peaks: about one per visible paddle; blobs: the two markers, and where "
            "paddles cross.", "", *_table(header, rows)]


def render(results_dir: Path = RESULTS_DIR, papers_dir: Path = PAPERS_DIR) -> str:
    """The Markdown between the markers, from the reference store alone."""
    runs = load_stores([(results_dir, REFERENCE)])
    papers = load_papers(papers_dir)
    if not runs:
        return "_No reference runs in `results/` yet._"
    lines: list[str] = []
    for section in SECTIONS:
        lines += [*(world_state_section(runs, papers, results_dir) if section is world_state_section
                    else section(runs, papers)), ""]
        if section is lra_section and (generator := pathfinder_generator_section(results_dir)):
            lines += [*generator, ""]
        if section is BABI_SECTION and (generator := babi_generator_section(results_dir)):
            lines += [*generator, ""]
    if diverged := diverged_section(runs):
        lines += [*diverged, ""]
    if reproduced := reproduced_section(results_dir):
        lines += [*reproduced, ""]
    if carried := carried_section(results_dir, runs):
        lines += [*carried, ""]
    if speed := speed_section(results_dir):
        lines += [*speed, ""]
    stale = sum(run.is_stale for run in runs)
    carried = sum(bool(run.carried) for run in runs)
    lines.append(f"{len(runs)} reference runs in `results/`" + (f"; {stale} stale (their code changed since)"
                                                                   if stale else "; none stale")
                 + (f"; {carried} carried over edits shown to compute nothing differently" if carried else "") + ".")
    return "\n".join(lines).strip()


def splice(readme: str, section: str) -> str:
    if BEGIN not in readme or END not in readme:
        raise ValueError(f"README.md has no {BEGIN} ... {END} markers")
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{section}\n{END}{tail}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports.readme", description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite README.md's result tables")
    mode.add_argument("--check", action="store_true", help="exit 1 when README.md and results/ disagree")
    parser.add_argument("--readme", type=Path, default=README)
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    current = args.readme.read_text(encoding="utf-8")
    wanted = splice(current, render(args.results_dir))
    if args.write:
        if wanted != current:
            args.readme.write_text(wanted, encoding="utf-8")
        print(f"{args.readme}: result tables {'rewritten' if wanted != current else 'already up to date'}")
        return 0
    if wanted != current:
        changed = sum(1 for line in difflib.ndiff(current.splitlines(), wanted.splitlines()) if line[:1] in "+-")
        print(f"{args.readme}: the result tables differ from results/ ({changed} lines); run `make readme`",
              file=sys.stderr)
        return 1
    print(f"{args.readme}: result tables match results/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
