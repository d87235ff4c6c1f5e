"""Throughput of stepwise training and of long rollouts, for each world-state pair at its ``cpu`` profile.

    python -m harness.runners.bench_stepwise [--cycles 20] [--rollout 10000] [--pairs lstm_recall/stream_lstm,...]

For each (task, model) pair, composed exactly as ``harness bench`` composes it at the ``cpu`` profile:

* training: world-steps per second (outer cycles x batch x trajectory length / seconds) of Algorithm 1 as the
  stepwise runner runs it (:func:`harness.runners.stepwise.train_cycle`), after two warm-up cycles;
* rollout: the seconds a ``stepwise.horizon_batch``-world rollout of ``--rollout`` steps takes
  (:func:`harness.runners.stepwise_eval.long_rollout`, queries on its grid), with an untrained model of the
  same size (the cost does not depend on the weights).

The last line is one JSON object (``make perf`` keeps it in ``bench/stepwise.json``).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from harness.config import compose
from harness.optim import build_optimizer
from harness.registry import load_entry
from harness.runners.stepwise import build_stepwise, cycle_generator, train_cycle
from harness.runners.stepwise_eval import long_rollout

PAIRS = ("lstm_recall/stream_lstm", "game_of_life/updater_extractor", "world_of_numbers/updater_extractor")


def measure(pair: str, cycles: int, rollout_steps: int, threads: int) -> dict[str, Any]:
    task_name, model_name = pair.split("/")
    composed = compose(task_name, model_name, "cpu", [f"stepwise.threads={threads}"])
    cfg = composed.cfg
    task = load_entry(composed.task.entry)(cfg)
    model = build_stepwise(task, composed.model.interfaces["stream"], cfg, task_name)
    optimizer = build_optimizer(model.parameters(), cfg.optim)
    steps, batch = int(cfg.stepwise.steps), int(cfg.stepwise.batch_size)
    for cycle in range(2):  # warm-up
        train_cycle(model, task, optimizer, cfg, steps, cycle_generator(0, cycle), None)
    started = time.perf_counter()
    for cycle in range(cycles):
        train_cycle(model, task, optimizer, cfg, steps, cycle_generator(0, 2 + cycle), None)
    train_rate = cycles * batch * steps / (time.perf_counter() - started)
    worlds = int(cfg.stepwise.horizon_batch)
    rollout = long_rollout(model, task, [rollout_steps], worlds)
    return {"pair": pair, "batch": batch, "steps": steps, "train_world_steps_per_s": round(train_rate, 1),
            "rollout_steps": rollout_steps, "rollout_worlds": worlds, "rollout_s": round(rollout.seconds, 2)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=20, help="timed outer cycles per pair")
    parser.add_argument("--rollout", type=int, default=10000, help="steps of the timed rollout")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--pairs", default=",".join(PAIRS), help="task/model pairs, comma-separated")
    args = parser.parse_args(argv)
    results = []
    print(f"{'pair':<36}{'world-steps/s':>15}  {'rollout':>26}")
    for pair in args.pairs.split(","):
        result = measure(pair, args.cycles, args.rollout, args.threads)
        results.append(result)
        rollout = f"{result['rollout_steps']:,} x {result['rollout_worlds']} in {result['rollout_s']:.1f} s"
        print(f"{pair:<36}{result['train_world_steps_per_s']:>15,.0f}  {rollout:>26}", flush=True)
    print(json.dumps({"benchmark": "stepwise", "threads": args.threads, "pairs": results}))


if __name__ == "__main__":
    main()
