"""Env steps per second of the BoxWorld envs with uniformly random actions, resets included.

    python -m tasks.boxworld.bench_env [--steps 300000] [--boards 64] [--seed 0]

Measures one single env (bridge BoxWorld in the paper's configuration, original BoxWorld 12 x 12) and the
batched envs with ``--boards`` boards (steps/s counts board steps, i.e. boards x batched steps). Actions are
drawn up front so the figure is the env's own cost. Prints a table, then the figures as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import numpy as np

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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300_000, help="env steps per measurement")
    parser.add_argument("--boards", type=int, default=64, help="boards of the batched envs")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    b = args.boards
    cases: list[tuple[str, Callable[[], tuple[float, int]]]] = [
        ("single_bridge", lambda: bench_single(BridgeBoxWorldEnv, args.steps, args.seed)),
        ("single_boxworld12", lambda: bench_single(BoxWorldEnv, args.steps, args.seed)),
        (f"vector{b}_bridge", lambda: bench_vector(lambda: BridgeBoxWorldVectorEnv(b), args.steps, args.seed)),
        (f"vector{b}_boxworld12", lambda: bench_vector(lambda: BoxWorldVectorEnv(b), args.steps, args.seed)),
    ]
    figures: dict[str, float] = {}
    print(f"{'env':<22}{'steps/s':>14}{'episodes':>10}")
    for name, run in cases:
        rate, episodes = run()
        figures[f"{name}_steps_per_s"] = round(rate)
        print(f"{name:<22}{rate:>14,.0f}{episodes:>10,}")
    print(json.dumps(figures))
    return figures


if __name__ == "__main__":
    main()
