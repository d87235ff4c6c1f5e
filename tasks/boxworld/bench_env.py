"""Env steps per second of the BoxWorld envs with uniformly random actions, resets included.

    python -m tasks.boxworld.bench_env [--steps 300000] [--boards 64 256 1024] [--repeats 3] [--seed 0]

Measures one single env (bridge BoxWorld in the paper's configuration, original BoxWorld 12 x 12) and the
batched envs with each number of ``--boards`` (steps/s counts board steps, i.e. boards x batched steps; at
least ``--min-rounds`` batched steps, so that every board goes through episodes and resets). Actions are drawn
up front so the figure is the env's own cost. All cases run ``--repeats`` times, interleaved, in one process;
each keeps its best rate, and ``x one env`` (``*_vs_single`` in the JSON) divides a batched env's rate by the
single env's of the same variant. Prints a table, then the figures as one JSON line.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import numpy as np

from harness.bench_args import at_least, bench_parser
from tasks.boxworld.bridge import BridgeBoxWorldEnv
from tasks.boxworld.classic import BoxWorldEnv
from tasks.boxworld.env_base import BoxWorldBase
from tasks.boxworld.vector import BatchedBoxWorld, BoxWorldVectorEnv, BridgeBoxWorldVectorEnv


def bench_single(make: Callable[[], BoxWorldBase], steps: int, seed: int) -> tuple[float, int]:
    """(steps/s, episodes) of one env over ``steps`` random actions."""
    env = make()
    env.reset(seed=seed)
    actions = np.random.default_rng(seed).integers(0, 4, steps).tolist()
    episodes = 0
    start = time.perf_counter()
    for action in actions:
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
            episodes += 1
    return steps / (time.perf_counter() - start), episodes


def bench_vector(make: Callable[[], BatchedBoxWorld], steps: int, seed: int) -> tuple[float, int]:
    """(board steps/s, episodes) of a batched env over about ``steps`` board steps."""
    env = make()
    env.reset(seed=seed)
    rounds = max(1, steps // env.num_envs)
    actions = np.random.default_rng(seed).integers(0, 4, (rounds, env.num_envs))  # [T, B]
    episodes = 0
    start = time.perf_counter()
    for row in actions:
        _, _, terminated, truncated, _ = env.step(row)
        episodes += int(np.count_nonzero(terminated | truncated))
    return rounds * env.num_envs / (time.perf_counter() - start), episodes


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = bench_parser("tasks.boxworld.bench_env", __doc__.splitlines()[0])
    parser.add_argument("--steps", type=at_least(1), default=300_000, help="env steps per measurement")
    parser.add_argument("--boards", type=at_least(1), nargs="+", default=[64, 256, 1024],
                        help="boards of the batched envs")
    parser.add_argument("--min-rounds", type=at_least(0), default=1000, help="at least this many batched steps")
    parser.add_argument("--repeats", type=at_least(1), default=3, help="rounds of all measurements; the best is kept")
    parser.add_argument("--seed", type=at_least(0), default=0)
    args = parser.parse_args(argv)
    variants = {"bridge": (BridgeBoxWorldEnv, BridgeBoxWorldVectorEnv), "boxworld12": (BoxWorldEnv, BoxWorldVectorEnv)}
    cases: list[tuple[str, str, Callable[[], tuple[float, int]]]] = []
    for variant, (single, batched) in variants.items():
        cases.append((f"single_{variant}", variant, lambda single=single: bench_single(single, args.steps, args.seed)))
        for b in args.boards:
            steps = max(args.steps, b * args.min_rounds)
            cases.append((f"vector{b}_{variant}", variant,
                          lambda b=b, batched=batched, steps=steps: bench_vector(lambda: batched(b), steps, args.seed)))
    best: dict[str, tuple[float, int]] = {}
    for _ in range(args.repeats):  # interleaved, so that a burst of load on the machine hits every case alike
        for name, _variant, run in cases:
            rate, episodes = run()
            if rate > best.get(name, (0.0, 0))[0]:
                best[name] = (rate, episodes)
    figures: dict[str, float] = {}
    print(f"{'env':<22}{'steps/s':>14}{'episodes':>10}{'x one env':>11}")
    for name, variant, _run in cases:
        rate, episodes = best[name]
        ratio = rate / best[f"single_{variant}"][0]
        figures[f"{name}_steps_per_s"] = round(rate)
        if not name.startswith("single"):
            figures[f"{name}_vs_single"] = round(ratio, 2)
        print(f"{name:<22}{rate:>14,.0f}{episodes:>10,}{ratio:>11.2f}")
    print(json.dumps(figures))
    return figures


if __name__ == "__main__":
    main()
