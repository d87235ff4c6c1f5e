"""Kill-and-resume trials: SIGKILL a real command at a random moment, run it again until it completes, and check
that nothing was lost.

A script, not a test (pytest does not collect it: its name has no ``test_`` prefix); it takes tens of
minutes. Run it from the project root::

    .venv/bin/python tests/kill_resume.py --trials 24 --seed 0 [--lock /tmp/cpu.lock] [--earliest 0.1]

``--lock FILE`` takes an exclusive ``flock`` on FILE around each reference command and each trial (not
around the whole script), so that other heavy jobs sharing the lock can run between trials.

Scenarios, taken in turn:

* ``babi/lstm`` and ``relations_game/predinet``: ``harness bench`` at the smoke profile with three epochs
  (and, for PrediNet, more batches), so that random moments fall before the run exists, mid-epoch before
  and after the first checkpoint, and during the test and the analyses;
* ``cartpole/mlp_agent``: an RL run (RLlib IMPALA) at the smoke profile with a larger step budget;
* ``sweep``: ``harness sweep`` on a two-trial smoke sweep (bAbI / LSTM, seeds 0 and 1) on a local Ray.

Each trial starts the command in its own process group, sends the group SIGKILL after a random delay
(seeded; up to the uninterrupted command's duration, so some kills land before the run directory exists
and some after the command has finished), and repeats this once or twice; then it runs the same command
until it exits 0 (at most three times). Checked after every kill: every ``results.json`` in the store is
readable JSON holding an object (writes are atomic), and no process the command started is left. Checked
at the end: every run of the trial is ``completed``; a supervised run (a sweep's trials too) has exactly the
metrics, best point, steps and curves (``metrics.csv`` without its wall-clock column) of the same command
run once without interruption; an RL run has reached its environment-step budget and has an evaluation.
RL runs are not bitwise reproducible across a resume (RLlib samples asynchronously: the batch an update sees
depends on timing, and the env runners' states are not checkpointed), so their numbers are not compared.

Anything that starts Ray runs inside a loopback-only network namespace: the script re-executes itself
inside ``unshare -n`` (it must run as root or with user namespaces) unless it is already in one.
It prints one line per trial and a summary; the exit code is 0 when every trial passed.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import fcntl
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NAMESPACE_MARK = "KILL_RESUME_LOOPBACK_ONLY"
TAG = "KILL_RESUME_TAG"  # set in every command's environment: finds the processes a command left behind
WALL_CLOCK_COLUMNS = ("train/examples_per_s",)
RUN_TIMEOUT_S = 600

SWEEP_FILE = """\
name: kill_resume_smoke
description: two trials (seeds 0 and 1) of bAbI / LSTM at the smoke profile, for tests/kill_resume.py
task: babi
models: [lstm]
profile: smoke
seeds: [0, 1]
overrides: [train.max_epochs=3]
cpus_per_trial: 1
"""


@dataclass(frozen=True)
class Scenario:
    name: str
    kind: str  # supervised | rl | sweep
    args: tuple[str, ...]  # harness arguments, without --runs-dir
    env_steps: int = 0  # RL: the budget the run must reach


SCENARIOS = (
    Scenario("babi/lstm", "supervised", ("bench", "--task", "babi", "--model", "lstm", "--profile", "smoke",
                                         "train.max_epochs=3")),
    Scenario("relations_game/predinet", "supervised",
             ("bench", "--task", "relations_game", "--model", "predinet", "--profile", "smoke",
              "train.max_epochs=3", "train.limit_train_batches=10")),
    Scenario("cartpole/mlp_agent", "rl", ("bench", "--task", "cartpole", "--model", "mlp_agent", "--profile", "smoke",
                                          "rl.total_env_steps=3000"), env_steps=3000),
    Scenario("sweep", "sweep", ("sweep", "{sweep_file}")),
)


@dataclass
class Reference:
    """The command run once without interruption: its duration and its runs (run id -> results, curves)."""

    seconds: float
    runs: dict[str, tuple[dict[str, Any], list[dict[str, str]]]]


@dataclass
class Trial:
    index: int
    scenario: Scenario
    kills: list[str] = field(default_factory=list)  # where each kill landed
    reruns: int = 0
    problems: list[str] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------------------
def in_loopback_only_namespace() -> bool:
    """Whether this process sees no network interface but the loopback one."""
    try:
        return sorted(os.listdir("/sys/class/net")) == ["lo"]
    except OSError:
        return False


def reexec_in_namespace() -> None:
    if os.environ.get(NAMESPACE_MARK) == "1" or in_loopback_only_namespace():
        return
    if shutil.which("unshare") is None:
        sys.exit("kill_resume: needs `unshare` to run Ray in a loopback-only network namespace")
    os.environ[NAMESPACE_MARK] = "1"
    command = 'ip link set lo up && exec "$0" "$@"'
    os.execvp("unshare", ["unshare", "-n", "sh", "-c", command, sys.executable, str(Path(__file__).resolve()),
                          *sys.argv[1:]])


# ---------------------------------------------------------------------------------------------------------
def command(scenario: Scenario, runs: Path, sweep_file: Path) -> list[str]:
    args = [arg.format(sweep_file=sweep_file) for arg in scenario.args]
    return [sys.executable, "-m", "harness.cli", *args, "--runs-dir", str(runs)]


def environment(base: Path, tag: str) -> dict[str, str]:
    return {**os.environ, "WANDB_MODE": "disabled", "HARNESS_CACHE_DIR": str(base / "cache"),
            "RAY_TMPDIR": str(base / "ray"), TAG: tag, "PYTHONUNBUFFERED": "1"}


def tagged_processes(tag: str) -> list[int]:
    """Processes whose environment carries ``TAG=tag`` (a command and everything it started)."""
    found = []
    needle = f"{TAG}={tag}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def start(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with log.open("a") as handle:
        handle.write(f"\n$ {' '.join(cmd)}\n")
        handle.flush()
        return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT,
                                start_new_session=True)


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def process_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace") or "?"
    except OSError:
        return "?"


def clear_leftovers(tag: str) -> list[str]:
    """Kill (by pid) the processes a killed command left behind; returns their names."""
    deadline = time.monotonic() + 30  # Ray's daemons notice their parent's death within seconds (slower under load)
    while time.monotonic() < deadline and tagged_processes(tag):
        time.sleep(0.5)
    left = tagged_processes(tag)
    names = [process_name(pid) for pid in left]
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return names


# ---------------------------------------------------------------------------------------------------------
def results_files(runs: Path) -> list[Path]:
    return sorted(runs.glob("*/*/*/results.json"))


def unreadable(runs: Path) -> list[str]:
    """results.json files that are not readable JSON objects (atomic writes must prevent any)."""
    bad = []
    for path in results_files(runs):
        try:
            if not isinstance(json.loads(path.read_text()), dict):
                bad.append(f"{path}: not an object")
        except (OSError, ValueError) as exc:
            bad.append(f"{path}: {type(exc).__name__}")
    return bad


def curves(run: Path) -> list[dict[str, str]]:
    path = run / "metrics.csv"
    if not path.exists():
        return []
    with path.open(newline="") as handle:
        return [{k: v for k, v in row.items() if k not in WALL_CLOCK_COLUMNS} for row in csv.DictReader(handle)]


def store(runs: Path) -> dict[str, tuple[dict[str, Any], list[dict[str, str]]]]:
    return {path.parent.name: (json.loads(path.read_text()), curves(path.parent)) for path in results_files(runs)}


def where(runs: Path, kind: str) -> str:
    """Where a kill landed, read from the run store it left."""
    files = results_files(runs)
    if not files:
        return "before any run directory"
    parts = []
    for path in files:
        try:
            results = json.loads(path.read_text())
        except ValueError:
            parts.append("unreadable results.json")
            continue
        status = results.get("status")
        if kind == "rl":
            parts.append(f"{status} at {results.get('env_steps') or 0} checkpointed env steps")
        else:
            epochs = sum(1 for row in curves(path.parent) if row.get("val/acc"))
            checkpoint = (path.parent / "checkpoints" / "last.ckpt").exists()
            parts.append(f"{status}, {epochs} epoch(s) in the curve, {'a' if checkpoint else 'no'} checkpoint")
    return "; ".join(parts)


def compare(run_id: str, got: tuple[dict[str, Any], list[dict[str, str]]],
            want: tuple[dict[str, Any], list[dict[str, str]]]) -> list[str]:
    (results, rows), (reference, reference_rows) = got, want
    problems = [f"{run_id}: {key} differs ({results.get(key)!r} vs {reference.get(key)!r})"
                for key in ("metrics", "best", "steps", "epochs") if results.get(key) != reference.get(key)]
    if rows != reference_rows:
        problems.append(f"{run_id}: curves differ ({len(rows)} rows vs {len(reference_rows)})")
    return problems


def final_checks(trial: Trial, runs: Path, reference: Reference) -> None:
    found = store(runs)
    scenario = trial.scenario
    if not found:
        trial.problems.append("no run in the store")
    for run_id, (results, rows) in found.items():
        if results.get("status") != "completed":
            trial.problems.append(f"{run_id}: status {results.get('status')} ({results.get('error')})")
            continue
        if scenario.kind == "rl":
            if int(results.get("env_steps") or 0) < scenario.env_steps:
                trial.problems.append(f"{run_id}: {results.get('env_steps')} env steps < {scenario.env_steps}")
            if "eval/episode_return" not in (results.get("metrics") or {}):
                trial.problems.append(f"{run_id}: no evaluation")
        elif run_id not in reference.runs:
            trial.problems.append(f"{run_id}: not a run of the uninterrupted command")
        else:
            trial.problems.extend(compare(run_id, (results, rows), reference.runs[run_id]))
    if scenario.kind != "rl" and set(found) != set(reference.runs):
        trial.problems.append(f"runs {sorted(found)} instead of {sorted(reference.runs)}")


@contextlib.contextmanager
def locked(path: str | None) -> Iterator[None]:
    """An exclusive flock on ``path`` inside the block (nothing when ``path`` is None)."""
    if path is None:
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# ---------------------------------------------------------------------------------------------------------
def run_to_end(cmd: list[str], env: dict[str, str], log: Path) -> tuple[int, float]:
    began = time.monotonic()
    proc = start(cmd, env, log)
    try:
        code = proc.wait(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        code = -9
    return code, time.monotonic() - began


def reference_run(scenario: Scenario, base: Path, sweep_file: Path) -> Reference:
    runs = base / "reference" / scenario.name.replace("/", "-")
    tag = f"{os.getpid()}-reference-{scenario.name}"
    code, seconds = run_to_end(command(scenario, runs, sweep_file), environment(base, tag), base / "reference.log")
    clear_leftovers(tag)
    if code != 0:
        sys.exit(f"kill_resume: the uninterrupted {scenario.name} command failed (exit {code}); "
                 f"see {base / 'reference.log'}")
    return Reference(seconds, store(runs))


def run_trial(trial: Trial, base: Path, sweep_file: Path, reference: Reference, rng: random.Random,
              earliest: float = 0.1) -> None:
    runs = base / f"trial-{trial.index:02d}"
    log = base / f"trial-{trial.index:02d}.log"
    cmd = command(trial.scenario, runs, sweep_file)
    for attempt in range(rng.choice((1, 1, 2))):
        tag = f"{os.getpid()}-{trial.index}-kill-{attempt}"
        delay = rng.uniform(earliest, 1.1) * reference.seconds
        proc = start(cmd, environment(base, tag), log)
        try:
            proc.wait(timeout=delay)
            trial.kills.append(f"finished before its kill at {delay:.0f} s")
        except subprocess.TimeoutExpired:
            kill_group(proc)
            trial.kills.append(f"{delay:.0f} s: {where(runs, trial.scenario.kind)}")
        trial.leftovers += clear_leftovers(tag)
        trial.problems.extend(unreadable(runs))
    for attempt in range(3):
        tag = f"{os.getpid()}-{trial.index}-rerun-{attempt}"
        code, _ = run_to_end(cmd, environment(base, tag), log)
        trial.leftovers += clear_leftovers(tag)
        trial.reruns += 1
        if code == 0:
            break
    else:
        trial.problems.append(f"the command did not complete in 3 runs (last exit {code}); see {log}")
    trial.problems.extend(unreadable(runs))
    final_checks(trial, runs, reference)
    if trial.leftovers:
        trial.problems.append(f"{len(trial.leftovers)} process(es) left behind by killed commands: "
                              f"{', '.join(trial.leftovers)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=24)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scenarios", nargs="+", default=[s.name for s in SCENARIOS],
                        choices=[s.name for s in SCENARIOS])
    parser.add_argument("--keep", default=None, help="work folder to keep (default: a temporary one, removed)")
    parser.add_argument("--lock", default=None, help="flock this file around each command and trial")
    parser.add_argument("--earliest", type=float, default=0.1,
                        help="kills land between this fraction and 1.1 of the uninterrupted command's duration "
                             "(e.g. 0.75: after a sweep's Ray start-up, once its trials train)")
    args = parser.parse_args(argv)
    reexec_in_namespace()
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="kill-resume-"))
    base.mkdir(parents=True, exist_ok=True)
    sweep_file = base / "kill_resume_smoke.yaml"
    sweep_file.write_text(SWEEP_FILE)
    scenarios = [s for s in SCENARIOS if s.name in args.scenarios]
    rng = random.Random(args.seed)
    began = time.monotonic()
    references = {}
    for scenario in scenarios:
        with locked(args.lock):
            references[scenario.name] = reference_run(scenario, base, sweep_file)
        print(f"reference {scenario.name}: {references[scenario.name].seconds:.0f} s uninterrupted, "
              f"{len(references[scenario.name].runs)} run(s)", flush=True)
    trials = []
    for index in range(args.trials):
        trial = Trial(index, scenarios[index % len(scenarios)])
        with locked(args.lock):
            run_trial(trial, base, sweep_file, references[trial.scenario.name], rng, args.earliest)
        trials.append(trial)
        verdict = "ok" if not trial.problems else "FAILED: " + " | ".join(trial.problems)
        print(f"trial {index:02d} {trial.scenario.name}: killed {len(trial.kills)}x "
              f"[{' / '.join(trial.kills)}], {trial.reruns} rerun(s): {verdict}", flush=True)
    failed = [t for t in trials if t.problems]
    kills = sum(len(t.kills) for t in trials)
    landed = sum(1 for t in trials for k in t.kills if not k.startswith("finished"))
    mix = ", ".join(f"{sum(t.scenario is s for t in trials)} {s.name}" for s in scenarios)
    print(f"summary: {len(trials)} trials ({mix}), "
          f"{kills} kills ({landed} while running), {len(trials) - len(failed)} passed, {len(failed)} failed; "
          f"seed {args.seed}; {time.monotonic() - began:.0f} s", flush=True)
    if not args.keep and not failed:
        shutil.rmtree(base, ignore_errors=True)
    elif failed:
        print(f"logs and run stores kept in {base}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
