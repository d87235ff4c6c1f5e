"""The command line: ``harness list | bench | validate | sweep | report | runs | publish | retest | predict |
reproduce | carry | data``.

Only the registry (YAML) is imported at start-up; torch, Lightning and wandb are imported when a run
actually starts, so ``harness list`` and every error path answer in well under two seconds.
A user's mistake (:class:`harness.errors.UserError`) prints one line and exits with code 2.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from harness import PROJECT_ROOT
from harness.errors import INTERRUPTED, SweepStopped, UserError, counted, did_you_mean, listed
from harness.fetch_catalogue import CATALOGUE
from harness.registry import REGISTRY

if TYPE_CHECKING:
    from harness.runs import Listing


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows)


def cmd_list(_: argparse.Namespace) -> int:
    from harness.config import check_registry

    check_registry()  # every task, model, pair and profile file composes: a typo in any of them fails here
    tasks, models = REGISTRY.tasks, REGISTRY.models
    print("Tasks")
    print(_table([["  name", "interface", "kind", "paper"]]
                 + [[f"  {t.name}", t.interface, t.kind, t.paper] for t in tasks.values()]))
    print("\nModels")
    print(_table([["  name", "shape", "reads", "paper"]]
                 + [[f"  {m.name}", m.shape, ",".join(sorted(m.interfaces)), m.paper] for m in models.values()]))
    matrix = REGISTRY.matrix()
    runnable = sum(cell.ok for cell in matrix.values())
    print(f"\nTask x model: {runnable} of {len(matrix)} cells run (ok = runs; otherwise why not)")
    rows = [["  task \\ model", *models]]
    reasons: list[str] = []
    for t in tasks:
        cells = []
        for m in models:
            cell = matrix[(t, m)]
            if cell.ok:
                cells.append("ok")
            else:
                reasons.append(cell.reason)
                cells.append(f"-({len(reasons)})")
        rows.append([f"  {t}", *cells])
    print(_table(rows))
    for i, reason in enumerate(reasons, start=1):
        print(f"  ({i}) {reason}")
    print("\nRoutes (how each model reads each task; models/adapters.yaml)")
    print(_table([[f"  {t}", m, matrix[(t, m)].route] for t in tasks for m in models if matrix[(t, m)].ok]))
    return 0


def _compose(args: argparse.Namespace):  # noqa: ANN202 - returns harness.config.Composed
    from harness.config import compose

    overrides = list(args.overrides)
    _check_repeated_overrides(overrides)
    if args.seed is not None:
        _check_seed_overrides(overrides, {args.seed}, f"--seed {args.seed}")
        overrides.append(f"seed={args.seed}")
    return compose(args.task, args.model, args.profile, overrides)


def _check_repeated_overrides(overrides: list[str]) -> None:
    """One key given twice with two values on the command line would keep the last silently: a UserError naming
    both (a sweep file's layers, by contrast, override each other by design: harness/runners/sweep_file.py)."""
    given: dict[str, str] = {}
    for item in overrides:
        key, equals, raw = item.partition("=")
        key = key.strip().lstrip("+")
        if not equals:
            continue  # a malformed override: the config's own check names it
        if key in given and given[key].partition("=")[2].strip() != raw.strip():
            raise UserError(f"'{key}' is given twice ({given[key]} and {item}); give each key once")
        given.setdefault(key, item)


def _check_seed_overrides(overrides: list[str], seeds: set[int], flag: str) -> None:
    """A ``seed=`` override beside ``--seed``/``--seeds`` would be dropped silently (the flag wins): a UserError
    unless it names the flag's one seed."""
    for item in overrides:
        key, _, raw = item.partition("=")
        if key.strip().lstrip("+") != "seed":
            continue
        try:
            agrees = {int(raw.strip())} == seeds
        except ValueError:
            agrees = False
        if not agrees:
            raise UserError(f"the override '{item}' disagrees with {flag}; give the seed once, with "
                            f"{flag.split()[0]}")


def _seed_list(text: str) -> list[int]:
    from harness.config import max_seed

    if not text.strip():
        raise UserError("--seeds is empty; give e.g. 0,1,2")
    parts = [part.strip() for part in text.split(",")]
    if not all(parts):
        raise UserError(f"--seeds {text!r} has an empty item; give comma-separated integers, e.g. 0,1,2")
    try:
        seeds = [int(part) for part in parts]
    except ValueError:
        raise UserError(f"--seeds takes comma-separated integers, e.g. 0,1,2; got {text!r}") from None
    negative = [seed for seed in seeds if seed < 0]
    if negative:  # as the config's seed range (harness/schema.yaml) says, before any config is composed
        raise UserError(f"--seeds {text}: a seed is an integer >= 0, got {', '.join(map(str, negative))}")
    too_large = [seed for seed in seeds if seed > max_seed()]
    if too_large:
        raise UserError(f"--seeds {text}: a seed is at most {max_seed()}, got {', '.join(map(str, too_large))}")
    repeated = sorted({seed for seed in seeds if seeds.count(seed) > 1})
    if repeated:  # said before any config is composed
        raise UserError(f"--seeds {text} repeats {', '.join(map(str, repeated))}: give each seed once")
    return seeds


def cmd_bench(args: argparse.Namespace) -> int:
    if args.seeds is not None:  # one stacked computation, one run per seed
        if args.seed is not None:
            raise UserError("give --seed (one run) or --seeds (a stack of runs), not both")
        from harness.config import compose
        from harness.runners.stacked_launch import launch_stack

        seeds = _seed_list(args.seeds)
        _check_repeated_overrides(list(args.overrides))
        _check_seed_overrides(list(args.overrides), set(), f"--seeds {args.seeds}")
        stack = [compose(args.task, args.model, args.profile, [*args.overrides, f"seed={seed}"]) for seed in seeds]
        return launch_stack(stack, force=args.force, runs_dir=Path(args.runs_dir) if args.runs_dir else None)
    composed = _compose(args)
    from harness.runners.launch import launch

    return launch(composed, force=args.force, runs_dir=Path(args.runs_dir) if args.runs_dir else None)


def cmd_validate(args: argparse.Namespace) -> int:
    from omegaconf import OmegaConf

    from harness.runners.build_checks import build_and_check, prepare_checked

    composed = _compose(args)
    prepared = prepare_checked(composed)  # what `bench` refuses before it writes anything, refused here too
    build_and_check(composed, prepared)
    print(f"# run_id: {composed.run_id}")
    if prepared.data.get("source"):  # which data the run would read (files found, or the generator)
        print(f"# data: {' '.join(str(prepared.data['source']).split())}")
    print(OmegaConf.to_yaml(composed.cfg), end="")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from harness.runners.sweep_file import check_sweep, load_sweep, narrow_grid, sweep_cells, trial_cells
    from harness.runners.tune import SweepInterrupted, run_sweep, sweep_table
    from harness.runs import default_runs_dir

    sweep = load_sweep(Path(args.file))
    if args.profile is not None:  # '' too: an empty --profile is a mistake, not the file's profile
        sweep.profile = args.profile
    if args.seeds is not None:  # the trials of the file's seeds keep their run ids: only new seeds train
        sweep.seeds = _seed_list(",".join(args.seeds))  # repeated: every --seeds counts, as --cells and --only do
    if args.cells is not None:  # repeated: every pattern counts, as a repeated --only's values do
        _choose_cells(sweep, ",".join(args.cells))
    for choice in args.only or []:
        narrow_grid(sweep, choice)
    if args.dry_run:
        check_sweep(sweep)
        grid = 1
        for spec in sweep.space.values():
            grid *= len(spec["values"]) if spec["type"] == "grid" else 1
        cells = sweep_cells(sweep)
        entries = len(trial_cells(sweep)) if sweep.tasks else len(cells)
        points = entries * grid * sweep.num_samples
        runs = points * len(sweep.seeds)
        count = counted(runs, "trial")
        if sweep.stack_seeds:
            joined = math.prod(len(sweep.space[key]["values"]) for key in sweep.stack_grid)
            each = counted(len(sweep.seeds), "seed") + (f" x {counted(joined, 'grid value')}"
                                                        if sweep.stack_grid else "")
            count = (f"{counted(points // joined, 'trial')} of {each} each, stacked where the cell can stack, else one "
                     f"after another ({counted(runs, 'run')})")
        what = (f"{sweep.task} x {', '.join(m for _, m in cells)}" if not sweep.tasks else
                f"{counted(len(cells), 'cell')} of {counted(len({t for t, _ in cells}), 'task')} x "
                f"{counted(len({m for _, m in cells}), 'model')}")
        print(f"sweep {sweep.name}: {what}, profile {sweep.profile}, {count}; the config composes for "
              f"every {'cell' if sweep.tasks else 'model'}")
        return 0
    try:
        rows = run_sweep(sweep, Path(args.runs_dir) if args.runs_dir else default_runs_dir())
    except SweepInterrupted as stopped:  # its table, then the command stops as for any Ctrl-C
        print(_table(sweep_table(stopped.rows)), flush=True)
        print(f"interrupted{AFTER_CTRL_C['sweep']}", file=sys.stderr)
        return INTERRUPTED
    print(_table(sweep_table(rows)))
    return 0 if all(row["status"] == "completed" for row in rows) else 1


def _choose_cells(sweep: Any, cells: str) -> None:
    """``--cells``: narrow a sweep to the cells matching the comma-separated ``task/model`` patterns. A matrix sweep
    keeps the patterns (:func:`harness.runners.sweep_file.sweep_cells` applies them); a sweep of one task keeps the
    models whose cell matches (or, for a pattern without a ``/``, whose name does: ``--cells tpr_rnn,memn2n``), so
    one model of a paper's grid can run alone, under the same run ids."""
    import fnmatch

    patterns = [p.strip() for p in cells.split(",") if p.strip()]
    if not patterns:
        raise UserError(f"--cells {cells!r} names no cell; give task/model patterns, e.g. 'babi/*,relations_game/lstm'")
    if sweep.tasks:
        sweep.cells = patterns
        return
    def matches(model: Any, pattern: str) -> bool:
        return fnmatch.fnmatchcase(f"{sweep.task}/{model}", pattern) or (
            "/" not in pattern and fnmatch.fnmatchcase(str(model), pattern))

    known = ", ".join(f"{sweep.task}/{m}" for m in sweep.models)
    models = [m for m in sweep.models if any(matches(m, p) for p in patterns)]
    if not models:
        raise UserError(f"sweep {sweep.name}: none of its cells match {', '.join(patterns)}; its cells: {known}")
    unmatched = [p for p in patterns if not any(matches(m, p) for m in sweep.models)]
    if unmatched:  # a misspelt pattern beside good ones would quietly leave its cell out
        verb = "matches" if len(unmatched) == 1 else "match"
        raise UserError(f"sweep {sweep.name}: --cells {', '.join(unmatched)} {verb} none of its cells; its cells: "
                        f"{known}")
    sweep.models = models


def cmd_report(args: argparse.Namespace) -> int:
    from reports.build import report

    if args.jobs is not None and args.jobs < 1:
        raise UserError(f"report --jobs must be at least 1, got {args.jobs}")
    results = Path(args.results_dir) if args.results_dir is not None else None
    return report(Path(args.runs_dir) if args.runs_dir else None, Path(args.out), results, args.jobs,
                  keep_figures=not args.no_figure_cache)


def cmd_publish(args: argparse.Namespace) -> int:
    from harness.publish import RESULTS_DIR, describe, publish

    results_dir = Path(args.to) if args.to else RESULTS_DIR
    new_store = not results_dir.is_dir()
    published = publish(list(args.runs), Path(args.runs_dir) if args.runs_dir else None, results_dir)
    print(describe(published, results_dir))
    if new_store:  # a misspelt --to would otherwise start a store of its own unnoticed
        print(f"{results_dir} did not exist: it is a new reference store, holding these runs only")
    return 0


def cmd_retest(args: argparse.Namespace) -> int:
    from harness.runners.retest import retest

    _check_repeated_overrides(list(args.overrides))
    added = retest(args.run, list(args.overrides), Path(args.runs_dir) if args.runs_dir else None)
    print("  ".join(f"{k}={v:.4f}" for k, v in sorted(added.items()) if k.endswith("/acc")))
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from harness.publish import RESULTS_DIR
    from harness.reproduce import reproduce_run
    from harness.runs import default_runs_dir

    results = RESULTS_DIR if args.results_dir is None else Path(args.results_dir) if args.results_dir else None
    if results is not None and not results.is_dir():
        raise UserError(f"--results-dir {results}: no such folder")
    runs_dir = Path(args.runs_dir) if args.runs_dir else default_runs_dir()
    if args.run and args.unchecked:
        raise UserError("harness reproduce: name a run, or --unchecked for the reference runs no check has trained "
                        "again yet, not both")
    if not args.run and not args.unchecked:
        raise UserError("harness reproduce: name a run (harness runs --reference), or --unchecked for the reference "
                        "runs no check has trained again yet")
    if not args.unchecked and (args.minutes is not None or args.list or args.jobs != 1):
        raise UserError("--minutes, --list and --jobs go with --unchecked (the queue of runs not checked yet)")
    if args.jobs < 1:
        raise UserError(f"--jobs {args.jobs}: give at least 1")
    if args.minutes is not None and not (math.isfinite(args.minutes) and args.minutes > 0):
        raise UserError(f"--minutes {args.minutes:g}: give a finite number of minutes > 0")
    if args.unchecked:
        from harness.reproduce_unchecked import reproduce_unchecked

        return reproduce_unchecked(runs_dir, results, args.record, args.minutes, args.list, args.jobs)
    return reproduce_run(args.run, runs_dir, results, args.record)


def cmd_carry(args: argparse.Namespace) -> int:
    from harness.code_changes import check_all, load_changes, record_change
    from harness.publish import RESULTS_DIR

    if args.check:
        found = check_all()
        print("\n".join(found) if found else
              f"{len(load_changes(Path(RESULTS_DIR)))} recorded code changes, the evidence of each holds")
        return 1 if found else 0
    missing = [flag for flag, value in (("FILE", args.files), ("--what", args.what),
                                        ("--evidence or --probe", (args.evidence or []) + (args.probe or [])))
               if not value]
    if missing:
        raise UserError(f"harness carry needs {', '.join(missing)} (or --check)")
    path = record_change(args.files, args.what, args.evidence or [], args.base, probes=args.probe)
    print(f"recorded in {path}: the runs that imported {', '.join(args.files)} before it are carried over")
    return 0


def cmd_predict(args: argparse.Namespace) -> int:
    from harness.runners.predictions import disagreeing, predict_run

    summary = predict_run(args.run, Path(args.runs_dir) if args.runs_dir else None)
    return 1 if disagreeing(summary) else 0


def cmd_data(args: argparse.Namespace) -> int:
    if args.task == "fetch":
        from harness.fetch import fetch

        fetch(args.name, dest=args.dest, url=args.url, sha256=args.sha256, force=args.force)
        return 0
    from tasks.babi.generator import write_dataset

    _check_babi_args(args)
    for babi_id in dict.fromkeys(args.ids):  # a task named twice is written once
        try:
            paths = write_dataset(Path(args.out), babi_id, seed=args.seed, n_train=args.n_train, n_test=args.n_test)
        except ValueError as exc:  # an id the generator does not cover, or a bad count
            raise UserError(str(exc)) from None
        print(f"task {babi_id}: {paths['train']}  {paths['test']}")
    return 0


def _check_babi_args(args: argparse.Namespace) -> None:
    """``data babi``'s counts, seed and output folder, checked before anything is written: at least one question per
    split, a seed >= 0 (task.generator_seed's range), an --out that is (or can be made) a folder this process can
    write into, and, unless --force, none of the files it would write already there (an --out naming the official
    en-10k folder would replace its files)."""
    if not args.out.strip():
        raise UserError("data babi --out is empty: name the folder to write into, e.g. "
                        "--out $HARNESS_DATA_DIR/babi/en-10k")
    for flag, count in (("--n-train", args.n_train), ("--n-test", args.n_test)):
        if count < 1:
            raise UserError(f"data babi {flag} must be at least 1, got {count}")
    if args.seed < 0:  # task.generator_seed cannot name it: no run could generate these files again
        raise UserError(f"data babi --seed {args.seed}: a seed is an integer >= 0")
    from tasks.babi.generator import SUPPORTED_TASKS

    unknown = [str(babi_id) for babi_id in dict.fromkeys(args.ids) if babi_id not in SUPPORTED_TASKS]
    if unknown:
        raise UserError(f"data babi --ids {' '.join(unknown)}: bAbI has tasks {min(SUPPORTED_TASKS)}.."
                        f"{max(SUPPORTED_TASKS)}, all of which the generator covers")
    from harness.paths import check_can_create_in
    from tasks.babi.generator import file_name

    out = Path(args.out)
    check_can_create_in(out, f"data babi --out {args.out}")
    held = [name for babi_id in dict.fromkeys(args.ids) for split in ("train", "test")
            if (out / (name := file_name(babi_id, split))).exists()]
    if held and not args.force:
        raise UserError(f"data babi --out {args.out} already holds {listed(held, 2)}; --force replaces "
                        f"{'it' if len(held) == 1 else 'them'} with generated data, or choose another --out")


def _headline(metrics: dict) -> str:
    """A run's held-out numbers for a listing: test accuracies, or an RL run's evaluation."""
    shown = [(k, v) for k, v in sorted(metrics.items()) if k.endswith("/acc") and "test" in k
             and (k.count("/") == 1 or k.endswith("/test/acc"))]  # a curriculum: each stage's test/acc
    shown += [(k, v) for k, v in sorted(metrics.items()) if k in ("eval/win_rate", "eval/episode_return")]
    return "  ".join(f"{k}={v:.4f}" for k, v in shown if isinstance(v, int | float))


def _carried_note(listing: Listing) -> str:
    """How many of the runs considered are carried over recorded edits (harness carry), for the "none is stale"
    line."""
    carried = sum(bool(listing.code[row["path"]].carried) for row in listing.considered
                  if row.get("status") == "completed")
    return (f" ({carried} carried over edits shown to compute nothing differently: `harness runs --format csv`, "
            "column carried_over)") if carried else ""


def cmd_runs(args: argparse.Namespace) -> int:
    from harness.runs import GONE, listed_status, select_runs

    exporting = args.format != "table"
    with contextlib.redirect_stdout(sys.stderr if exporting else sys.stdout):  # stdout: the records only
        watched = _source_files(args.imports) if args.imports else []
    if args.imports and not watched:
        return _export_runs([], args.format, None) if exporting else 0
    listing = select_runs(args.runs_dir, reference=args.reference, task=args.task, model=args.model,
                          stale=args.stale, imports=watched)
    rows, everything = listing.rows, listing.everything
    said = [*(["imported " + ", ".join(watched)] if args.imports else []), *(["is stale"] if args.stale else [])]
    none_listed = (f"none of the {everything} runs {' and '.join(said)}" if said else "no runs found")
    if args.stale and not rows:
        none_listed += _carried_note(listing)
    if exporting:
        from harness.runs import run_records

        return _export_runs(run_records(listing), args.format, none_listed)
    if not rows:
        print(none_listed)
        return 0
    statuses = [listed_status(row) for row in rows]  # each a process check: once per run
    table = [["run_id", "status", "held-out metrics"]]
    for row, status in zip(rows, statuses, strict=True):
        shown = (status + (", stale" if listing.stale(row) else "")
                 + (f", a reproduce check of {row['reproduces']}" if row.get("reproduces") else ""))
        table.append([str(row.get("run_id")), shown, _headline(row.get("metrics") or {})])
    print(_table(table))
    _print_unreadable(rows)
    gone = statuses.count(GONE)
    if gone:
        print(f"{gone} run(s) say running but their process has ended (killed): the command that started each "
              "resumes it from its last checkpoint")
    _print_reproduced(listing.store, rows)
    stale_count = sum(bool(listing.stale(row)) for row in rows)
    if args.imports:
        from harness.rerun import wall_hours

        print(f"{len(rows)} of {everything} runs imported {', '.join(watched)} ({wall_hours(rows):.1f} h of wall time "
              "in all): a change to what it computes makes them stale until they are run again")
    if args.stale:
        # a run of the user's store is there already, completed: its command reruns it with --force (in the store
        # listed); a reference run reruns into the user's store, then `harness publish`
        again = [] if args.reference else ["--force", *(["--runs-dir", args.runs_dir] if args.runs_dir else [])]
        _print_reruns(listing, again)
    elif stale_count:
        print(f"stale: the code that computed {stale_count} run(s) has changed since; `harness runs --stale` "
              "says which files and how to rerun them")
    return 0


def _print_unreadable(rows: list[dict[str, Any]]) -> None:
    """Under ``harness runs``: what is wrong with the runs listed as unreadable (the first one's reason) and what
    mends them, so that the word in the table is not the last one."""
    unreadable = [row for row in rows if row.get("status") == "unreadable"]
    if unreadable:
        first, error = unreadable[0], str(unreadable[0].get("error"))
        why = error if error.startswith("results.json") else f"results.json: {error}"
        print(f"{counted(len(unreadable), 'run')} cannot be read ({first.get('run_id')}: {why}"
              f"{'; `harness runs --format csv`, column error, says why for each' if len(unreadable) > 1 else ''}): "
              "the bench command that trained a run keeps its damaged results.json aside and resumes it")


def _print_reproduced(store: Path, rows: list[dict[str, Any]]) -> None:
    """Under ``harness runs``: how many of the listed runs the store's ``reproductions.json`` (the reference store's)
    says were trained again, and how many of those came back bit for bit at their latest check."""
    from harness.reproductions import exact, latest, load

    checks = latest(load(store))
    checked = [checks[str(row.get("run_id"))] for row in rows if str(row.get("run_id")) in checks]
    if checked:
        print(f"{len(checked)} of these {len(rows)} runs were trained again (harness reproduce --record), "
              f"{sum(map(exact, checked))} bit for bit at their latest check: `harness runs --format csv`, column "
              "reproduced")


def _export_runs(records: list[dict[str, Any]], form: str, none_listed: str | None) -> int:
    """``runs --format json|csv``: the records (harness.runs.run_records) on stdout, and nothing else there; where
    there are none, ``none_listed`` (why) on stderr."""
    from harness.runs import write_records

    if not records and none_listed:
        print(none_listed, file=sys.stderr)
    write_records(records, form, sys.stdout)
    return 0


def _source_files(paths: list[str]) -> list[str]:
    """Project-relative source paths of the files that can make runs stale; a file that does not exist is the
    user's mistake, and one that computes nothing is said to be so (it is left out)."""
    from harness.provenance import NOT_COMPUTING

    files = []
    for given in paths:
        path = Path(given).resolve()
        try:
            rel = path.relative_to(PROJECT_ROOT).as_posix()
        except ValueError:
            raise UserError(f"{given} is not inside the project ({PROJECT_ROOT})") from None
        if not path.is_file():
            raise UserError(f"{given}: no such file")
        if path.suffix != ".py":
            raise UserError(f"{given} is not a Python source file: --imports names the code a change would touch")
        if rel in NOT_COMPUTING:  # a question with an answer, not a mistake
            print(f"{rel} computes nothing a run reports (harness/provenance.py NOT_COMPUTING): changing it makes "
                  "no run stale")
            continue
        files.append(rel)
    return files


def _print_reruns(listing: Listing, options: list[str]) -> None:
    """For each stale run listed: what changed and the command that runs it again (with
    ``options`` added to the bench command's own: ``--force`` for a completed run of the user's store, which plain
    ``bench`` only reports)."""
    from harness.rerun import reproduce, wall_hours, with_options

    rows = listing.rows
    print(f"\nrerun ({wall_hours(rows):.1f} h of wall time in all), then `harness publish <run_id>` for a "
          "reference run:")
    for row in rows:
        command, note = reproduce(Path(row["path"]))
        if command and options:
            command = with_options(command, options)
        minutes = float(row.get("wall_time_s") or 0.0) / 60.0
        print(f"  {row.get('run_id')} ({minutes:.1f} min; changed: {', '.join(listing.stale(row))})")
        print(f"    {command or 'cannot be composed again: ' + note}" + (f"  # {note}" if command and note else ""))


class HarnessParser(argparse.ArgumentParser):
    """argparse with the harness's way of reporting a mistake: one line, exit code 2 (subcommands inherit it;
    the benchmarks' own command lines use it too)."""

    def error(self, message: str) -> NoReturn:
        choice = re.fullmatch(r"argument (.+?): invalid choice: '(.*)' \(choose from (.*)\)", message)
        if choice:  # a misspelt subcommand: with a did-you-mean
            what, given, offered = choice.groups()
            names = re.findall(r"'([^']*)'", offered) or [name.strip() for name in offered.split(",")]
            command = what == "command" or what.startswith("{")  # a subcommand's name
            message = (f"{'' if command else f'argument {what}: '}invalid choice: '{given}'"
                       f"{did_you_mean(given, names)}; {'commands' if command else 'choose from'}: {', '.join(names)}")
        self.exit(2, f"error: {message} (see `{self.prog} --help`)\n")

    def parse_args(self, args: Any = None, namespace: Any = None) -> argparse.Namespace:  # type: ignore[override]
        """As argparse's, but words no parser took are reported by the subcommand that was given them (its
        ``--help`` is the one to read), naming the other subcommand that has such an option, if one does."""
        args = self._glue_dash_values(list(sys.argv[1:] if args is None else args))
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            chosen = self._chosen(parsed)
            message = f"unrecognized arguments: {' '.join(extras)}"
            for word in (w.split("=", 1)[0] for w in extras if w.startswith("--")):
                others = [p.prog.removeprefix(f"{self.prog} ") for p in self._parsers()
                          if p is not chosen and word in p._option_string_actions]
                if others and word not in chosen._option_string_actions:
                    message += (f"; {word} is not an option of {chosen.prog.removeprefix(f'{self.prog} ')} "
                                f"({', '.join(others)} {'has' if len(others) == 1 else 'have'} it)")
                    break
            else:
                message += _override_hint(parsed, extras, args)
            chosen.error(message)
        return parsed

    def _glue_dash_values(self, args: list[str]) -> list[str]:
        """``--seeds -1,2`` as ``--seeds=-1,2``: argparse takes a word that starts with a dash and is not one plain
        number for an option, and would only say that the flag "expected one argument"; glued to a flag that takes
        one value, a word starting with a dash and a digit (no option of ours) reaches the flag's own check, which
        says what is wrong with it. Words after ``--`` are left as they are."""
        takes_value = {option for parser in self._parsers() for action in parser._actions if action.nargs is None
                       for option in action.option_strings if option.startswith("--")}
        glued: list[str] = []
        for i, word in enumerate(args):
            if word == "--":
                return [*glued, *args[i:]]
            if glued and glued[-1] in takes_value and re.match(r"-\d", word):
                glued[-1] = f"{glued[-1]}={word}"
            else:
                glued.append(word)
        return glued

    def _subcommands(self) -> tuple[str, dict[str, argparse.ArgumentParser]]:
        """(the attribute that names the chosen subcommand, the subcommands' parsers by name); ("", {}) for none."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                return action.dest, dict(action.choices)
        return "", {}

    def _chosen(self, parsed: argparse.Namespace) -> argparse.ArgumentParser:
        """The innermost parser that the command line chose (``harness data babi``: that subcommand's)."""
        dest, choices = self._subcommands()
        chosen = choices.get(str(getattr(parsed, dest, ""))) if dest else None
        return chosen._chosen(parsed) if isinstance(chosen, HarnessParser) else self

    def _parsers(self) -> list[argparse.ArgumentParser]:
        """This parser and every subcommand's, depth first."""
        nested = self._subcommands()[1].values()
        return [self, *(q for p in nested for q in (p._parsers() if isinstance(p, HarnessParser) else [p]))]


def _override_hint(parsed: argparse.Namespace, extras: list[str], words: list[str]) -> str:
    """For ``bench --babi_id 2`` and the like: an option no subcommand has, which names a config key of the run
    (``task.babi_id``), is meant as an override: "; config settings are overrides: task.babi_id=2". Only where
    the command composes a config (``--task`` and ``--model`` given) and the name fits one key; else ''.
    ``words``: the whole command line, whose word after the option is its value (argparse took it as an
    override)."""
    option = next((word for word in extras if word.startswith("--") and len(word) > 2), None)
    task, model = getattr(parsed, "task", None), getattr(parsed, "model", None)
    if option is None or not isinstance(task, str) or not isinstance(model, str):
        return ""
    name, given, value = option[2:].partition("=")
    following = words[words.index(option) + 1:] if option in words else []
    if not given and following and not following[0].startswith("-") and "=" not in following[0]:
        value = following[0]
    try:
        from omegaconf import OmegaConf

        from harness.config import compose
        from harness.schema import leaves

        composed = compose(task, model, str(getattr(parsed, "profile", None) or "cpu"))
        keys = [key for key, _ in leaves(OmegaConf.to_container(composed.cfg))]
    except Exception:  # noqa: BLE001  a hint only: a command line that does not compose gets none
        return ""
    fits = [key for key in keys if key.rpartition(".")[2] == name.replace("-", "_")]
    if len(fits) != 1:
        return ""
    return f"; config settings are overrides after the options, KEY=VALUE: {fits[0]}={value or '...'}"


RUNS_DIR_HELP = "the run store (default: $HARNESS_RUNS_DIR or ./runs)"


def _folder(text: str) -> str:
    """A folder option's value: an empty one (``--runs-dir ""``, a shell variable left unset) is a mistake, not the
    default, which leaving the option out gives."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path; leave the option out for the default")
    return text


def _sentence(text: str, more: str = "") -> str:
    """A subcommand's one-line help (``more`` added) as its ``--help`` description: a capitalised sentence."""
    return f"{text[0].upper()}{text[1:]}{more}."


def build_parser() -> argparse.ArgumentParser:
    parser = HarnessParser(prog="harness", description=__doc__.split("\n\n")[0].replace("\n", " ").replace("``", "")
                           + " `harness COMMAND --help` says what each takes.")
    sub = parser.add_subparsers(dest="command", required=True)
    text = "tasks, models and the task x model matrix"
    sub.add_parser("list", help=text, description=_sentence(text)).set_defaults(func=cmd_list)
    for name, func, text in (("bench", cmd_bench, "train and test one (task, model) pair"),
                             ("validate", cmd_validate, "print the resolved config of a run without training it "
                                                        "(its data is loaded and its model built, as bench does)")):
        p = sub.add_parser(name, help=text, description=_sentence(text))
        p.add_argument("--task", required=True, help="the task (`harness list` names them)")
        p.add_argument("--model", required=True, help="the model (`harness list` names them)")
        p.add_argument("--profile", default="cpu", help="the settings' scale: smoke | cpu (default) | paper")
        p.add_argument("--seed", type=int, default=None, help="the run's seed, an integer >= 0 (default: 0)")
        if name == "bench":
            p.add_argument("--seeds", default=None, metavar="0,1,2",
                           help="one run per seed (integers >= 0), trained as one stack (supervised runs)")
            p.add_argument("--force", action="store_true",
                           help="retrain even if the run completed (make bench: FORCE=1)")
        p.add_argument("--runs-dir", type=_folder, default=None, help=RUNS_DIR_HELP if name == "bench" else
                       "taken so that a bench command line validates as it is; validate writes no run")
        p.add_argument("overrides", nargs="*", help="config overrides, e.g. optim.lr=3e-4 task.babi_id=2")
        p.set_defaults(func=func)
    text = "run a sweep file (sweeps/<name>.yaml) on Ray Tune"
    p = sub.add_parser("sweep", help=text, description=_sentence(text))
    p.add_argument("file", help="the sweep file, e.g. sweeps/babi_smoke.yaml")
    p.add_argument("--runs-dir", type=_folder, default=None, help=RUNS_DIR_HELP)
    p.add_argument("--dry-run", action="store_true", help="check the sweep and count its trials; start nothing")
    p.add_argument("--profile", default=None, help="run at this profile (default: the file's)")
    p.add_argument("--seeds", action="append", default=None, metavar="0,1,2",
                   help="run these seeds (integers >= 0) instead of the file's; the trials of a seed the file "
                        "has keep their run ids, so a sweep run before trains only the new seeds; repeated, the "
                        "seeds add up (default: the file's seeds)")
    p.add_argument("--cells", action="append", default=None, metavar="PATTERNS",
                   help="only these cells, as task/model patterns, e.g. 'babi/*,relations_game/lstm' (a sweep of "
                        "one task: its models, e.g. 'relations_game/predinet' or 'predinet,mlp*'); repeated, the "
                        "patterns add up; default: all")
    p.add_argument("--only", action="append", default=None, metavar="KEY=VALUES",
                   help="only these values of one grid key, e.g. task.babi_id=1,8 or "
                        "'model.operations=[write],[write,move]'; repeat it to add values of that key or narrow "
                        "another; the trials keep their run ids (default: the whole grid)")
    p.set_defaults(func=cmd_sweep)
    text = "build the HTML report (reports/out/): your runs beside the reference runs"
    p = sub.add_parser("report", help=text, description=_sentence(text))
    p.add_argument("--runs-dir", type=_folder, default=None, help=RUNS_DIR_HELP)
    p.add_argument("--results-dir", default=None,
                   help="the reference store, an existing folder (default: results/; '' for none)")
    p.add_argument("--out", type=_folder, default="reports/out",
                   help="the site's folder: absent, empty or an earlier build's, which it replaces whole "
                        "(default: reports/out)")
    p.add_argument("--jobs", type=int, default=None,
                   help="processes that draw the run pages (default: the CPUs available)")
    p.add_argument("--no-figure-cache", action="store_true",
                   help="draw every run page's figures again, neither reading nor keeping them in "
                        "$HARNESS_CACHE_DIR/report-figures (default: a run unchanged since the last build is not "
                        "drawn again)")
    p.set_defaults(func=cmd_report)
    p = sub.add_parser("runs", help="the runs in the store, with their status and test accuracies")
    p.add_argument("--task", default=None, help="only this task's runs (default: all)")
    p.add_argument("--model", default=None, help="only this model's runs (default: all)")
    p.add_argument("--runs-dir", type=_folder, default=None, help="default: $HARNESS_RUNS_DIR or ./runs")
    p.add_argument("--reference", action="store_true", help="list the shipped reference runs (results/) instead")
    p.add_argument("--stale", action="store_true",
                   help="only the stale runs, with the files that changed and the command that reruns each")
    p.add_argument("--imports", nargs="+", metavar="FILE", default=None,
                   help="only the runs that imported these source files: the runs a change to them would make stale")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table",
                   help="table (default), or json or csv: one record per run on stdout (setting, status, progress, "
                        "held-out metrics) for pandas, R or a spreadsheet, e.g. harness runs --format csv > runs.csv")
    p.set_defaults(func=cmd_runs)
    text = "copy completed runs into the tracked reference store (results/)"
    p = sub.add_parser("publish", help=text,
                       description=_sentence(text, "; the members of a stack (bench --seeds) go together"))
    p.add_argument("runs", nargs="+", help="run ids (from `harness runs`) or run directories")
    p.add_argument("--runs-dir", type=_folder, default=None, help=RUNS_DIR_HELP)
    p.add_argument("--to", default=None, help="the reference store (default: results/ in the repository)")
    p.set_defaults(func=cmd_publish)
    text = "test a completed supervised run on other data (task.test_* settings) without retraining"
    p = sub.add_parser("retest", help=text,
                       description=_sentence(text, "; a new split is scored as the run's own test pass scored its"
                                                   " splits"))
    p.add_argument("run", help="a run id (from `harness runs`) or a run directory")
    p.add_argument("overrides", nargs="+", help="task settings naming the new test data, e.g. task.test_on=[files]")
    p.add_argument("--runs-dir", type=_folder, default=None, help=RUNS_DIR_HELP)
    p.set_defaults(func=cmd_retest)
    text = "write a completed supervised run's per-example test predictions (from its checkpoint)"
    p = sub.add_parser("predict", help=text, description=_sentence(
        text, " into <run>/predictions/; exit code 1 when the accuracy recomputed from them differs from the one the"
              " run reported"))
    p.add_argument("run", help="a run id (from `harness runs`) or a run directory")
    p.add_argument("--runs-dir", type=_folder, default=None, help=RUNS_DIR_HELP)
    p.set_defaults(func=cmd_predict)
    text = "train a stored supervised or stepwise run again and compare every figure it reported"
    p = sub.add_parser("reproduce", help=text, description=_sentence(
        text, ": a run ended by its own rule by the same config without its cap, one the time cap stopped for the "
              "epochs up to its tested checkpoint, or the steps up to it where it came part way through an epoch (a "
              "stepwise run: the outer cycles it trained) without the cap, a budget independent of the machine's "
              "speed. On the same kind of CPU every figure comes back bit for bit. "
              "Exit code 0 when every figure is equal, 1 when one differs"))
    p.add_argument("run", nargs="?", default=None,
                   help="a run id (from `harness runs --reference` or `harness runs`) or a run directory")
    p.add_argument("--runs-dir", type=_folder, default=None, help=RUNS_DIR_HELP + " (where the run is trained again)")
    p.add_argument("--results-dir", default=None,
                   help="the reference store searched first (default: results/; '' for none)")
    p.add_argument("--record", action="store_true",
                   help="add the check to the reference store's reproductions.json (the README's Reproduced table)")
    p.add_argument("--unchecked", action="store_true",
                   help="instead of one run: every reference run no check has trained again yet that trained on a CPU "
                        "of this machine's kind, the cheapest first (harness/reproduce_unchecked.py)")
    p.add_argument("--minutes", type=float, default=None,
                   help="with --unchecked: minutes of wall time from the start; a run starts only while its time "
                        "as it trained fits in what is left (with --jobs, runs side by side share that time, so "
                        "their times as trained may add up to more)")
    p.add_argument("--list", action="store_true", help="with --unchecked: print the queue, train nothing")
    p.add_argument("--jobs", type=int, default=1,
                   help="with --unchecked: train this many checks at once, each in its own process (default 1)")
    p.set_defaults(func=cmd_reproduce)
    text = "carry the reference runs over an edit shown to compute nothing differently, so they do not read as stale"
    p = sub.add_parser("carry", help=text, description=_sentence(
        text, ": records each FILE's digest in --base and in the working tree in results/code_changes.json, once "
              "every evidence run (a reference run trained before the edit) has a bit-for-bit check under the "
              "edited files in results/reproductions.json (harness reproduce RUN --record)"))
    p.add_argument("files", nargs="*", metavar="FILE", help="the edited source files (project-relative paths)")
    p.add_argument("--what", default=None, help="what the edit does, shown beside every run it carries")
    p.add_argument("--evidence", nargs="+", default=None, metavar="RUN", help="reference runs reproduced bit for bit")
    p.add_argument("--probe", nargs="+", default=None, metavar="MODULE",
                   help="modules whose probe() fingerprints what the edited code computes (e.g. tasks.boxworld.probe, "
                        "for the envs of RL runs, which cannot be reproduced): run on --base's code and on the "
                        "working tree, their outputs must be equal")
    p.add_argument("--base", default="HEAD", help="the git revision before the edit (default: HEAD)")
    p.add_argument("--check", action="store_true", help="check the evidence of every recorded change (exit 1 if any "
                   "fails)")
    p.set_defaults(func=cmd_carry)
    p = sub.add_parser("data", help="write generated bAbI tasks as files, or download a dataset (data fetch NAME)",
                       description="Write generated bAbI tasks as files (data babi), or download a dataset (data "
                                   "fetch NAME: " + ", ".join(CATALOGUE) + "). The other tasks generate their data "
                                   "when a run starts (ListOps and Pathfinder cache it under $HARNESS_CACHE_DIR); "
                                   "LRA's ListOps and Pathfinder files come with `data fetch lra`.")
    data = p.add_subparsers(dest="task", required=True, metavar="{babi,fetch}")
    p = data.add_parser("babi", help="write generated bAbI tasks in the official file format",
                        description="Write the built-in generator's bAbI tasks into one folder with the official "
                                    "file names (the en-10k layout: qa{N}_<name>_{train,test}.txt).")
    p.add_argument("--generate", action="store_true",
                   help="generate the data (what this command does; spelled out for scripts)")
    p.add_argument("--out", required=True, help="the folder to write into, e.g. $HARNESS_DATA_DIR/babi/en-10k")
    p.add_argument("--ids", type=int, nargs="+", default=list(range(1, 21)), help="tasks (default: all 20)")
    p.add_argument("--seed", type=int, default=0, help="the generator's seed, an integer >= 0 (default: 0)")
    p.add_argument("--n-train", "--n", type=int, default=10000, help="training questions per task (default: 10000)")
    p.add_argument("--n-test", type=int, default=1000, help="test questions per task (default: 1000)")
    p.add_argument("--force", action="store_true",
                   help="replace same-named files already in --out (default: refused)")
    p.set_defaults(func=cmd_data)
    p = data.add_parser("fetch", help="download, check and unpack a dataset into the data folder",
                        description="Download, check and unpack a dataset: "
                                    + "; ".join(f"{d.name} -> {d.folder}/" for d in CATALOGUE.values())
                                    + ". An interrupted download resumes; a second fetch does nothing.")
    p.add_argument("name", help=", ".join(CATALOGUE))
    p.add_argument("--dest", default=None, type=_folder, help="the data folder (default: $HARNESS_DATA_DIR)")
    p.add_argument("--url", default=None, help="download from this address instead (a mirror); for a dataset of "
                                               "several files, the folder address")
    p.add_argument("--sha256", default=None, metavar="HEX", help="the SHA-256 the download must have")
    p.add_argument("--force", action="store_true", help="download and unpack again even if present")
    p.set_defaults(func=cmd_data)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The command line; ``argv`` None: this process's own (``harness ...``, ``python -m harness.cli ...``)."""
    code = _main(argv)
    if argv is None:
        _end_quietly_on_ctrl_c(code)
    return code


def _end_quietly_on_ctrl_c(code: int) -> None:
    """The command has returned and stored what it did; a Ctrl-C while the interpreter cleans up (torch's and W&B's
    exit handlers) ends the process at once, exit code 130 as any Ctrl-C, with a line saying so, rather than a
    traceback from an exit handler or, later, a silent death. A Ctrl-C the shell told this process to ignore (a
    background job) stays ignored."""
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return

    def handler(signum: int, frame: Any) -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, RuntimeError, ValueError):  # closed, or interrupted in the middle of a write
                pass
        os.write(2, f"interrupted while exiting: the command had finished (exit code {code}); what it stored "
                    "stands\n".encode())
        os._exit(INTERRUPTED)

    signal.signal(signal.SIGINT, handler)


AFTER_CTRL_C = {
    "bench": "; the same command resumes the run",
    "sweep": "; the same command resumes the sweep (completed trials are not trained again)",
    "reproduce": "; the same command resumes the run",
    "retest": "; the run is as it was (a retest writes it once, at the end); the same command starts again",
    "predict": "; each prediction file is whole (written at once); the same command starts again",
    "report": "; the report already at --out is as it was; the same command builds it again",
    "data babi": "; the files written so far are whole; the same command with --force writes them all again",
    "data fetch": "; the same command resumes the download",
}
"""What a Ctrl-C leaves, by command, after ``interrupted`` (a command not named: nothing to add)."""


def _command(args: argparse.Namespace) -> str:
    return f"data {args.task}" if args.command == "data" else str(args.command)


def _main(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except SweepStopped as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"interrupted{AFTER_CTRL_C.get(_command(args), '')}", file=sys.stderr)
        return INTERRUPTED
    except BrokenPipeError:  # the reader went away (`harness validate ... | head -1`): stop quietly, as `head` asks
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so that the exit's flush cannot fail again
        return 1


if __name__ == "__main__":
    sys.exit(main())
