"""Throughput of the ListOps generator (tree sampling, rejection by length, deduplication and evaluation).

    python -m tasks.listops.bench_generator [--n 2000] [--seed 0]

Prints expressions/s at LRA's lengths (500 < L < 2000) and at the ``cpu`` profile's (50 < L < 200), and the
projected time of LRA's 100,000 expressions; the last line is one JSON object (``make perf`` keeps it in
``bench/listops_generator.json``).
"""

from __future__ import annotations

import json
import time

from harness.bench_args import at_least, bench_parser
from tasks.listops.generator import Settings, generate_splits

SETTINGS = {"lra": Settings(min_length=500, max_length=2000), "cpu": Settings(min_length=50, max_length=200)}
LRA_EXAMPLES = 100_000  # 96k / 2k / 2k


def measure(settings: Settings, n: int, seed: int) -> float:
    """Generated and labelled expressions per second for ``n`` expressions."""
    start = time.perf_counter()
    generate_splits({"train": n}, seed, settings)
    return n / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> None:
    parser = bench_parser("tasks.listops.bench_generator", __doc__.splitlines()[0])
    parser.add_argument("--n", type=at_least(1), default=2000, help="expressions per setting")
    parser.add_argument("--seed", type=at_least(0), default=0)
    args = parser.parse_args(argv)
    result: dict[str, float] = {}
    print(f"{'lengths':<22}{'expressions/s':>15}{'100k take (s)':>15}")
    for name, settings in SETTINGS.items():
        rate = measure(settings, args.n, args.seed)
        result[f"{name}_examples_per_s"] = round(rate, 1)
        print(f"{settings.min_length} < L < {settings.max_length:<10}{rate:>15,.0f}{LRA_EXAMPLES / rate:>15,.0f}")
    print(json.dumps({"benchmark": "listops_generator", "n": args.n, **result}))


if __name__ == "__main__":
    main()
