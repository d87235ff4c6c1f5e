"""``harness reproduce --unchecked``: the reference runs that no check has trained again yet and that this machine
can train bit for bit, trained one after another, the cheapest first, within a time budget.

A reference run qualifies when

* ``harness reproduce`` can train it (:func:`harness.reproduce.refusal`) and it trained on a CPU, not a GPU;
* the reference store's ``reproductions.json`` holds no check of it (:mod:`harness.reproductions`);
* its machine record names a CPU of this machine's kind (:func:`harness.reproduce.cpu_relation` is ``same``, or
  ``name`` where the stored record predates the CPU model: such runs have come back bit for bit on the same
  model): on another kind every figure could differ by rounding, which says nothing about the run;
* where its record names no model, the checks of its image's runs do not show that they trained on another kind
  than this machine's (:mod:`harness.reproduce_kinds`; ``--list`` and the start say how many were left out so);
* it is not stale (code it imported has changed since, without a record carrying it over): its figures could
  differ because the code did.

Each run's expected cost is the wall time it took (training and testing; unknown sorts last); the queue runs from
the cheapest and stops before a run that would not fit in what is left of ``--minutes``. Every check is the
ordinary ``harness reproduce RUN`` (its output, its exit code; ``--record`` keeps each in ``reproductions.json``),
and the last line counts the runs that came back bit for bit and names the others, also after Ctrl-C. ``--list``
prints the queue without training (with ``--minutes``, how much of it fits). Exit code 0 when every run trained
came back bit for bit, 1 otherwise, 130 when interrupted.

``--jobs N`` trains up to N checks at once, each ``harness reproduce RUN`` in a process of its own whose output
goes to ``<runs dir>/.reproduce/<run_id>.log``; its verdict is printed as it ends. Most reference runs trained on
one thread, and a run computes the same figures however busy the machine is, so on two cores two checks at once
take about half the time. ``--minutes`` is wall time from the start: a run starts only when it fits in what is
left of it at the pace it trained, so with ``--jobs 2`` the runs trained side by side may add up to nearly twice
``--minutes`` as they trained (and each may take longer than it did alone, on a machine busy with the other).
"""

from __future__ import annotations

import itertools
import math
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import UserError
from harness.reproduce import INTERRUPTED, cpu_relation, machine, processor, refusal, reproduce_run
from harness.runners.signals import terminate_as_interrupt


@dataclass(frozen=True)
class Candidate:
    """A reference run the queue would train again: its id, the minutes it took and where it trained."""

    run_id: str
    minutes: float  # as it trained; inf where its record gives no wall time
    trained_on: str


@dataclass(frozen=True)
class Queue:
    """The qualifying runs, the cheapest first, and a line for each image whose runs were left out because checks
    show they trained on another kind of CPU (:mod:`harness.reproduce_kinds`)."""

    runs: list[Candidate]
    left_out: list[str]


def unchecked(results_dir: Path, here: dict[str, Any] | None = None) -> Queue:
    """The reference runs in ``results_dir`` that qualify (module docstring), the cheapest first."""
    from harness.reproduce_kinds import (
        Elsewhere,
        Image,
        image,
        left_out_line,
        tallies_by_image,
        this_machine,
        trained_elsewhere,
    )
    from harness.reproductions import load
    from reports.store import load_store

    checks = load(results_dir)
    checked = {check.get("run_id") for check in checks}
    tallies = tallies_by_image(checks)
    here = this_machine() if here is None else here
    found: list[Candidate] = []
    left_out: dict[Image, tuple[int, Elsewhere]] = {}  # the runs of each image left out, and why
    for run in load_store(results_dir):
        if run.run_id in checked or run.gpu or run.is_stale or refusal(run) is not None:
            continue
        stored_on = machine(run.results)
        if not stored_on.get("processor") or cpu_relation(stored_on, here) == "other":
            continue
        why = trained_elsewhere(stored_on, here, tallies)
        if why is not None:
            count, _ = left_out.get(image(stored_on), (0, why))
            left_out[image(stored_on)] = (count + 1, why)
            continue
        wall = run.results.get("wall_time_s")
        minutes = float(wall) / 60 if isinstance(wall, int | float) and wall > 0 else math.inf
        found.append(Candidate(run.run_id, minutes, processor(stored_on)))
    return Queue(sorted(found, key=lambda candidate: (candidate.minutes, candidate.run_id)),
                 [left_out_line(count, key, why) for key, (count, why) in sorted(left_out.items())])


def queue_lines(queue: Queue, results_dir: Path, minutes: float | None = None) -> list[str]:
    """The queue as ``--list`` prints it: one line a run, then the total and, with ``minutes``, how many fit; last,
    the runs left out as trained on another kind of CPU."""
    found = queue.runs
    if not found:
        return [f"no run in {results_dir} is left unchecked that this machine can train again bit for bit",
                *queue.left_out]
    lines = [f"{shown_minutes(candidate.minutes):>7} min  {candidate.run_id}  (trained on {candidate.trained_on})"
             for candidate in found]
    total = sum(candidate.minutes for candidate in found)
    lines.append(f"{len(found)} runs, {shown_minutes(total)} minutes as they trained")
    if minutes is not None:
        spent = itertools.accumulate(candidate.minutes for candidate in found)
        fitting = sum(1 for used in spent if used <= minutes)
        lines.append(f"{fitting} of them fit in --minutes {minutes:g} at the pace they trained")
    return [*lines, *queue.left_out]


