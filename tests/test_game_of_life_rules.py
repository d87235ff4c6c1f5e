"""Game of Life (Moskvichev & Liu 2021, "Updater-Extractor Architecture for Inductive World State
Representations", §7.2 and Appendix B, Experiment 2): rules the other tests leave open.

The initial board: each cell is alive with probability ``task.density`` (tasks/game_of_life/README.md, "Config").
At the default 0.5 "alive" and "dead" are drawn alike, so only a density away from 0.5 tells them apart."""

from __future__ import annotations

import pytest
import torch
from omegaconf import OmegaConf

from tasks.game_of_life.generator import DEFAULTS
from tasks.game_of_life.task import GameOfLifeTask


def make(**task: object) -> GameOfLifeTask:
    return GameOfLifeTask(OmegaConf.create({"seed": 0, "task": {"name": "game_of_life", **DEFAULTS, **task}}))


@pytest.mark.parametrize("density", [0.0, 0.15, 0.8, 1.0])
def test_the_initial_boards_are_alive_with_the_configured_density(density: float) -> None:
    task = make(density=density)
    boards = task.reset(200, torch.Generator().manual_seed(3), "train").board  # [200, 8, 8]: 12,800 cells
    assert abs(boards.float().mean().item() - density) < 0.02
