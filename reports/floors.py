"""The Game of Life's "all dead" floor beside a run's figures, for the README's world-state table and the run pages.

Most random 8x8 worlds die out or settle, so answering "dead" on every cell scores well, and better as the worlds
age. ``python -m tasks.game_of_life.baseline`` measures that floor on the very held-out worlds a run is tested and
rolled out on (the same seeds, board settings and batch sizes) and keeps it in ``results/generators/
game_of_life.json`` (``held_out``). A run's figure equal to its floor means the model answers "dead" everywhere,
or as good as.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reports.store import RunRecord, cfg_get

GAME_OF_LIFE_FLOOR = Path("generators") / "game_of_life.json"  # under the reference store (results/)
FLOOR_COMMAND = "python -m tasks.game_of_life.baseline"
EARLY_STEPS = (1, 2, 3, 4)  # the rollout's first steps shown beside its horizons (with the training length)


def load_floor(results_dir: Path) -> dict[str, Any]:
    """The baseline's file under ``results_dir``; an empty dict when it is absent or unreadable."""
    try:
        data = json.loads((Path(results_dir) / GAME_OF_LIFE_FLOOR).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def dead_floor(run: RunRecord, floor: dict[str, Any]) -> str:
    """For a Game of Life run: the accuracy (%) of answering "dead" everywhere on the worlds its figures come from,
    its test worlds at the training length and its rollout worlds at the rollout's first steps, training length
    and horizons; "–" for other tasks."""
    if run.task != "game_of_life":
        return "–"
    steps = int(cfg_get(run.config, "stepwise.eval_steps") or cfg_get(run.config, "stepwise.steps"))
    horizons = [int(h) for h in cfg_get(run.config, "stepwise.horizons")]
    test = _held_out_floor(run, floor, "test", int(cfg_get(run.config, "stepwise.eval_batch")), steps)
    rollout = _held_out_floor(run, floor, "rollout", int(cfg_get(run.config, "stepwise.horizon_batch")),
                              max(horizons))
    if test is None or rollout is None:
        return f"not measured for these worlds: {floor.get('command', FLOOR_COMMAND)}"
    shown = [*EARLY_STEPS, int(cfg_get(run.config, "stepwise.steps")), *horizons]
    curve = ", ".join(f"{step:,}: {100 * rollout[str(step)]:.1f}" for step in dict.fromkeys(shown)
                      if str(step) in rollout)
    return f"test, step {steps}: {100 * test[str(steps)]:.1f}; rollout {curve}"


def _held_out_floor(run: RunRecord, floor: dict[str, Any], worlds: str, boards: int, steps: int
                    ) -> dict[str, float] | None:
    """The stored "dead" curve of the ``boards`` held-out ``worlds`` ("test" or "rollout") of the run's board
    settings, measured at least ``steps`` steps; None if the file has none."""
    board = {key: cfg_get(run.config, f"task.{key}") for key in ("size", "boundary", "density", "interventions")}
    for entry in floor.get("held_out") or []:
        if entry["worlds"] == worlds and entry["boards"] == boards and entry["steps"] >= steps \
                and all(entry[key] == value for key, value in board.items()):
            return entry["dead_share"]
    return None