def shown_minutes(minutes: float) -> str:
    return f"{minutes:.1f}" if math.isfinite(minutes) else "?"


class Budget:
    """What is left of ``--minutes`` (None: no limit) since the queue started."""

    def __init__(self, minutes: float | None) -> None:
        self.minutes, self.started = minutes, time.monotonic()

    def fits(self, candidate: Candidate) -> bool:
        """Whether ``candidate`` fits in what is left at the pace it trained; if not, a line saying so."""
        if self.minutes is None:
            return True
        left = 60.0 * self.minutes - (time.monotonic() - self.started)
        if 60.0 * candidate.minutes <= left:
            return True
        print(f"stopping before {candidate.run_id}: it took {shown_minutes(candidate.minutes)} minutes, "
              f"{max(left, 0.0) / 60:.1f} are left of --minutes {self.minutes:g}", flush=True)
        return False


def announce(index: int, queued: int, candidate: Candidate) -> None:
    print(f"[{index}/{queued}] {candidate.run_id} ({shown_minutes(candidate.minutes)} minutes when it trained)",
          flush=True)


def reproduce_unchecked(runs_dir: Path, results_dir: Path | None, record: bool, minutes: float | None,
                        listing: bool, jobs: int = 1) -> int:
    """Train the qualifying runs of ``results_dir`` again, the cheapest first, within ``minutes`` (None: all of
    them), ``jobs`` at a time; with ``listing``, print the queue instead. The exit code (module docstring)."""
    if results_dir is None:
        raise UserError("--unchecked reads the reference store's runs and checks: name one with --results-dir")
    queue = unchecked(results_dir)
    if listing or not queue.runs:
        print("\n".join(queue_lines(queue, results_dir, minutes)))
        return 0
    found = queue.runs
    for line in queue.left_out:
        print(line, flush=True)
    if jobs > 1:
        with terminate_as_interrupt():  # a SIGTERM to this process alone stops every check, as Ctrl-C does
            return side_by_side(found, runs_dir, results_dir, record, Budget(minutes), jobs)
    budget, outcomes = Budget(minutes), {}
    for index, candidate in enumerate(found, 1):
        if not budget.fits(candidate):
            break
        announce(index, len(found), candidate)
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


def side_by_side(found: list[Candidate], runs_dir: Path, results_dir: Path, record: bool, budget: Budget,
                 jobs: int) -> int:
    """``--jobs``: up to ``jobs`` checks at once, each ``harness reproduce RUN`` in a process of its own (module
    docstring); Ctrl-C stops every check (each leaves its run resumable) and prints the summary."""
    logs = runs_dir / ".reproduce"
    logs.mkdir(parents=True, exist_ok=True)
    waiting = list(enumerate(found, 1))
    running: dict[str, tuple[subprocess.Popen[bytes], Any, Path]] = {}
    outcomes: dict[str, int] = {}
    closed = False  # a run did not fit: none after it starts (the queue is cheapest first; time only passes)
    try:
        while waiting or running:
            while waiting and not closed and len(running) < jobs:
                if not budget.fits(waiting[0][1]):
                    closed = True
                    break
                index, candidate = waiting.pop(0)
                announce(index, len(found), candidate)
                log = logs / f"{candidate.run_id}.log"
                out = log.open("wb")
                command = [sys.executable, "-m", "harness.cli", "reproduce", candidate.run_id, "--runs-dir",
                           str(runs_dir), "--results-dir", str(results_dir), *(["--record"] if record else [])]
                running[candidate.run_id] = (subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT), out, log)
            if not running:
                break  # the next run does not fit (said), or none is left
            time.sleep(0.2)
            for run_id, (process, out, log) in list(running.items()):
                if process.poll() is None:
                    continue
                out.close()
                del running[run_id]
                if process.returncode == INTERRUPTED:  # Ctrl-C reached it first: not an outcome (as one at a time)
                    raise KeyboardInterrupt
                outcomes[run_id] = ended(run_id, process.returncode, log)
    except KeyboardInterrupt:
        for process, _, _ in running.values():
            process.send_signal(signal.SIGINT)
        for run_id, (process, out, log) in running.items():
            if process.wait() != INTERRUPTED:  # it ended before the Ctrl-C reached it
                outcomes[run_id] = ended(run_id, process.returncode, log)
            out.close()
        print(summary(outcomes, len(found)), flush=True)
        return INTERRUPTED
    print(summary(outcomes, len(found)))
    return 0 if all(code == 0 for code in outcomes.values()) else 1


def ended(run_id: str, code: int, log: Path) -> int:
    """Print how a check run by :func:`side_by_side` came out; its exit code."""
    print(f"  {run_id}: {outcome_line(log)} (its output: {log})", flush=True)
    return code


def outcome_line(log: Path) -> str:
    """A check's verdict from its output: the line comparing the figures, or else its last line."""
    lines = [line.strip() for line in log.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    said = [line for line in lines if line.startswith(("every one of the", "error:", "no completed run"))
            or " figures differ, by up to " in line]
    return (said or lines or ["no output"])[-1]


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
