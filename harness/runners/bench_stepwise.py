"""Throughput of stepwise training and of long rollouts, for each world-state pair at its ``cpu`` profile.

    python -m harness.runners.bench_stepwise [--cycles 20] [--rollout 10000] [--pairs lstm_recall/stream_lstm,...]
    python -m harness.runners.bench_stepwise --profile paper --device cuda --rollout 0 \
        --pairs game_of_life/updater_extractor

For each (task, model) pair, composed exactly as ``harness bench`` composes it at the profile (``--profile``,
default ``cpu``), with the model on ``--device`` (``cuda``: behind :class:`harness.runners.stepwise_device.OnDevice`,
as a run on a GPU trains it):

* training: world-steps per second (outer cycles x batch x trajectory length / seconds) of Algorithm 1 as the
  stepwise runner runs it (:func:`harness.runners.stepwise.train_cycle`), after two warm-up cycles;
* rollout: the seconds a ``stepwise.horizon_batch``-world rollout of ``--rollout`` steps takes
  (:func:`harness.runners.stepwise_eval.long_rollout`, queries on its grid), with an untrained model of the
  same size (the cost does not depend on the weights); ``--rollout 0`` skips it;
* projected hours: the profile's ``stepwise.iterations`` cycles of full-length trajectories at that rate (an upper
  bound where a curriculum starts the trajectories shorter; validation and the rollout not counted).

The last line is one JSON object (``make perf`` keeps it in ``bench/stepwise.json``).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import torch

from harness.bench_args import at_least, bench_parser, check_device
from harness.config import PROFILES, compose
from harness.errors import UserError
from harness.optim import build_optimizer
from harness.registry import REGISTRY, load_entry
from harness.runners.stepwise import build_stepwise, cycle_generator, train_cycle
from harness.runners.stepwise_device import OnDevice
from harness.runners.stepwise_eval import long_rollout

PAIRS = ("lstm_recall/stream_lstm", "game_of_life/updater_extractor", "world_of_numbers/updater_extractor")


def measure(pair: str, cycles: int, rollout_steps: int, threads: int, profile: str = "cpu",
            device: str = "cpu") -> dict[str, Any]:
    task_name, model_name = pair.split("/")
    composed = compose(task_name, model_name, profile, [f"stepwise.threads={threads}"])
    cfg = composed.cfg
    task = load_entry(composed.task.entry)(cfg)
    model = build_stepwise(task, composed.model.interfaces["stream"], cfg, task_name)
    if device != "cpu":
        model = OnDevice(model, torch.device(device))
    optimizer = build_optimizer(model.parameters(), cfg.optim)
    steps, batch = int(cfg.stepwise.steps), int(cfg.stepwise.batch_size)
    for cycle in range(2):  # warm-up
        train_cycle(model, task, optimizer, cfg, steps, cycle_generator(0, cycle), None)
    started = time.perf_counter()
    for cycle in range(cycles):
        train_cycle(model, task, optimizer, cfg, steps, cycle_generator(0, 2 + cycle), None)
    train_rate = cycles * batch * steps / (time.perf_counter() - started)
    worlds, iterations = int(cfg.stepwise.horizon_batch), int(cfg.stepwise.iterations)
    rollout_s = long_rollout(model, task, [rollout_steps], worlds).seconds if rollout_steps > 0 else None
    return {"pair": pair, "profile": profile, "device": device, "batch": batch, "steps": steps,
            "train_world_steps_per_s": round(train_rate, 1), "iterations": iterations,
            "projected_hours": round(iterations * batch * steps / train_rate / 3600, 2),
            "rollout_steps": rollout_steps, "rollout_worlds": worlds,
            "rollout_s": None if rollout_s is None else round(rollout_s, 2)}


def check_pairs(parser: argparse.ArgumentParser, text: str) -> list[str]:
    """The ``--pairs`` of ``text``, each a stepwise task and a model that runs on it; else ``parser.error``."""
    pairs = text.split(",")
    for pair in pairs:
        task_name, slash, model_name = pair.partition("/")
        if not (slash and task_name and model_name) or "/" in model_name:
            parser.error(f"--pairs: {pair!r} is not task/model (e.g. {PAIRS[0]})")
        try:
            task, _ = REGISTRY.check_pair(task_name, model_name)
        except UserError as exc:
            parser.error(f"--pairs {pair}: {exc}")
        if task.kind != "stepwise":
            stepwise = sorted(name for name, spec in REGISTRY.tasks.items() if spec.kind == "stepwise")
            parser.error(f"--pairs {pair}: {task_name} is a {task.kind} task, not a stepwise one; "
                         f"stepwise tasks: {', '.join(stepwise)}")
    return pairs


def main(argv: list[str] | None = None) -> None:
    parser = bench_parser("harness.runners.bench_stepwise", __doc__.splitlines()[0])
    parser.add_argument("--cycles", type=at_least(1), default=20, help="timed outer cycles per pair")
    parser.add_argument("--rollout", type=at_least(0), default=10000, help="steps of the timed rollout (0: none)")
    parser.add_argument("--threads", type=at_least(1), default=2, help="torch threads")
    parser.add_argument("--pairs", default=",".join(PAIRS), help="task/model pairs, comma-separated")
    parser.add_argument("--profile", default="cpu", choices=PROFILES,
                        help="the profile each pair is composed at (cpu, paper, smoke)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="where the model trains")
    args = parser.parse_args(argv)
    pairs = check_pairs(parser, args.pairs)
    check_device(parser, args.device)
    results = []
    print(f"{'pair':<36}{'world-steps/s':>15}  {'iterations take':>16}  {'rollout':>26}")
    for pair in pairs:
        result = measure(pair, args.cycles, args.rollout, args.threads, args.profile, args.device)
        results.append(result)
        rollout = ("–" if result["rollout_s"] is None else
                   f"{result['rollout_steps']:,} x {result['rollout_worlds']} in {result['rollout_s']:.1f} s")
        print(f"{pair:<36}{result['train_world_steps_per_s']:>15,.0f}  {result['projected_hours']:>14,.2f} h  "
              f"{rollout:>26}", flush=True)
    print(json.dumps({"benchmark": "stepwise", "threads": args.threads, "profile": args.profile,
                      "device": args.device, "pairs": results}))


if __name__ == "__main__":
    main()
