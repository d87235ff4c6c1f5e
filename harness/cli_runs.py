"""``harness runs``: the runs of a store (or the reference store) listed with their status and held-out metrics,
or exported as JSON or CSV records; the stale ones with what changed and the command that reruns each.

The command's parser is :func:`harness.cli_parser.build_parser`'s; :func:`harness.cli.main` runs it.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness import PROJECT_ROOT
from harness.cli import _table
from harness.errors import UserError, counted

if TYPE_CHECKING:
    from harness.runs import Listing


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
