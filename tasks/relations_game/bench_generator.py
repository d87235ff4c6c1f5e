"""Throughput of the Relations Game generator (scene description + rendering), per task and object set.

    python -m tasks.relations_game.bench_generator [--n 100000] [--tasks same,between] [--object-sets stripes]

Prints images/s for each (task, object set) pair, then the overall rate, then the figures as one JSON line. The
default (100,000 images per pair, all 47 pairs) takes about 10 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import time

from harness.bench_args import at_least, bench_parser
from harness.errors import did_you_mean
from tasks.relations_game.generator import OBJECT_SETS, TASKS, generate


def _names(parser: argparse.ArgumentParser, flag: str, text: str, valid: tuple[str, ...] | list[str],
           what: str) -> list[str]:
    """The comma-separated names of ``text`` (all of ``valid`` when empty); an unknown one is refused."""
    names = [t for t in text.split(",") if t] if text else list(valid)
    if not names:
        parser.error(f"{flag}: no {what} named; valid: {', '.join(valid)}")
    bad = [t for t in names if t not in valid]
    if bad:
        parser.error(f"{flag}: unknown {what}: {', '.join(bad)}{did_you_mean(bad[0], valid)}; "
                     f"valid: {', '.join(valid)}")
    return names


def _defined(task: str, object_set: str) -> bool:
    """Whether the generator defines ``task`` on ``object_set`` (colour_shape is not defined on stripes: one
    shape only)."""
    return not (task == "colour_shape" and object_set == "stripes")


def main(argv: list[str] | None = None) -> None:
    parser = bench_parser("tasks.relations_game.bench_generator", __doc__.splitlines()[0])
    parser.add_argument("--n", type=at_least(1), default=100_000, help="images per task and object set")
    parser.add_argument("--tasks", default="", help="comma-separated task names (default: all)")
    parser.add_argument("--object-sets", default="", help="comma-separated object sets (default: all)")
    parser.add_argument("--seed", type=at_least(0), default=0)
    args = parser.parse_args(argv)
    tasks = _names(parser, "--tasks", args.tasks, list(TASKS), "task")
    sets = _names(parser, "--object-sets", args.object_sets, OBJECT_SETS, "object set")
    if not any(_defined(task, object_set) for task in tasks for object_set in sets):
        parser.error(f"--tasks {','.join(tasks)} --object-sets {','.join(sets)}: no pair to measure "
                     "(colour_shape is not defined on stripes, which has one shape only)")
    generate("same", 64, "pentominoes", args.seed)  # warm-up (object tables, first allocations)
    total_n, total_s = 0, 0.0
    rates: dict[str, float] = {}
    print(f"{'task':<14}{'object set':<13}{'images/s':>12}{'seconds':>9}")
    for task in tasks:
        for object_set in sets:
            if not _defined(task, object_set):
                continue
            start = time.perf_counter()
            generate(task, args.n, object_set, args.seed)
            seconds = time.perf_counter() - start
            total_n, total_s = total_n + args.n, total_s + seconds
            rates[f"{task}/{object_set}"] = round(args.n / seconds)
            print(f"{task:<14}{object_set:<13}{args.n / seconds:>12,.0f}{seconds:>9.3f}")
    if total_s > 0:
        print(f"{'all':<27}{total_n / total_s:>12,.0f}{total_s:>9.3f}  ({total_n:,} images)")
    print(json.dumps({"benchmark": "relations_generator", "images_per_pair": args.n,
                      "images_per_s": round(total_n / total_s) if total_s > 0 else None, "per_pair": rates}))


if __name__ == "__main__":
    main()
