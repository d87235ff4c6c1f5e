"""Speed figures a reader can trace, kept like the runs: ``make perf`` records each benchmark with where and how it
ran, ``make perf-publish`` copies the records into the tracked store ``results/perf/``, and the README's speed
tables are generated from that store (:func:`speed_section`, called by :mod:`reports.readme`).

    python -m reports.perf run NAME -- python -m MODULE [ARGS ...]   # bench/NAME.log and bench/NAME.json
    python -m reports.perf publish [NAME ...]                       # bench/NAME.json -> results/perf/NAME.json

A benchmark prints what it likes and, as its last line, one JSON object of figures (every ``bench_*`` module
does). ``run`` streams the output to the terminal and ``bench/NAME.log`` and writes ``bench/NAME.json``: those
figures, the command, when it started and how long it took, the machine (processor, CPU count, load average
before and after: these machines are shared, and a figure measured under load says so) and the code (commit,
uncommitted changes, package versions). Figures within one benchmark were measured in one process, side by side,
so their ratios hold under load; absolute rates do not compare across records.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from harness.errors import INTERRUPTED
from harness.provenance import git_info, machine_info, package_versions
from reports.markdown import table

ROOT = Path(__file__).resolve().parents[1]
BENCH_DIR = ROOT / "bench"
PERF = Path("perf")  # under results/
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


def _machine() -> dict[str, Any]:
    info = {key: value for key, value in machine_info().items() if key in ("processor", "cpus", "system", "machine")}
    gpu = _gpu_name()
    if gpu:
        info["gpu"] = gpu
    info["load_average"] = [round(value, 2) for value in os.getloadavg()]
    return info


def _gpu_name() -> str | None:
    """The first GPU's name as ``nvidia-smi`` gives it, or None (no NVIDIA GPU or driver). This process does not
    import torch, so :func:`harness.provenance.machine_info` cannot name the GPU a benchmark ran on."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        listed = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                                text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    names = listed.stdout.strip().splitlines() if listed.returncode == 0 else []
    return names[0].strip() if names else None


def run_benchmark(name: str, command: Sequence[str], bench_dir: Path = BENCH_DIR) -> int:
    """Run ``command``, stream its output to stdout and ``bench_dir/NAME.log``, record its last line's figures
    in ``bench_dir/NAME.json``; returns an exit code (the command's, or 2 when its last line is not JSON).

    The output goes to ``NAME.log.partial`` until the record is written, then replaces ``NAME.log``: a benchmark
    that fails or is interrupted leaves the previous record and its log as they were (a later ``perf-publish``
    cannot publish an old record beside a new log), and its own output in ``NAME.log.partial``."""
    if not NAME.fullmatch(name):
        print(f"perf: the name {name!r} must be letters, digits, '_' or '-' (it names bench/NAME.json)",
              file=sys.stderr)
        return 2
    if shutil.which(command[0]) is None:
        print(f"perf {name}: no command {command[0]!r}; nothing recorded", file=sys.stderr)
        return 2
    bench_dir.mkdir(parents=True, exist_ok=True)
    before, started, clock = _machine(), datetime.now(UTC), time.perf_counter()
    last = ""
    partial = bench_dir / f"{name}.log.partial"
    kept = f"nothing recorded (its output: {partial}"
    kept += f"; the previous record {name}.json stays)" if (bench_dir / f"{name}.json").exists() else ")"
    try:
        with open(partial, "w", encoding="utf-8") as log, subprocess.Popen(
                list(command), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1) as process:
            assert process.stdout is not None
            for line in process.stdout:
                sys.stdout.write(line)
                log.write(line)
                if line.strip():
                    last = line.strip()
    except KeyboardInterrupt:
        print(f"perf {name}: interrupted; {kept}", file=sys.stderr)
        return INTERRUPTED
    seconds = time.perf_counter() - clock
    if process.returncode != 0:
        print(f"perf {name}: the benchmark exited with {process.returncode}; {kept}", file=sys.stderr)
        return process.returncode
    try:
        figures = json.loads(last)
    except json.JSONDecodeError:
        figures = None
    if not isinstance(figures, dict):
        print(f"perf {name}: the benchmark's last line is not a JSON object ({last[:60]!r}); {kept}",
              file=sys.stderr)
        return 2
    record = {"name": name, "command": " ".join(_shown(command)), "figures": figures,
              "started": started.isoformat(timespec="seconds"), "seconds": round(seconds, 1),
              "machine": {**before, "load_average_after": _machine()["load_average"]},
              "git": git_info(), "versions": package_versions()}
    staged = bench_dir / f"{name}.json.partial"
    staged.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    os.replace(staged, bench_dir / f"{name}.json")
    os.replace(partial, bench_dir / f"{name}.log")
    return 0


