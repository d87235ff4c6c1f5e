"""``harness reproduce RUN``: train a stored supervised or stepwise run again and compare every figure it reported.

A run that ended by its own rule (a validation target, its patience, its epoch or iteration limit) is trained by the
same config without its time cap (which a slower machine could reach first; without a cap, the same run id). A
supervised run that the time cap stopped is trained for the epochs up to
its tested (best) checkpoint, without the cap (:func:`reports.budgets.checkpoint_budget`), or, where that checkpoint is
the validation the cap made part way through an epoch, for the optimiser steps it trained (``train.max_steps``,
:func:`reports.budgets.step_budget`); a stepwise one for the outer cycles it trained
(:func:`reports.budgets.cycle_budget`): budgets that no longer depend on the machine's speed.
Each epoch's order, and each cycle's worlds, are drawn from the seed and CPU training is deterministic
(harness/runners/supervised.py, harness/runners/stepwise.py), so on the same kind of CPU every figure comes back bit
for bit; on another kind the arithmetic rounds differently, and the difference grows with training. The comparison
says which it was. The run trained again records the run it checks (``reproduces`` in its results.json): the
report lists it but leaves it out of its comparisons, which count the checked run already.

Exit code 0 when every figure is equal, 1 when one differs (or the training failed), 2 for a run that cannot be
reproduced so (with the reason), 130 when interrupted.
"""

from __future__ import annotations

import glob
import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import UserError
from harness.rerun import Rebuilt, rebuild, with_options
from harness.runners.signals import wait_passing_on_signals

INTERRUPTED = 130


@dataclass(frozen=True)
class Plan:
    """How a stored run is trained again: the command (:class:`harness.rerun.Rebuilt`), what it trains, and a
    caveat where the figures cannot be expected to agree bit for bit."""

    rebuilt: Rebuilt
    what: str
    budget: str  # what it trains, in a few words ("its own config", "8 epochs without the cap")
    caveat: str = ""


def find_stored(name: str, runs_dir: Path, results_dir: Path | None) -> Path:
    """A stored run's folder, named by its path or by its run id: in the reference store first, then the store it
    is trained again into (``--runs-dir``), then the user's own ($HARNESS_RUNS_DIR or ./runs), where ``harness
    runs`` lists it."""
    from harness.runs import default_runs_dir

    if (Path(name) / "results.json").is_file():
        return Path(name)
    stores = list(dict.fromkeys(store for store in (results_dir, runs_dir, default_runs_dir()) if store is not None))
    for store in stores:
        found = sorted(store.glob(f"*/*/{glob.escape(name)}/results.json"))  # a name, never a pattern
        if found:
            return found[0].parent
    raise UserError(f"no run '{name}' in {' or '.join(map(str, stores))} (give a run id from `harness runs "
                    "--reference` or `harness runs`, or a run directory)")


def machine(results: dict[str, Any]) -> dict[str, Any]:
    """The machine a run trained on, as its results.json records it (its last attempt's), or {}."""
    found = results.get("machine")
    attempts = results.get("attempts")
    if not isinstance(found, dict) and isinstance(attempts, list) and attempts and isinstance(attempts[-1], dict):
        found = attempts[-1].get("machine")
    return found if isinstance(found, dict) else {}


def processor(host: dict[str, Any]) -> str:
    """A machine's processor as it names itself, with its family, model and vector kernels where recorded."""
    name = str(host.get("processor") or "an unrecorded processor")
    detail = ", ".join(str(host[key]) for key in ("cpu_id", "cpu_capability") if host.get(key))
    return f"{name} ({detail})" if detail else name


def refusal(run: Any) -> str | None:
    """Why ``harness reproduce`` cannot train the run (a :class:`reports.store.RunRecord`) again so, or None when it
    can: a completed supervised single run or stepwise run, not capped or capped with a budget
    (:func:`reports.budgets.capped_budget`). The run page asks this too."""
    from reports.budgets import capped_budget
    from reports.stops import run_stop
    from reports.store import CURRICULUM

    if run.status != "completed":
        return f"{run.run_id} is {run.status}, not completed: there are no figures to reproduce"
    if run.is_rl or run.protocol == CURRICULUM:
        kind = "an RL" if run.is_rl else "a curriculum"
        return (f"{run.run_id} is {kind} run: reproduce trains supervised single runs and stepwise runs, whose CPU "
                "training is deterministic")
    stop = run_stop(run)
    if stop is None or stop.kind != "cap" or capped_budget(run) is not None:
        return None
    if run.gpu:
        why = f"it trained on a GPU ({run.gpu})"
    elif run.stack:
        why = "it trained in a stack, whose members stop together"
    elif len(run.results.get("attempts") or []) > 1:
        why = "it was resumed"
    else:
        why = "its curves show no validation at the step where the cap stopped it"
    budget = "cycle budget" if run.is_stepwise else "epoch or step budget reaches its tested checkpoint"
    return f"{run.run_id} was stopped by its {stop.text} and no {budget}: {why}"


