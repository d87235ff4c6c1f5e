"""The batched level generators: valid levels (solver, box counts, colours), independent of the batch, and drawn
from the same distribution as the per-level generators."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from scipy.stats import chi2_contingency

from tasks.boxworld.config import BoxWorldConfig, BridgeBoxWorldConfig
from tasks.boxworld.gen_bridge import generate_bridge
from tasks.boxworld.gen_bridge_batch import generate_bridge_batch
from tasks.boxworld.gen_classic import generate_classic
from tasks.boxworld.gen_classic_batch import generate_classic_batch
from tasks.boxworld.level import EMPTY, GEM, Level, layout
from tasks.boxworld.solver import doomed_boxes, fully_reachable, solve

BRIDGE_CONFIGS = [
    BridgeBoxWorldConfig(),  # the paper's setting
    BridgeBoxWorldConfig(max_sol_length=2, max_decoy_paths=1, max_decoy_length=2),
    BridgeBoxWorldConfig(num_rows=9, num_cols=9, multi_lock=False, max_sol_length=5, max_decoy_paths=4),
]
CLASSIC_CONFIGS = [
    BoxWorldConfig(),  # pycolab's defaults
    BoxWorldConfig(n=6, solution_length=1, num_distractors=0),
    BoxWorldConfig(solution_length=(1, 4), num_distractors=(0, 3), distractor_length=2),
    BoxWorldConfig(num_distractors=(1, 3), distractor_length=2, num_backward=(1, 2)),
]


def batch_levels(generate, cfg, count: int, seed: int = 0) -> list[Level]:
    rngs = [np.random.default_rng([seed, i]) for i in range(count)]
    batch = generate(rngs, cfg)
    return [batch.level(i) for i in range(count)]


def check_common(level: Level, openings: int) -> None:
    """Solvable in ``openings`` box openings; distractors exactly the dead ends; cells match the boxes."""
    result = solve(level)
    assert result.solvable and result.boxes_opened == openings
    assert fully_reachable(level)
    assert np.array_equal(level.cells, layout(level.height, level.width, level.board, level.boxes))
    assert level.cells[level.index(level.player)] == EMPTY
    for box in level.boxes:
        for (x, y), (lx, ly) in zip(box.content_cells, box.lock_cells, strict=False):
            assert (lx, ly) == (x + 1, y)  # the lock is right of its content


@pytest.mark.parametrize("cfg", BRIDGE_CONFIGS)
def test_bridge_batch_levels_are_valid(cfg: BridgeBoxWorldConfig) -> None:
    for level in batch_levels(generate_bridge_batch, cfg, 200):
        info, length = level.info, level.solution_length
        assert cfg.min_sol_length <= length <= cfg.max_sol_length and level.player == (0, 0)
        check_common(level, 2 * length - 1 if cfg.multi_lock else length)
        assert doomed_boxes(level) == {i for i, box in enumerate(level.boxes) if box.distractor}
        gem = level.boxes[0]
        assert gem.contents[0] == GEM and gem.locks == ((1, length + 1) if cfg.multi_lock else (1,))
        assert (gem.content_cells[0][0], gem.content_cells[0][1]) in (cfg.gem_slots() if cfg.multi_lock else
                                                                      cfg.slots())
        assert all(box.content_cells[0] in cfg.slots() for box in level.boxes)
        b, c = info["bridge_source"], info["bridge_target"]
        assert info["puzzle_type"] == f"{length}-{b}-{c}" and info["has_bridge"] == (b > 0)
        bridges = [box for box in level.boxes if box.distractor and box.locks == (b,) and box.contents == (c,)]
        if b:
            assert 1 <= b <= length < c <= 2 * length and bridges
        decoys = sum(box.distractor for box in level.boxes) - (b > 0)
        paths = info["num_decoy_paths"]
        assert 0 <= paths <= cfg.max_decoy_paths and paths <= decoys <= paths * cfg.max_decoy_length
        paths_boxes = 2 * length + 1 if cfg.multi_lock else length + 1
        assert len(level.boxes) == paths_boxes + (b > 0) + decoys


@pytest.mark.parametrize("cfg", CLASSIC_CONFIGS)
def test_classic_batch_levels_are_valid(cfg: BoxWorldConfig) -> None:
    n = cfg.n
    for level in batch_levels(generate_classic_batch, cfg, 200):
        info, length = level.info, level.solution_length
        check_common(level, length)
        if not cfg.num_backward[1]:  # backward boxes can chain to distractors (see test_boxworld_solver)
            assert doomed_boxes(level) == {i for i, box in enumerate(level.boxes) if box.distractor}
        forward, backward = info["num_distractors"], info["num_backward"]
        assert cfg.solution_length[0] <= length <= cfg.solution_length[1]
        assert info["puzzle_type"] == f"{length}-{forward}"
        path = [box for box in level.boxes if not box.distractor]
        assert sorted((box.locks, box.contents) for box in path) == sorted(
            [((), (1,))] + [((i,), (i + 1,)) for i in range(1, length)] + [((length,), (GEM,))])
        distractors = [box for box in level.boxes if box.distractor]
        assert len(distractors) == forward * cfg.distractor_length + backward
        assert all(length < c <= 19 for box in distractors for c in box.contents + box.locks if c > length)
        for box in level.boxes:
            x, y = box.content_cells[0]
            assert 2 <= x <= n - 3 and 2 <= y <= n - 1
        px, py = level.player
        assert 1 <= px <= n - 1 and 2 <= py <= n - 1


@pytest.mark.parametrize(("generate", "cfg"), [(generate_bridge_batch, BRIDGE_CONFIGS[1]),
                                               (generate_classic_batch, CLASSIC_CONFIGS[3])])
def test_a_level_depends_only_on_its_generator(generate, cfg) -> None:
    together = batch_levels(generate, cfg, 12)
    for i, level in enumerate(together):
        alone = generate([np.random.default_rng([0, i])], cfg).level(0)
        assert alone.boxes == level.boxes and alone.player == level.player and alone.info == level.info
        assert np.array_equal(alone.colours, level.colours)


def features(level: Level) -> dict[str, object]:
    """What the two generators must agree on in distribution."""
    drop = {"puzzle_type"}
    found: dict[str, object] = {key: value for key, value in level.info.items() if key not in drop}
    gem = next(box for box in level.boxes if GEM in box.contents).content_cells[0]
    key = min((box for box in level.boxes if not box.locks), key=lambda box: box.contents).content_cells[0]
    found.update(boxes=len(level.boxes), player_x=level.player[0], player_y=level.player[1], gem_x=gem[0],
                 gem_y=gem[1], key_x=key[0], key_y=key[1], first_colour=tuple(level.colours[1]))
    return found


def same_distribution(a: list, b: list) -> float:
    """p-value of a chi-square test that two samples of hashable values come from one distribution."""
    values = sorted(set(a) | set(b), key=repr)
    if len(values) == 1:
        return 1.0
    table = np.array([[Counter(a)[v] for v in values], [Counter(b)[v] for v in values]])
    return float(chi2_contingency(table)[1])


@pytest.mark.parametrize(
    ("single", "batched", "cfg"),
    [(generate_bridge, generate_bridge_batch, BRIDGE_CONFIGS[0]),
     (generate_bridge, generate_bridge_batch, BRIDGE_CONFIGS[2]),
     (generate_classic, generate_classic_batch, CLASSIC_CONFIGS[0]),
     (generate_classic, generate_classic_batch, CLASSIC_CONFIGS[3])],
)
def test_batched_and_per_level_generators_agree_in_distribution(single, batched, cfg) -> None:
    """Puzzle parameters, box counts, player and gem cells, first box row, colours: chi-square over 600 levels
    each (a fixed seed, so the test is deterministic; the threshold is for 20-odd tests at once)."""
    count = 600
    rng = np.random.default_rng(7)
    ours = [features(level) for level in batch_levels(batched, cfg, count, seed=7)]
    theirs = [features(single(rng, cfg)) for _ in range(count)]
    for key in ours[0]:
        p = same_distribution([f[key] for f in ours], [f[key] for f in theirs])
        assert p > 1e-3, (key, p)