def _shown(command: Sequence[str]) -> list[str]:
    """The command as a reader would type it (the virtual environment's python as ``python``)."""
    first, *rest = command
    return ["python" if Path(first).name.startswith("python") else first, *rest]


def publish(names: Sequence[str], bench_dir: Path = BENCH_DIR, results_dir: Path = ROOT / "results") -> int:
    """Copy the records ``names`` (all of ``bench_dir`` when empty) into ``results_dir/perf``."""
    paths = [bench_dir / f"{name}.json" for name in names] or sorted(bench_dir.glob("*.json"))
    missing = [path.stem for path in paths if not path.exists()]
    if missing or not paths:
        print(f"perf publish: no record {', '.join(missing) or 'at all'} in {bench_dir} (run `make perf` first)",
              file=sys.stderr)
        return 2
    records = {path: _read_record(path) for path in paths}
    unreadable = [path.stem for path, record in records.items() if not isinstance(record, dict)]
    if unreadable:
        print(f"perf publish: {', '.join(unreadable)} in {bench_dir} is not a JSON record; run its benchmark again",
              file=sys.stderr)
        return 2
    unrecorded = [path.stem for path, record in records.items() if "figures" not in record]
    if unrecorded:
        print(f"perf publish: {', '.join(unrecorded)} in {bench_dir} came from an older `make perf` without "
              "provenance; run it again", file=sys.stderr)
        return 2
    target = results_dir / PERF
    target.mkdir(parents=True, exist_ok=True)
    for path in paths:
        shutil.copyfile(path, target / path.name)
        print(f"published {path.name} -> {target / path.name}")
    return 0


def _read_record(path: Path) -> Any:
    """A record's contents, or None when it is not JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None


# The README's speed tables

_table = partial(table, empty=None)  # a record's table: its header even without rows


def _rate(value: float) -> str:
    return f"{value / 1e6:.2f} M" if value >= 1e6 else f"{value:,.0f}"


def _optional(value: Any, form: str, unit: str = "") -> str:
    """A figure that older records lack: formatted when it is a number, else "–"."""
    return f"{format(value, form)}{unit}" if isinstance(value, int | float) else "–"


def _start(figures: dict[str, Any]) -> list[str]:
    each = ", ".join(f"{value:.2f}" for value in figures.get("first_step_s_each", []))
    return _table(["command", "W&B", "first training step (median)", "whole command (median)", "each run's first step",
                   "importing torch and Lightning alone (median)",
                   "torch and one optimiser alone, which imports torch._dynamo (median)"],
                  [[f"`harness bench --task {figures['task']} --model {figures['model']} --profile "
                    f"{figures['profile']}`", str(figures["wandb"]), f"{figures['first_step_s']:.2f} s",
                    f"{figures['command_s']:.2f} s", f"{each} s", _optional(figures.get("imports_s"), ".2f", " s"),
                    _optional(figures.get("torch_optimizer_s"), ".2f", " s")]])


def _boxworld(figures: dict[str, Any]) -> list[str]:
    variants = {"bridge": "bridge BoxWorld, paper configuration", "boxworld12": "original BoxWorld, 12 x 12"}
    boards = sorted({int(key[6:].split("_")[0]) for key in figures if key.startswith("vector")})
    rows = []
    for variant, label in variants.items():
        if f"single_{variant}_steps_per_s" not in figures:
            continue
        cells = [_rate(figures[f"single_{variant}_steps_per_s"])]
        for count in boards:
            rate = figures.get(f"vector{count}_{variant}_steps_per_s")
            cells.append("–" if rate is None else
                         f"{_rate(rate)} ({figures[f'vector{count}_{variant}_vs_single']:.2f}x)")
        rows.append([label, *cells])
    return _table(["board-steps/s (random actions, resets included)", "one env",
                   *(f"{count:,} boards (x one env)" for count in boards)], rows)


def _stacked_cell(rates: dict[str, float], variant: str) -> str:
    """One stack size's total batches/s, with its ratio to the plain (unstacked) model measured beside it."""
    if variant not in rates:
        return "–"
    plain = rates.get("plain")
    shown = variant != "plain" and isinstance(plain, int | float) and plain > 0
    ratio = f" ({rates[variant] / plain:.2f}x)" if shown else ""
    return f"{rates[variant]:,.1f}{ratio}"