def plan(run: Any) -> Plan:
    """How to train the stored run (a :class:`reports.store.RunRecord`) again; a :class:`UserError` saying why
    where it cannot be so (:func:`refusal`)."""
    from reports.budgets import (
        budget_settings,
        checkpoint_budget,
        cycle_budget,
        cycle_settings,
        step_budget,
        step_settings,
    )
    from reports.stops import run_stop

    refused = refusal(run)
    if refused:
        raise UserError(refused)
    stop, epochs, steps, cycles = run_stop(run), checkpoint_budget(run), step_budget(run), cycle_budget(run)
    if epochs is not None:
        rebuilt = rebuild(run.path, budget_settings(epochs))
        what = (f"stopped by its {stop.text}, its tested checkpoint at the end of epoch {epochs}: training "
                f"{'that epoch' if epochs == 1 else f'those {epochs} epochs'} without the cap")
        budget = f"{epochs} epoch{'s' * (epochs != 1)} without the cap"
    elif steps is not None:
        rebuilt = rebuild(run.path, step_settings(steps))
        what = (f"stopped by its {stop.text} after step {steps:,}, where it validated last: training those steps "
                "without the cap (train.max_steps validates after the last one, as the cap did)")
        budget = f"{steps:,} steps without the cap"
    elif cycles is not None:
        rebuilt = rebuild(run.path, cycle_settings(cycles))
        what = (f"stopped by its {stop.text} after {cycles:,} outer cycle{'s' * (cycles != 1)}: training "
                f"{'that cycle' if cycles == 1 else 'those cycles'} without the cap")
        budget = f"{cycles:,} cycle{'s' * (cycles != 1)} without the cap"
    else:
        uncapped = without_cap(run)
        rebuilt = rebuild(run.path, uncapped or None)
        what = (f"ended by its own rule{f' ({stop.text})' if stop else 's'}: training the same config"
                + (" without its time cap, which a slower machine could reach first" if uncapped else ""))
        budget = "its own config" + (" without the cap" if uncapped else "")
    if isinstance(rebuilt, str):
        raise UserError(f"{run.run_id} cannot be composed again: {rebuilt}")
    caveats = [f"it trained on a GPU ({run.gpu}), whose kernels are not bitwise deterministic" if run.gpu else "",
               "it was resumed, and a fresh run does not draw the resumed one's random numbers"
               if len(run.results.get("attempts") or []) > 1 else "", rebuilt.note]
    return Plan(rebuilt, what, budget, "; ".join(caveat for caveat in caveats if caveat))


def without_cap(run: Any) -> dict[str, Any]:
    """The setting that lifts the time cap of a run (a :class:`reports.store.RunRecord`) that ended by its own rule
    ({} where its config sets none). The cap did not stop it where it trained, but on a slower machine it would stop
    the same config sooner, at another budget: trained without it, the run stops where its rule stopped it."""
    from reports.store import cfg_get

    key = "stepwise.max_time_s" if run.is_stepwise else "train.max_time_s"
    return {key: None} if cfg_get(run.config, key) else {}


@dataclass(frozen=True)
class Figure:
    name: str
    stored: float | None
    now: float | None

    @property
    def equal(self) -> bool:
        return self.stored == self.now or (self.stored is not None and self.now is not None
                                           and math.isnan(self.stored) and math.isnan(self.now))

    @property
    def relative(self) -> float:
        if self.stored is None or self.now is None:
            return math.inf
        return abs(self.now - self.stored) / max(abs(self.stored), 1e-12)


def compare(stored: dict[str, Any], now: dict[str, Any]) -> list[Figure]:
    """Every number the stored run's results.json reports under ``metrics``, beside the new run's; the figures of
    splits a later ``harness retest`` added (:func:`retested_splits`) are left out: training the run again does not
    retest it."""
    def number(value: Any) -> float | None:
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    old, new = stored.get("metrics") or {}, now.get("metrics") or {}
    later = retested_splits(stored)
    return [Figure(name, number(old[name]), number(new.get(name))) for name in sorted(old)
            if number(old[name]) is not None and name.split("/")[0] not in later]


def retested_splits(results: dict[str, Any]) -> list[str]:
    """The test splits that ``harness retest`` added to a run after it trained (``retests`` in its results.json)."""
    return sorted({str(split) for record in results.get("retests") or [] for split in record.get("splits") or []})


