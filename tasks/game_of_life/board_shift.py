"""Does a trained Game of Life model follow the rule, or the statistics of the boards it was trained on?

    python -m tasks.game_of_life.board_shift RUN_DIR [--boards 256] [--steps 8] [--evolved 5 20 100 1000]
        [--densities 0.1 0.2 0.3] [--checkpoint best] [--json PATH]

A stepwise run trains on random boards (``task.density``, 0.5) told at step 1 and rolled a few generations. Far
into a rollout the boards that are left look nothing like those: a few still lifes and blinkers on an empty
board. This tool tells a trained model (``RUN_DIR``: a run folder with ``config.yaml`` and ``checkpoints/``)
boards of other kinds at step 1, exactly as the task tells its own, rolls ``--steps`` steps without
interventions, and prints its cell accuracy at every step beside two floors on the same boards:

* ``dead``: answering "dead" everywhere;
* ``unchanged``: answering the told board at every step, which is right wherever the board has settled (a
  still life scores 100%; a blinker half its cells every other step).

The boards: ``fresh d``, random boards of density d (``task.density`` first, then ``--densities``); and
``evolved g``, random boards at ``task.density`` advanced g generations by the true rule first (boards that died
out are dropped and their count is printed), the kind of board a long rollout is asked about. A model that had
learned the rule would score near 100% on every kind within the steps it was trained on; one that learned how
random boards evolve over their first few generations scores well on ``fresh`` and falls towards a floor on
``evolved``. Boards are drawn from seed ``--seed`` (default 0), every kind from its own generator; no gradient
is taken.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf

from harness.registry import REGISTRY, load_entry
from harness.runners.stepwise_eval import step_loss
from tasks.game_of_life.generator import life_step
from tasks.game_of_life.task import GameOfLifeTask, LifeWorlds

EVOLVED = [5, 20, 100, 1000]  # generations the ``evolved`` boards are advanced before they are told
DENSITIES = [0.1, 0.2, 0.3]  # the other ``fresh`` densities


class UnusableRun(ValueError):
    """The run folder lacks what the probe needs (a Game of Life config, a checkpoint that loads)."""


def load_model(run_dir: Path, checkpoint: str) -> tuple[Any, GameOfLifeTask, Any]:
    """(model in eval mode, task, config) of a trained Game of Life stepwise run."""
    config_path, ckpt_path = run_dir / "config.yaml", run_dir / "checkpoints" / f"{checkpoint}.ckpt"
    if not config_path.exists():
        raise UnusableRun(f"{run_dir} has no config.yaml: not a run folder")
    cfg = OmegaConf.load(config_path)
    if cfg.task.name != "game_of_life":
        raise UnusableRun(f"{run_dir} is a {cfg.task.name} run, not a game_of_life one")
    if not ckpt_path.exists():
        raise UnusableRun(f"{run_dir} has no checkpoints/{checkpoint}.ckpt (shipped runs in results/ carry none; "
                          "use the run folder it was trained in)")
    if cfg.task.interventions:
        raise UnusableRun("the probe rolls boards without interventions; this run was trained with them")
    task = GameOfLifeTask(cfg)
    model = load_entry(REGISTRY.model(cfg.model.name).interfaces["stream"])(cfg.model, task.info)
    try:
        model.load_state_dict(torch.load(ckpt_path, map_location="cpu", weights_only=True)["model"])
    except Exception as exc:  # truncated file, another model's weights: torch raises several kinds
        raise UnusableRun(f"{ckpt_path} does not load into {cfg.model.name} ({type(exc).__name__})") from None
    return model.eval(), task, cfg


def roll(model: Any, task: GameOfLifeTask, board: torch.Tensor, steps: int) -> dict[str, list[float]]:
    """Tell ``board`` [B, S, S] at step 1 and roll ``steps`` steps: per step, the model's cell accuracy and the
    two floors, in %."""
    generator = torch.Generator().manual_seed(0)  # unused without interventions; the task asks for one
    worlds, state = LifeWorlds(board=board), model.initial_state(board.shape[0])
    told = board.reshape(board.shape[0], -1).long()  # [B, S*S]
    curves: dict[str, list[float]] = {"model": [], "dead": [], "unchanged": []}
    with torch.no_grad():
        for t in range(1, steps + 1):
            worlds, step = task.step(worlds, t, generator, "test")
            state = model.update(state, step)
            _, correct = step_loss(model.extract(state, step), step)  # [B, Q]
            curves["model"].append(100 * correct.float().mean().item())
            curves["dead"].append(100 * (step.answers == 0).float().mean().item())
            curves["unchanged"].append(100 * (step.answers == told).float().mean().item())
    return curves


def board_kinds(cfg: Any, boards: int, evolved: list[int], densities: list[float],
                seed: int) -> list[tuple[str, torch.Tensor]]:
    """(name, boards [n, S, S]) of every kind asked for; evolved boards that died out are dropped."""
    size, boundary, density = int(cfg.task.size), str(cfg.task.boundary), float(cfg.task.density)

    def random(rho: float, offset: int) -> torch.Tensor:
        generator = torch.Generator().manual_seed(seed * 1_000 + offset)
        return torch.rand(boards, size, size, generator=generator) < rho  # [n, S, S]

    kinds = [(f"fresh {density:g}", random(density, 0))]
    for i, generations in enumerate(evolved):
        board = random(density, 100 + i)
        for _ in range(generations):
            board = life_step(board, boundary)
        alive = board.flatten(1).any(dim=1)
        kinds.append((f"evolved {generations} ({int(alive.sum())} of {boards} alive)", board[alive]))
    kinds += [(f"fresh {rho:g}", random(rho, 200 + i)) for i, rho in enumerate(densities)]
    return [(name, board) for name, board in kinds if board.shape[0]]


def probe(run_dir: Path, boards: int = 256, steps: int = 8, evolved: list[int] | None = None,
          densities: list[float] | None = None, checkpoint: str = "best", seed: int = 0) -> dict[str, Any]:
    """Every board kind's curves: {"run": ..., "kinds": {name: {"alive": share, "model": [...], ...}}}."""
    model, task, cfg = load_model(run_dir, checkpoint)
    kinds = board_kinds(cfg, boards, EVOLVED if evolved is None else evolved,
                        DENSITIES if densities is None else densities, seed)
    out: dict[str, Any] = {"run": run_dir.name, "checkpoint": checkpoint, "steps": steps, "kinds": {}}
    for name, board in kinds:
        out["kinds"][name] = {"boards": int(board.shape[0]), "alive": float(board.float().mean()),
                              **roll(model, task, board, steps)}
    return out


