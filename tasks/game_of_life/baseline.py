"""The accuracy of answering "dead" to every query, step by step: the floor a Game of Life model must beat.

    python -m tasks.game_of_life.baseline [--boards 1000] [--steps 10000] [--interventions 0 4]
        [--rollout-worlds 16 64] [--test-worlds 256] [--test-steps 5] [--json PATH]

Random 8x8 boards (density 0.5) mostly die out or settle into still lifes and blinkers, so the share of dead cells
grows with the step: about three quarters at step 5 and more later. A model's cell accuracy means little without
this floor beside it. The boards are drawn by the task itself (``GameOfLifeTask``, torus boundary); the answer at
each step is the share of dead cells over all boards and cells, for each number of interventions asked for.

Two kinds of curve:

* **the distribution's floor**: ``--boards`` held-out boards (seed 0), the share at steps 1-5, 10, 100, 1,000 and
  10,000: what "dead" scores on random boards in general;
* **the floor on a run's own worlds**: the very boards a stepwise run is scored on, drawn as the runner draws
  them (``harness/runners/stepwise_eval.py``): its test, ``--test-worlds`` boards from ``TEST_SEED`` for
  ``--test-steps`` steps (the "at the last training step" figure), and its long rollout, ``--rollout-worlds``
  boards from ``HORIZON_SEED`` for ``--steps`` steps. A rollout holds few boards (16 at the ``cpu`` profile), so
  its floor differs from the distribution's by a point or two, and only this one says whether a model that
  rolled far answers better than "dead" everywhere on the boards it was asked about.

``--json`` stores all curves (the README's world-state table reads ``results/generators/game_of_life.json``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf

from harness.errors import UserError
from harness.runners.stepwise_eval import HORIZON_SEED, TEST_SEED
from tasks.game_of_life.task import GameOfLifeTask

STEPS_SHOWN = (1, 2, 3, 4, 5, 10, 100, 1000, 10000)
BOARD = {"size": 8, "boundary": "torus", "density": 0.5}  # the task's defaults, as every shipped run has them


def dead_share(boards: int, steps: int, interventions: int, seed: int = 0,
               shown: tuple[int, ...] = STEPS_SHOWN) -> dict[int, float]:
    """{step: share of dead cells} at the steps of ``shown`` up to ``steps``, over ``boards`` held-out boards
    drawn from a Generator seeded ``seed`` (the same draws as a runner's evaluation with that seed)."""
    cfg = OmegaConf.create({"task": {"name": "game_of_life", **BOARD, "interventions": interventions}})
    task = GameOfLifeTask(cfg)
    generator = torch.Generator().manual_seed(seed)
    worlds = task.reset(boards, generator, "test")
    shares: dict[int, float] = {}
    for t in range(1, steps + 1):
        worlds, step = task.step(worlds, t, generator, "test")
        if t in shown:
            shares[t] = float((step.answers == 0).float().mean())
    return shares


def held_out_floors(interventions: list[int], rollout_worlds: list[int], steps: int, test_worlds: list[int],
                    test_steps: int) -> list[dict[str, Any]]:
    """The floor on the worlds of a run's test and of its long rollout, for each number of interventions and
    of worlds: entries {worlds: "test" | "rollout", seed, boards, interventions, steps, dead_share}."""
    floors = []
    for flips in interventions:
        for kind, seed, counts, length in (("test", TEST_SEED, test_worlds, test_steps),
                                           ("rollout", HORIZON_SEED, rollout_worlds, steps)):
            shown = tuple(dict.fromkeys((*STEPS_SHOWN, length)))
            for boards in counts:
                shares = dead_share(boards, length, flips, seed, shown)
                floors.append({"worlds": kind, "seed": seed, "boards": boards, "interventions": flips,
                               "steps": length, **BOARD,
                               "dead_share": {str(k): round(v, 6) for k, v in sorted(shares.items())}})
    return floors


def check_arguments(args: argparse.Namespace) -> None:
    """A UserError (one line) for a count that would measure no board or no step (a floor of NaN, which
    ``--json`` would store) or an intervention count the task refuses (distinct cells of the board)."""
    for flag, values in (("--boards", [args.boards]), ("--steps", [args.steps]), ("--test-steps", [args.test_steps]),
                         ("--rollout-worlds", args.rollout_worlds), ("--test-worlds", args.test_worlds)):
        if any(value < 1 for value in values):
            raise UserError(f"{flag} {' '.join(map(str, values))}: each must be at least 1")
    cells = int(BOARD["size"]) ** 2
    if any(not 0 <= flips <= cells for flips in args.interventions):
        raise UserError(f"--interventions {' '.join(map(str, args.interventions))}: each in 0..{cells}, as "
                        f"task.interventions on the {BOARD['size']}x{BOARD['size']} board")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", type=int, default=1000, help="boards of the distribution's floor")
    parser.add_argument("--steps", type=int, default=10000, help="steps of the distribution's and rollouts' floors")
    parser.add_argument("--interventions", type=int, nargs="+", default=[0, 4],
                        help="the task's task.interventions values to measure")
    parser.add_argument("--rollout-worlds", type=int, nargs="*", default=[16, 64],
                        help="stepwise.horizon_batch values: the floor on a long rollout's own worlds")
    parser.add_argument("--test-worlds", type=int, nargs="*", default=[256],
                        help="stepwise.eval_batch values: the floor on a run's test worlds")
    parser.add_argument("--test-steps", type=int, default=5, help="the test's trajectory length (stepwise.steps)")
    parser.add_argument("--json", type=Path, default=None, help="also write the curves here")
    args = parser.parse_args(argv)
    try:
        check_arguments(args)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    curves: dict[str, dict[str, float]] = {}
    for interventions in args.interventions:
        shares = dead_share(args.boards, args.steps, interventions)
        for step, share in shares.items():
            print(f"interventions 0..{interventions}, step {step:>6,}: 'dead' is right for {100 * share:.1f}% "
                  "of cells")
        curves[str(interventions)] = {str(k): round(v, 4) for k, v in shares.items()}
    floors = held_out_floors(args.interventions, args.rollout_worlds, args.steps, args.test_worlds,
                             args.test_steps)
    for floor in floors:
        print(f"{floor['worlds']} worlds ({floor['boards']}, seed {floor['seed']}), interventions "
              f"0..{floor['interventions']}: " + ", ".join(f"{int(k):,}: {100 * v:.1f}"
                                                           for k, v in floor["dead_share"].items()))

    def listed(flag: str, values: list[int]) -> str:
        return f" {flag} {' '.join(map(str, values))}" if values else ""

    stored = {"boards": args.boards, **BOARD, "dead_share": curves, "held_out": floors,
              "command": f"python -m tasks.game_of_life.baseline --boards {args.boards} --steps {args.steps}"
                         + listed("--interventions", args.interventions)
                         + listed("--rollout-worlds", args.rollout_worlds)
                         + listed("--test-worlds", args.test_worlds) + f" --test-steps {args.test_steps}"}
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(stored, indent=1) + "\n")
    return stored


if __name__ == "__main__":
    main()