def _stacked(figures: dict[str, Any]) -> list[str]:
    variants: list[str] = []
    for model in figures["models"].values():
        for rates in model["batches_per_s"].values():
            variants += [name for name in rates if name not in variants]
    rows = [[name, threads, *(_stacked_cell(rates, v) for v in variants)]
            for name, model in figures["models"].items() for threads, rates in model["batches_per_s"].items()]
    lines = _table(["model", "threads", *(f"{v} batches/s" + ("" if v == "plain" else " (x plain)") for v in variants)],
                   rows)
    hours = "; ".join(f"{what}: {value:.1f} h" for what, value in figures.get("grid_hours", {}).items())
    if hours:
        lines = [*lines, "", f"Projected wall time of Table 1's grid (75 runs x 100,000 batches): {hours}."]
    floor = figures.get("grid_floor")
    if floor:
        steps = ", ".join(f"{model} {gflop:,.2f}" for model, gflop in floor["step_gflop"].items())
        peaks = "; ".join(f"{hours_:,.1f} h at {floor['peak_gflops'][count]:,.1f} GFLOP/s ({count} thread"
                          f"{'s' if count != '1' else ''})" for count, hours_ in floor["hours_at_peak"].items())
        lines += ["", f"A floor under any stacking: one training step multiplies {steps} GFLOP in matrix products "
                      f"(forward and backward), {floor['grid_pflop']:,.2f} PFLOP over the grid; at this machine's rate "
                      f"in one large matrix product that is at least {peaks}."]
    return lines


def _stepwise(figures: dict[str, Any]) -> list[str]:
    """One row per pair; the projection of the profile's iterations where the record has one (older ones do not)."""
    projected = any("projected_hours" in pair for pair in figures["pairs"])
    rows = []
    for pair in figures["pairs"]:
        rollout = ("–" if pair.get("rollout_s") is None else
                   f"{pair['rollout_steps']:,} steps x {pair['rollout_worlds']} worlds: {pair['rollout_s']:.1f} s")
        projection = [_optional(pair.get("iterations"), ","), _optional(pair.get("projected_hours"), ".2f", " h")]
        rows.append([f"`{pair['pair']}`", f"{pair['batch']} x {pair['steps']}",
                     f"{pair['train_world_steps_per_s']:,.0f}", *(projection if projected else []), rollout])
    device = figures.get("device", "cpu")
    where = f"`{figures.get('profile', 'cpu')}` profile" + ("" if device == "cpu" else f", on {device}")
    return _table([f"task/model ({where})", "batch x steps", "training world-steps/s",
                   *(["the profile's iterations", "they take at this rate (full-length trajectories)"] if projected
                     else []), "long rollout"], rows)


