"""BoxWorld rules the other tests leave open, from pycolab's ``box_world`` (google-deepmind/pycolab,
pycolab/examples/research/box_world/box_world.py: ``_sample_keys_locks_long`` and the placement of boxes) and from
Clift, Doryn, Murfet & Wallbridge, ICLR 2020, "Logic and the 2-Simplicial Transformer", §5.

* Forward distractor contents are ``rand.choice(range(L + 1, MAX_NUM_KEYS))`` with MAX_NUM_KEYS = 20: colours
  L+1..19, all of them possible. A backward distractor holds a solution colour 1..L behind a lock of such a colour,
  which nothing on a board without forward distractors can open.
* A box needs an empty neighbourhood one tile wide around it: tiles of different boxes never touch.
* Bridge BoxWorld (§5): "half of the episodes contain a bridge".
* A loose key is a key tile with an empty tile to its right (tasks/boxworld/README.md): one in the board's last
  column, beside the inventory column, cannot be picked up.
* The batched env's ``reset`` starts every board afresh: a board whose episode had just ended is not reset again
  by the next step (gymnasium's ``SyncVectorEnv`` semantics).
"""

from __future__ import annotations

import numpy as np

from tasks.boxworld import BridgeBoxWorldEnv
from tasks.boxworld.config import BoxWorldConfig, BridgeBoxWorldConfig
from tasks.boxworld.gen_bridge import bridge_level, generate_bridge
from tasks.boxworld.gen_classic import generate_classic
from tasks.boxworld.level import Box
from tasks.boxworld.vector import BoxWorldVectorEnv


def test_forward_distractors_use_the_colours_after_the_solution_up_to_19() -> None:
    rng = np.random.default_rng(0)
    seen: set[int] = set()
    for _ in range(300):
        level = generate_classic(rng, BoxWorldConfig(n=12, solution_length=1, num_distractors=(3, 4)))
        contents = [c for box in level.boxes if box.distractor for c in box.contents]
        assert all(2 <= c <= 19 for c in contents)
        seen.update(contents)
    assert seen == set(range(2, 20))


def test_backward_distractors_hide_a_solution_colour_behind_a_lock_nothing_opens() -> None:
    rng = np.random.default_rng(1)
    for _ in range(200):
        level = generate_classic(rng, BoxWorldConfig(n=12, solution_length=(1, 3), num_distractors=0,
                                                     num_backward=(1, 2)))
        length = level.solution_length
        keys = {c for box in level.boxes for c in box.contents}
        backward = [box for box in level.boxes if box.distractor]
        assert len(backward) == level.info["num_backward"] >= 1
        for box in backward:
            (content,), (lock,) = box.contents, box.locks
            assert 1 <= content <= length and length < lock <= 19 and lock not in keys


def test_tiles_of_different_boxes_never_touch() -> None:
    rng = np.random.default_rng(2)
    for _ in range(300):
        level = generate_classic(rng, BoxWorldConfig(n=10, solution_length=(1, 4), num_distractors=(2, 4)))
        tiles = [box.content_cells + box.lock_cells for box in level.boxes]
        for i, mine in enumerate(tiles):
            for theirs in tiles[i + 1:]:
                assert all(max(abs(x - u), abs(y - v)) >= 2 for x, y in mine for u, v in theirs), (mine, theirs)


def test_half_of_the_bridge_episodes_hold_a_bridge() -> None:
    rng = np.random.default_rng(3)
    bridges = [generate_bridge(rng, BridgeBoxWorldConfig()).info["has_bridge"] for _ in range(3000)]
    assert abs(np.mean(bridges) - 0.5) < 0.03  # 3.3 standard deviations


def test_a_key_in_the_last_column_beside_the_inventory_is_not_loose() -> None:
    level = bridge_level(7, 9, [Box((1,), ((8, 0),))], solution_length=1, player=(7, 0))
    env = BridgeBoxWorldEnv()
    env.reset(seed=0, options={"level": level})
    _, reward, terminated, _, _ = env.step(2)  # right, onto the key at (8, 0)
    assert reward == 0.0 and not terminated and env.inventory == []


def test_a_reset_after_episodes_ended_starts_every_board_afresh() -> None:
    settings = {"n": 6, "solution_length": 1, "num_distractors": 0, "horizon": 3}
    used = BoxWorldVectorEnv(4, **settings)
    used.reset(seed=0)
    actions = np.array([0, 1, 2, 3])
    for _ in range(3):  # the horizon ends every episode
        *_, truncated, _ = used.step(actions)
    assert truncated.all()
    fresh = BoxWorldVectorEnv(4, **settings)
    obs_used, _ = used.reset(seed=7)
    obs_fresh, _ = fresh.reset(seed=7)
    assert np.array_equal(obs_used, obs_fresh)
    for _ in range(2):
        one, two = used.step(actions), fresh.step(actions)
        for a, b in zip(one[:4], two[:4], strict=True):
            assert np.array_equal(a, b)