def format_table(result: dict[str, Any]) -> str:
    steps = result["steps"]
    header = "boards".ljust(36) + "alive  curve      " + " ".join(f"{t:>5}" for t in range(1, steps + 1))
    lines = [f"{result['run']} ({result['checkpoint']} checkpoint): cell accuracy % at steps 1-{steps}", header]
    for name, kind in result["kinds"].items():
        for i, curve in enumerate(("model", "dead", "unchanged")):
            label = name.ljust(36) + (f"{kind['alive']:.3f}  " if i == 0 else " " * 7)
            lines.append(label + curve.ljust(11) + " ".join(f"{v:5.1f}" for v in kind[curve]))
    return "\n".join(lines)


def argument_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the counts, generations or densities asked for, in one line; None when nothing is."""
    if args.boards < 1 or args.steps < 1:
        return "--boards and --steps must be at least 1"
    if any(g < 0 for g in args.evolved):
        return f"--evolved {' '.join(map(str, args.evolved))}: generations are at least 0"
    if any(not 0.0 <= d <= 1.0 for d in args.densities):
        return f"--densities {' '.join(map(str, args.densities))}: each is a probability in [0, 1]"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tasks.game_of_life.board_shift",
                                     description=(__doc__ or "").split("\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--boards", type=int, default=256)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--evolved", type=int, nargs="*", default=EVOLVED)
    parser.add_argument("--densities", type=float, nargs="*", default=DENSITIES)
    parser.add_argument("--checkpoint", default="best", help="best or last")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the curves here")
    args = parser.parse_args(argv)
    problem = argument_problem(args)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        result = probe(args.run_dir, args.boards, args.steps, args.evolved, args.densities, args.checkpoint,
                       args.seed)
    except UnusableRun as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(format_table(result))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