def _agents(figures: dict[str, Any]) -> list[str]:
    rows = []
    for batch, ms in sorted(figures["ms"].items(), key=lambda item: int(item[0])):
        gflop = figures.get("matmul_gflop", {}).get(batch, {})
        floor = figures.get("matmul_gflop_ratio", {}).get(batch)
        rows.append([batch, f"{ms['relational']:,.1f}", f"{ms['simplicial']:,.1f}", f"{figures['ratio'][batch]:.2f}",
                     *(_optional(gflop.get(name), ".2f") for name in ("relational", "simplicial")),
                     _optional(floor, ".2f")])
    return _table(["batch", "relational ms", "simplicial ms", "simplicial / relational (time)",
                   "relational GFLOP in products", "simplicial GFLOP in products", "simplicial / relational (GFLOP)"],
                  rows)


def _babi(figures: dict[str, Any]) -> list[str]:
    rows = [[task, str(entry["statements"]), _optional(entry.get("mean_statements"), ".1f"),
             f"{entry['examples_per_s']:,.0f}", f"{entry['vs_task_1']:.2f}",
             _optional(entry.get("statements_per_s"), ",.0f"), _optional(entry.get("statements_vs_task_1"), ".2f")]
            for task, entry in sorted(figures["tasks"].items(), key=lambda item: int(item[0]))]
    return _table(["bAbI task", "statements per story (padded batch)", "mean statements per example",
                   "TPR-RNN training examples/s (model step)", "x task 1", "statements read/s", "x task 1"], rows)


def _relations_models(figures: dict[str, Any]) -> list[str]:
    fastest_first = sorted(figures["ms_per_step"].items(), key=lambda item: item[1])
    rows = [[f"`{name}`", f"{ms:.1f}", f"{1000.0 / ms:,.0f}", _minutes(figures["minutes_per_100k_batches"][name])]
            for name, ms in fastest_first]
    return _table([f"model (one SGD step at batch {figures['batch_size']}, {figures['threads']} thread)",
                   "ms per step", "batches/s", "100,000 batches (Table 1's budget)"], rows)


def _minutes(minutes: float) -> str:
    return f"{minutes / 60:.1f} h" if minutes >= 90 else f"{minutes:.1f} min"


def _generators(figures: dict[str, Any]) -> list[str]:
    """One row per generator setting; the figures of the three generator benchmarks."""
    if figures.get("benchmark") == "listops_generator":
        rows = [[f"ListOps, {label}", f"{figures['n']:,} expressions", f"{figures[key]:,.0f} expressions/s"]
                for label, key in (("LRA's lengths (500 < L < 2000)", "lra_examples_per_s"),
                                   ("the `cpu` profile's lengths (50 < L < 200)", "cpu_examples_per_s"))]
    elif figures.get("benchmark") == "relations_generator":
        rows = [[f"Relations Game, {len(figures['per_pair'])} task x object-set pairs",
                 f"{figures['images_per_pair']:,} images a pair", f"{figures['images_per_s']:,} images/s"]]
    else:
        rows = [[f"Pathfinder-32, {figures['difficulty']} (generator version {figures['generator_version']})",
                 f"{figures['images']:,} images", f"{figures['images_per_s']:,.0f} images/s"]]
    return _table(["generator", "generated", "rate (one process)"], rows)


def _flat(figures: dict[str, Any], prefix: str = "") -> list[list[str]]:
    rows = []
    for key, value in figures.items():
        if isinstance(value, dict):
            rows += _flat(value, f"{prefix}{key}.")
        elif key != "benchmark":
            rows.append([f"{prefix}{key}", f"{value:,}" if isinstance(value, (int, float)) else str(value)])
    return rows


