"""The command line: ``harness list | bench | validate | sweep | report | runs | publish | retest | predict |
reproduce | carry | data``.

Only the registry (YAML) is imported at start-up; torch, Lightning and wandb are imported when a run
actually starts, so ``harness list`` and every error path answer in well under two seconds.
A user's mistake (:class:`harness.errors.UserError`) prints one line and exits with code 2.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
from pathlib import Path
from typing import Any

from harness.cli_parser import build_parser
from harness.errors import INTERRUPTED, SweepStopped, UserError, counted, listed
from harness.registry import REGISTRY


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
    from tasks.babi.setting_checks import MAX_GENERATED_QUESTIONS

    for flag, count in (("--n-train", args.n_train), ("--n-test", args.n_test)):
        if not 1 <= count <= MAX_GENERATED_QUESTIONS:
            raise UserError(f"data babi {flag} must be between 1 and {MAX_GENERATED_QUESTIONS:,} (100 times the "
                            f"en-10k release's 10,000 a task), got {count:,}")
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


def main(argv: list[str] | None = None) -> int:
    """The command line; ``argv`` None: this process's own (``harness ...``, ``python -m harness.cli ...``)."""
    code = _main(argv)
    if argv is None:
        _end_quietly_on_signal(code)
    return code


def _end_quietly_on_signal(code: int) -> None:
    """The command has returned and stored what it did; a Ctrl-C, SIGTERM or SIGHUP while the interpreter cleans up
    (torch's and W&B's exit handlers) ends the process at once, exit code 130 as any Ctrl-C, with a line saying so
    (where the terminal is still there), rather than a traceback from an exit handler or, later, a silent death (or,
    for SIGTERM, a bare exit code -15). A signal the shell told this process to ignore (a background job's Ctrl-C,
    ``nohup``'s SIGHUP) stays ignored."""
    def handler(signum: int, frame: Any) -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, RuntimeError, ValueError):  # closed, or interrupted in the middle of a write
                pass
        try:
            os.write(2, f"interrupted while exiting: the command had finished (exit code {code}); what it stored "
                        "stands\n".encode())
        except OSError:  # a terminal that hung up (SIGHUP)
            pass
        os._exit(INTERRUPTED)

    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, handler)
    for number in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(number) is signal.SIG_DFL:
            signal.signal(number, handler)


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
    # `python -m harness.cli` runs this file as __main__, while the parser takes the commands from the module
    # harness.cli (harness/cli_parser.py): run that module's main, so that one copy of this file holds every state.
    from harness.cli import main as cli_main

    sys.exit(cli_main())
