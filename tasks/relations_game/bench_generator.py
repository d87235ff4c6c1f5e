"""Throughput of the Relations Game generator (scene description + rendering), per task and object set.

    python -m tasks.relations_game.bench_generator [--n 100000] [--tasks same,between] [--object-sets stripes]

Prints images/s for each (task, object set) pair, then the overall rate, then the figures as one JSON line. The
default (100,000 images per pair, all 47 pairs) takes about 10 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import time

from tasks.relations_game.generator import OBJECT_SETS, TASKS, generate


def _names(text: str, valid: tuple[str, ...] | list[str], what: str) -> list[str]:
    names = [t for t in text.split(",") if t] if text else list(valid)
    bad = [t for t in names if t not in valid]
    if bad:
        raise SystemExit(f"unknown {what}: {', '.join(bad)}; valid: {', '.join(valid)}")
    return names


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="images per task and object set")
    parser.add_argument("--tasks", default="", help="comma-separated task names (default: all)")
    parser.add_argument("--object-sets", default="", help="comma-separated object sets (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    tasks = _names(args.tasks, list(TASKS), "task")
    sets = _names(args.object_sets, OBJECT_SETS, "object set")
    generate("same", 64, "pentominoes", args.seed)  # warm-up (object tables, first allocations)
    total_n, total_s = 0, 0.0
    rates: dict[str, float] = {}
    print(f"{'task':<14}{'object set':<13}{'images/s':>12}{'seconds':>9}")
    for task in tasks:
        for object_set in sets:
            if task == "colour_shape" and object_set == "stripes":
                continue  # not defined (one shape only)
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