# record name -> (title, renderer); any other record is shown as a table of its figures
RENDERERS: dict[str, tuple[str, Callable[[dict[str, Any]], list[str]]]] = {
    "start": ("Start-up: process start to the first training step", _start),
    "boxworld_env": ("Batched BoxWorld envs", _boxworld),
    "stacked": ("Stacked seeds on the Relations Game (Table 1 models, `cpu` profile, batch 10)", _stacked),
    "stepwise": ("Stepwise training and long rollouts (Algorithm 1)", _stepwise),
    "stacked_gpu": ("Stacked seeds on the Relations Game, on a GPU (Table 1 models, `cpu` profile, batch 10)",
                    _stacked),
    "stacked_own_optim": ("Stacks whose members keep their own optimisers (members of differing optimiser settings; "
                          "Relations Game, `cpu` profile, batch 10)", _stacked),
    "stepwise_gpu": ("Stepwise training on a GPU at the papers' sizes (Algorithm 1, the `paper` profiles)",
                     _stepwise),
    "babi_tasks": ("TPR-RNN's training step on each bAbI task", _babi),
    "babi_tasks_trim": ("Each batch cut to its longest story: TPR-RNN's training step on each bAbI task with "
                        "`task.trim_batches=true` (`--trim`; by default a run pads every batch to the task's "
                        "longest story)", _babi),
    "babi_tasks_factored": ("TPR-RNN's training step with the factored memory (`model.memory=factored`), tasks 1 "
                            "and 3", _babi),
    "agents": ("Gradient step of the relational and 2-simplicial agents (bridge BoxWorld batches, forward and "
               "backward)", _agents),
    "agents_gpu": ("Gradient step of the relational and 2-simplicial agents on a GPU", _agents),
    "relations_models": ("Training step of the Relations Game models (Table 1's models, random images)",
                         _relations_models),
    "relations_generator": ("Relations Game generator", _generators),
    "listops_generator": ("ListOps generator", _generators),
    "pathfinder_generator": ("Pathfinder generator, hard", _generators),
    "pathfinder_generator_easy": ("Pathfinder generator, easy", _generators),
}


def _provenance(record: dict[str, Any]) -> str:
    machine, git = record["machine"], record.get("git") or {}
    load = "/".join(f"{value:.1f}" for value in machine.get("load_average", []))
    commit = (git.get("commit") or "unknown")[:10] + (" with uncommitted changes" if git.get("dirty") else "")
    return (f"`{record['command']}`, {record['started'][:16].replace('T', ' ')} UTC, {record['seconds']:.0f} s; "
            f"{machine.get('cpus')} CPUs ({machine.get('processor', 'processor unknown')})"
            + (f" and a GPU ({machine['gpu']})" if machine.get("gpu") else "") + ", load average "
            f"{load} (1/5/15 min) before; commit {commit}; `results/perf/{record['name']}.json`.")


def speed_section(results_dir: Path) -> list[str]:
    """The README's speed tables, one per record in ``results_dir/perf`` (none: no section)."""
    records = [json.loads(path.read_text(encoding="utf-8")) for path in sorted((results_dir / PERF).glob("*.json"))]
    if not records:
        return []
    order = list(RENDERERS)
    records.sort(key=lambda record: (order.index(record["name"]) if record["name"] in order else len(order),
                                     record["name"]))
    lines = ["### Speed (`make perf`, published with `make perf-publish`)", "",
             "Each table is one stored benchmark record. Where a table compares cases (envs, stack sizes, tasks), "
             "they were measured in one process, interleaved, so their ratios hold on a loaded machine; absolute "
             "rates vary with the machine and its load, which the line under each table gives."]
    for record in records:
        title, render = RENDERERS.get(record["name"], (record["name"], lambda figures: _table(
            ["figure", "value"], _flat(figures))))
        lines += ["", f"**{title}**", "", *render(record["figures"]), "", _provenance(record)]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m reports.perf", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    run = sub.add_parser("run", help="run one benchmark and record its figures in bench/NAME.json")
    run.add_argument("name")
    pub = sub.add_parser("publish", help="copy records from bench/ into results/perf/")
    pub.add_argument("names", nargs="*")
    command: list[str] = []
    if "--" in args:
        args, command = args[: args.index("--")], args[args.index("--") + 1:]
    parsed = parser.parse_args(args)
    if parsed.verb == "run":
        if not command:
            parser.error("run needs the benchmark's command after --")
        return run_benchmark(parsed.name, command)
    return publish(parsed.names)


if __name__ == "__main__":
    raise SystemExit(main())