def figure_table(figures: list[Figure]) -> str:
    """The figures side by side, each said equal or how far apart."""
    rows = [("figure", "stored", "now", "")]
    for figure in figures:
        verdict = "equal" if figure.equal else "missing" if figure.now is None else \
            f"differs ({figure.relative:.1e} relative)"
        rows.append((figure.name, _shown(figure.stored), _shown(figure.now), verdict))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "\n".join("  ".join([*(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])), row[3]]).rstrip()
                     for row in rows)


def _shown(value: float | None) -> str:
    return "–" if value is None else repr(value)


def same_threads(run: Any) -> tuple[dict[str, str], int | None]:
    """The environment that gives the new run the stored run's (a :class:`reports.store.RunRecord`) torch threads,
    and their number where the environment sets it. The thread count decides how a kernel splits its sums, so it
    changes the rounding: a run whose config leaves ``train.threads`` (a stepwise run's ``stepwise.threads``) to
    torch (all cores, or ``OMP_NUM_THREADS``, which a sweep's trials get from Ray) is trained again under
    ``OMP_NUM_THREADS`` set to the threads its machine record counted (a config that sets them already says it, and
    its command carries it)."""
    environment = dict(os.environ)
    threads = machine(run.results).get("torch_threads")
    section = run.config.get("stepwise" if run.is_stepwise else "train") or {}
    if section.get("threads") or not isinstance(threads, int) or threads < 1:
        return environment, None
    environment["OMP_NUM_THREADS"] = str(threads)
    return environment, threads


def reproduce_run(name: str, runs_dir: Path, results_dir: Path | None, record: bool = False) -> int:
    """Train the stored run ``name`` again into ``runs_dir`` (or compare with the run there, if it has already been
    trained so, saying that nothing is trained now), then print every figure beside the stored one; with ``record``,
    add the check to ``results_dir``'s log (:mod:`harness.reproductions`) unless that training is recorded there
    already. The exit code (module docstring)."""
    from harness.config import read_config
    from harness.reproduce_kinds import kind_caveat
    from harness.reproductions import load
    from harness.runs import Run
    from reports.store import load_run

    if record and results_dir is None:
        raise UserError("--record adds the check to the reference store's log: name one with --results-dir")
    try:  # with --record a damaged log is refused before any training, not after; without, it only costs a caveat
        checks = load(results_dir) if results_dir is not None else []
    except UserError:
        if record:
            raise
        checks = []
    stored = find_stored(name, runs_dir, results_dir)
    damage = Run(stored).damage()
    if damage:  # a record edited into another shape is named, not misread on the way to the training
        raise UserError(f"{stored}: {damage}; cannot be reproduced")
    _, problem = read_config(stored / "config.yaml")
    if problem:  # composed from the defaults instead, it would train another run
        raise UserError(f"{problem}; the run cannot be reproduced")
    run = load_run(stored / "results.json", stored.parents[2])
    results = run.results
    chosen = plan(run)
    target = runs_dir / run.task / run.model / chosen.rebuilt.run_id
    if target.resolve() == stored.resolve():
        raise UserError(f"{results['run_id']} is itself in {runs_dir}: its command composes the same run; "
                        f"reproduce it into another store (--runs-dir), or retrain it with --force: "
                        f"{with_options(chosen.rebuilt.command, ['--force'])}")
    check_same_data_now(stored, results, chosen.rebuilt)
    print(f"{results['run_id']} (trained on {processor(machine(results))}): {chosen.what}", flush=True)
    if chosen.caveat:
        print(f"  the figures may differ: {chosen.caveat}", flush=True)
    elsewhere = kind_caveat(machine(results), checks)
    if elsewhere:
        print(f"  the figures may differ: {elsewhere}", flush=True)
    earlier = _completed(target)
    if earlier:  # the command would only say "already completed": say what is compared instead
        print(f"  {chosen.rebuilt.run_id} is trained already in {runs_dir} (finished {earlier.get('finished_at')}): "
              "its figures are compared, nothing is trained now (remove it to train it again)", flush=True)
        code = 0
    else:
        args = list(chosen.rebuilt.bench_args)
        cut = args.index("--") if "--" in args else len(args)
        args[cut:cut] = ["--runs-dir", str(runs_dir)]
        environment, threads = same_threads(run)
        print(f"  {f'OMP_NUM_THREADS={threads} ' if threads else ''}{chosen.rebuilt.command}", flush=True)
        code, interrupted = train([sys.executable, "-m", "harness.cli", *args], environment)
        if interrupted:  # the run is stored (interrupted, or completed just before): the same command goes on
            print("interrupted; the same command resumes the run", file=sys.stderr)
            return INTERRUPTED
    now = _completed(target) or {}
    if code != 0 or now.get("status") != "completed":
        print(f"no completed run {chosen.rebuilt.run_id} in {runs_dir} (the command's exit code: {code}): nothing to "
              "compare", file=sys.stderr)
        return INTERRUPTED if code == INTERRUPTED else 1
    if not earlier:
        now = _mark_reproduction(target, now, str(results["run_id"]))
    figures = compare(results, now)
    print(figure_table(figures))
    later = retested_splits(results)
    if later:
        print(f"not compared: the figures of {', '.join(later)}, which harness retest added after the run trained "
              f"(retest the run trained again to compare them)")
    print(verdict(figures, machine(results), machine(now)))
    if record and results_dir is not None:
        from harness.reproductions import append, check_record, recorded_already

        check = check_record(results["run_id"], chosen.budget, chosen.rebuilt.command, figures, machine(results),
                             machine(now), cpu_relation(machine(results), machine(now)), now)
        if (same := recorded_already(results_dir, check)) is not None:
            print(f"this training of the run is recorded already (the check of {same.get('checked_at')}): nothing "
                  "added")
        else:
            print(f"recorded in {append(results_dir, check)}")
    return 0 if figures and all(figure.equal for figure in figures) else 1


