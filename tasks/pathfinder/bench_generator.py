"""Throughput of the Pathfinder-32 generator, in images per second.

    python -m tasks.pathfinder.bench_generator [--n 5000] [--difficulty hard] [--seed 0]

Prints the rate, then one JSON object on the last line (``make perf`` keeps it). The default (2,000 hard
images) takes under a minute on one core.
"""

from __future__ import annotations

import json
import time

from harness.bench_args import at_least, bench_parser
from tasks.pathfinder.generator import GENERATOR_VERSION, LEVELS, generate, level_settings


def main(argv: list[str] | None = None) -> None:
    parser = bench_parser("tasks.pathfinder.bench_generator", __doc__.splitlines()[0])
    parser.add_argument("--n", type=at_least(1), default=2000)
    parser.add_argument("--difficulty", choices=list(LEVELS), default="hard")
    parser.add_argument("--seed", type=at_least(0), default=0)
    args = parser.parse_args(argv)
    settings = level_settings(args.difficulty)
    generate(1, args.seed + 1, settings)  # warm-up: the stamp tables
    start = time.perf_counter()
    generate(args.n, args.seed, settings)
    seconds = time.perf_counter() - start
    rate = args.n / seconds
    print(f"pathfinder32 {args.difficulty}: {args.n:,} images in {seconds:.1f} s, {rate:,.0f} images/s")
    print(json.dumps({"bench": "pathfinder_generator", "difficulty": args.difficulty, "images": args.n,
                      "seconds": round(seconds, 3), "images_per_s": round(rate, 1),
                      "generator_version": GENERATOR_VERSION}))


if __name__ == "__main__":
    main()
