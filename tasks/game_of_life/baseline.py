"""The accuracy of answering "dead" to every query, step by step: the floor a Game of Life model must beat.

    python -m tasks.game_of_life.baseline [--boards 2000] [--steps 10000] [--interventions 0 4] [--json PATH]

Random 8x8 boards (density 0.5) mostly die out or settle into still lifes and blinkers, so the share of dead cells
grows with the step: about three quarters at step 5 and more later. A model's cell accuracy means little without
this floor beside it. The boards are drawn by the task itself (``GameOfLifeTask``, torus boundary), held-out
split, ``--boards`` of them; the answer at each step is the share of dead cells over all boards and cells, for
each number of interventions asked for. ``--json`` stores the curves (the README's world-state table reads
``results/generators/game_of_life.json``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf

from tasks.game_of_life.task import GameOfLifeTask

STEPS_SHOWN = (1, 2, 3, 4, 5, 10, 100, 1000, 10000)


def dead_share(boards: int, steps: int, interventions: int, seed: int = 0) -> dict[int, float]:
    """{step: share of dead cells} at the steps of ``STEPS_SHOWN`` up to ``steps``."""
    cfg = OmegaConf.create({"task": {"name": "game_of_life", "size": 8, "boundary": "torus", "density": 0.5,
                                     "interventions": interventions}})
    task = GameOfLifeTask(cfg)
    generator = torch.Generator().manual_seed(seed)
    worlds = task.reset(boards, generator, "test")
    shares: dict[int, float] = {}
    for t in range(1, steps + 1):
        worlds, step = task.step(worlds, t, generator, "test")
        if t in STEPS_SHOWN:
            shares[t] = float((step.answers == 0).float().mean())
    return shares


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=10000)
    parser.add_argument("--interventions", type=int, nargs="+", default=[0, 4],
                        help="the task's task.interventions values to measure")
    parser.add_argument("--json", type=Path, default=None, help="also write the curves here")
    args = parser.parse_args(argv)
    curves: dict[str, dict[str, float]] = {}
    for interventions in args.interventions:
        shares = dead_share(args.boards, args.steps, interventions)
        for step, share in shares.items():
            print(f"interventions 0..{interventions}, step {step:>6,}: 'dead' is right for {100 * share:.1f}% "
                  "of cells")
        curves[str(interventions)] = {str(k): round(v, 4) for k, v in shares.items()}
    stored = {"boards": args.boards, "size": 8, "boundary": "torus", "density": 0.5, "dead_share": curves,
              "command": f"python -m tasks.game_of_life.baseline --boards {args.boards} --steps {args.steps} "
                         f"--interventions {' '.join(map(str, args.interventions))}"}
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(stored, indent=1) + "\n")
    return stored


if __name__ == "__main__":
    main()