def train(command: list[str], environment: dict[str, str] | None) -> tuple[int, bool]:
    """Run ``command`` (a ``harness bench``) until it ends, each Ctrl-C or SIGTERM passed on to it
    (:func:`harness.runners.signals.wait_passing_on_signals`): its exit code, and whether a signal came."""
    with subprocess.Popen(command, env=environment) as child:
        return wait_passing_on_signals(child)


def _mark_reproduction(target: Path, now: dict[str, Any], of: str) -> dict[str, Any]:
    """Note in the run just trained again (its results.json, ``reproduces``) the run it checks: the report lists it
    with the store's runs but leaves it out of its comparisons, where it would count one run twice."""
    from harness.runs import Run

    marked = {**now, "reproduces": of}
    Run(target).write_results(marked)
    return marked


def _completed(target: Path) -> dict[str, Any] | None:
    """The results.json of the completed run in folder ``target``, or None (no run there, or one not completed)."""
    try:
        results = json.loads((target / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return results if isinstance(results, dict) and results.get("status") == "completed" else None


def check_same_data_now(stored: Path, results: dict[str, Any], rebuilt: Rebuilt) -> None:
    """A UserError unless the data the rebuilt command would read now has the fingerprint the stored run recorded
    (``data`` in its results.json): other data gives the command another run id, so it would train a run that is
    not the one to compare (and leave it in the store) before saying there is nothing to compare."""
    from harness.config import compose
    from harness.runners.build import prepare_task
    from harness.runners.retest import check_same_data
    from harness.runs import Run

    args = rebuilt.bench_args
    overrides = args[args.index("--") + 1:] if "--" in args else []
    composed = compose(str(results["task"]), str(results["model"]), str(results["profile"]),
                       [f"seed={int(results['seed'])}", *overrides])
    check_same_data(Run(stored), results.get("data") or {}, prepare_task(composed).data, "reproduced")


def verdict(figures: list[Figure], stored_on: dict[str, Any], now_on: dict[str, Any]) -> str:
    """One line on how the figures compare, where each run trained, and whether that was the same kind of CPU:
    the same family, model and vector kernels where both runs record them (a virtual machine may name several
    generations of a processor alike), else only the same name, which cannot tell rounding from a real
    difference."""
    where = f"trained on {processor(stored_on)}, again on {processor(now_on)}"
    if not figures:
        return f"the stored run reports no figures to compare ({where})"
    differ = [figure for figure in figures if not figure.equal]
    if not differ:
        return f"every one of the {len(figures)} figures is equal, bit for bit ({where})"
    largest = max(figure.relative for figure in differ)
    why = {"same": "the same kind of CPU: a difference here is not rounding",
           "other": "another kind of CPU, whose arithmetic rounds differently",
           "name": "the same processor name, but the stored run records no CPU model, and a virtual machine may name "
                   "several generations alike: rounding may differ"}[cpu_relation(stored_on, now_on)]
    return f"{len(differ)} of the {len(figures)} figures differ, by up to {largest:.1e} relative ({where}; {why})"


def cpu_relation(stored_on: dict[str, Any], now_on: dict[str, Any]) -> str:
    """How two machine records' CPUs compare: ``same`` kind (processor name, family/model/stepping and torch's vector
    kernels, recorded by both and equal), ``other`` kind, or ``name`` (one name, but a record without the CPU model:
    a virtual machine may name several generations of a processor alike)."""
    kinds = [tuple(host.get(key) for key in ("processor", "cpu_id", "cpu_capability")) for host in (stored_on, now_on)]
    if kinds[0] == kinds[1] and all(kinds[0]):
        return "same"
    if kinds[0][0] != kinds[1][0] or (all(kinds[0]) and all(kinds[1])):
        return "other"
    return "name"
