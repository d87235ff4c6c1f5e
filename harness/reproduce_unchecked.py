"""``harness reproduce --unchecked``: the reference runs that no check has trained again yet and that this machine
can train bit for bit, trained one after another, the cheapest first, within a time budget.

A reference run qualifies when

* ``harness reproduce`` can train it (:func:`harness.reproduce.refusal`) and it trained on a CPU, not a GPU;
* the reference store's ``reproductions.json`` holds no check of it (:mod:`harness.reproductions`);
* its machine record names a CPU of this machine's kind (:func:`harness.reproduce.cpu_relation` is ``same``, or
  ``name`` where the stored record predates the CPU model: such runs have come back bit for bit on the same
  model): on another kind every figure could differ by rounding, which says nothing about the run;
* it is not stale (code it imported has changed since, without a record carrying it over): its figures could
  differ because the code did.

Each run's expected cost is the wall time it took (training and testing; unknown sorts last); the queue runs from
the cheapest and stops before a run that would not fit in what is left of ``--minutes``. Every check is the
ordinary ``harness reproduce RUN`` (its output, its exit code; ``--record`` keeps each in ``reproductions.json``),
and the last line counts the runs that came back bit for bit and names the others, also after Ctrl-C. ``--list``
prints the queue without training (with ``--minutes``, how much of it fits). Exit code 0 when every run trained
came back bit for bit, 1 otherwise, 130 when interrupted.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import UserError
from harness.reproduce import INTERRUPTED, cpu_relation, machine, processor, refusal, reproduce_run


@dataclass(frozen=True)
class Candidate:
    """A reference run the queue would train again: its id, the minutes it took and where it trained."""

    run_id: str
    minutes: float  # as it trained; inf where its record gives no wall time
    trained_on: str


def this_machine() -> dict[str, Any]:
    """This machine's record as a run writes it (with torch imported: its vector kernels and threads)."""
    import torch  # noqa: F401  machine_info names the vector kernels of an imported torch

    from harness.provenance import machine_info

    return machine_info()


def unchecked(results_dir: Path, here: dict[str, Any] | None = None) -> list[Candidate]:
    """The reference runs in ``results_dir`` that qualify (module docstring), the cheapest first."""
    from harness.reproductions import load
    from reports.store import load_store

    checked = {check.get("run_id") for check in load(results_dir)}
    here = this_machine() if here is None else here
    found = []
    for run in load_store(results_dir):
        if run.run_id in checked or run.gpu or run.is_stale or refusal(run) is not None:
            continue
        stored_on = machine(run.results)
        if not stored_on.get("processor") or cpu_relation(stored_on, here) == "other":
            continue
        wall = run.results.get("wall_time_s")
        minutes = float(wall) / 60 if isinstance(wall, int | float) and wall > 0 else math.inf
        found.append(Candidate(run.run_id, minutes, processor(stored_on)))
    return sorted(found, key=lambda candidate: (candidate.minutes, candidate.run_id))


def queue_lines(found: list[Candidate], results_dir: Path, minutes: float | None = None) -> list[str]:
    """The queue as ``--list`` prints it: one line a run, then the total and, with ``minutes``, how many fit."""
    if not found:
        return [f"no run in {results_dir} is left unchecked that this machine can train again bit for bit"]
    lines = [f"{shown_minutes(candidate.minutes):>7} min  {candidate.run_id}  (trained on {candidate.trained_on})"
             for candidate in found]
    total = sum(candidate.minutes for candidate in found)
    lines.append(f"{len(found)} runs, {shown_minutes(total)} minutes as they trained")
    if minutes is not None:
        spent = itertools.accumulate(candidate.minutes for candidate in found)
        fitting = sum(1 for used in spent if used <= minutes)
        lines.append(f"{fitting} of them fit in --minutes {minutes:g} at the pace they trained")
    return lines


def shown_minutes(minutes: float) -> str:
    return f"{minutes:.1f}" if math.isfinite(minutes) else "?"


def reproduce_unchecked(runs_dir: Path, results_dir: Path | None, record: bool, minutes: float | None,
                        listing: bool) -> int:
    """Train the qualifying runs of ``results_dir`` again, the cheapest first, within ``minutes`` (None: all of
    them); with ``listing``, print the queue instead. The exit code (module docstring)."""
    if results_dir is None:
        raise UserError("--unchecked reads the reference store's runs and checks: name one with --results-dir")
    found = unchecked(results_dir)
    if listing or not found:
        print("\n".join(queue_lines(found, results_dir, minutes)))
        return 0
    budget_s = None if minutes is None else 60.0 * minutes
    started, outcomes = time.monotonic(), {}
    for index, candidate in enumerate(found, 1):
        left = None if budget_s is None else budget_s - (time.monotonic() - started)
        if left is not None and 60.0 * candidate.minutes > left:
            print(f"stopping before {candidate.run_id}: it took {shown_minutes(candidate.minutes)} minutes, "
                  f"{max(left, 0.0) / 60:.1f} are left of --minutes {minutes:g}", flush=True)
            break
        print(f"[{index}/{len(found)}] {candidate.run_id} ({shown_minutes(candidate.minutes)} minutes when it "
              "trained)", flush=True)
        try:
            code = reproduce_run(candidate.run_id, runs_dir, results_dir, record)
        except UserError as exc:  # composed again differently since: said, and the queue goes on
            print(f"skipped {candidate.run_id}: {exc}", flush=True)
            code = 2
        if code == INTERRUPTED:
            print(summary(outcomes, len(found)), flush=True)
            return INTERRUPTED
        outcomes[candidate.run_id] = code
    print(summary(outcomes, len(found)))
    return 0 if all(code == 0 for code in outcomes.values()) else 1


def summary(outcomes: dict[str, int], queued: int) -> str:
    """How the runs of the queue came back (exit codes by run id): bit for bit, with a differing figure or not
    completed, or not trained (a :class:`UserError`); and how many of the queue were not reached."""
    equal = [run for run, code in outcomes.items() if code == 0]
    differing = [run for run, code in outcomes.items() if code == 1]
    skipped = [run for run, code in outcomes.items() if code not in (0, 1)]
    trained = len(equal) + len(differing)
    parts = [f"{len(equal)} of {trained} run{'s' * (trained != 1)} trained again came back bit for bit"]
    if differing:
        parts.append(f"differing or not completed: {', '.join(differing)}")
    if skipped:
        parts.append(f"not trained: {', '.join(skipped)}")
    if queued > len(outcomes):
        parts.append(f"{queued - len(outcomes)} of the {queued} in the queue not reached")
    return "; ".join(parts)
