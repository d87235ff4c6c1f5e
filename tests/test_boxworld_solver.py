"""Every generated BoxWorld level is solvable in exactly its solution length, and distractors are dead ends."""

from __future__ import annotations

import numpy as np
import pytest

from tasks.boxworld.config import BoxWorldConfig, BridgeBoxWorldConfig
from tasks.boxworld.gen_bridge import bridge_level, generate_bridge
from tasks.boxworld.gen_classic import generate_classic
from tasks.boxworld.level import Box
from tasks.boxworld.solver import doomed_boxes, fully_reachable, solve


@pytest.mark.parametrize(
    ("cfg", "levels"),
    [
        (BridgeBoxWorldConfig(), 500),  # the paper's setting
        (BridgeBoxWorldConfig(max_sol_length=2, max_decoy_paths=1, max_decoy_length=2), 150),
        (BridgeBoxWorldConfig(multi_lock=False, max_sol_length=4, max_decoy_paths=2, max_decoy_length=2), 150),
        # the paper's sanity check on its own original BoxWorld: 9 x 9, L in [1, 5], 0..4 distractors (§5)
        (BridgeBoxWorldConfig(num_rows=9, num_cols=9, multi_lock=False, max_sol_length=5, max_decoy_paths=4), 150),
    ],
)
def test_bridge_levels_solvable_in_length_and_distractors_doomed(cfg: BridgeBoxWorldConfig, levels: int) -> None:
    rng = np.random.default_rng(0)
    for _ in range(levels):
        level = generate_bridge(rng, cfg)
        length = level.solution_length
        assert cfg.min_sol_length <= length <= cfg.max_sol_length
        result = solve(level)
        # two paths of L boxes sharing the two-lock gem box: 2L - 1 openings (L with a single lock)
        assert result.solvable and result.boxes_opened == (2 * length - 1 if cfg.multi_lock else length)
        assert fully_reachable(level)
        assert doomed_boxes(level) == {i for i, box in enumerate(level.boxes) if box.distractor}


@pytest.mark.parametrize(
    ("cfg", "levels"),
    [
        (BoxWorldConfig(), 500),  # pycolab defaults: L in 1..4, 0..4 forward distractors
        (BoxWorldConfig(n=6, solution_length=1, num_distractors=0), 200),  # the smallest setting
        (BoxWorldConfig(solution_length=(1, 4), num_distractors=(0, 3), distractor_length=2), 150),
    ],
)
def test_classic_levels_solvable_in_length_and_distractors_doomed(cfg: BoxWorldConfig, levels: int) -> None:
    rng = np.random.default_rng(1)
    for _ in range(levels):
        level = generate_classic(rng, cfg)
        result = solve(level)
        assert result.solvable and result.boxes_opened == level.solution_length
        assert fully_reachable(level)
        assert doomed_boxes(level) == {i for i, box in enumerate(level.boxes) if box.distractor}


def test_classic_backward_distractors() -> None:
    """pycolab draws backward locks and forward-distractor contents from the same colours, so in pure logic a
    chain of distractors can reach a backward box; the episode ends at the first distractor anyway."""
    rng = np.random.default_rng(2)
    cfg = BoxWorldConfig(num_distractors=(1, 3), distractor_length=2, num_backward=(1, 2))
    for _ in range(150):
        level = generate_classic(rng, cfg)
        assert solve(level).boxes_opened == level.solution_length
        assert solve(level, stop_on_distractor=False).boxes_opened == level.solution_length


def test_solver_checks_reachability() -> None:
    """A loose key walled in by two closed boxes in a corner cannot be reached."""
    gem = Box((0,), ((0, 1),), (1,), ((1, 1),))
    key = Box((1,), ((3, 2),))
    wall_right = Box((5,), ((2, 1),), (6,), ((3, 1),))
    wall_left = Box((7,), ((1, 2),), (8,), ((2, 2),))
    open_level = bridge_level(3, 4, [gem, key, wall_left], 1)
    assert fully_reachable(open_level) and solve(open_level).boxes_opened == 1
    closed_level = bridge_level(3, 4, [gem, key, wall_left, wall_right], 1)
    assert not fully_reachable(closed_level) and not solve(closed_level).solvable
