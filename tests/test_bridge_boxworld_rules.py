"""Bridge BoxWorld's level generator (tasks/boxworld/gen_bridge.py; the 2-simplicial Transformer paper §3.2 and
§5): rules the other tests leave open.

* The two-row gem box takes its slot and the slot below it: no other box is placed in its second row's
  neighbourhood, so tiles of different boxes never touch (one empty tile around every box, as on classic boards).
* A decoy path's first lock is a random path colour: 1..L, or 1..2L with ``multi_lock`` (either path's colours).
"""

from __future__ import annotations

import numpy as np

from tasks.boxworld.config import BridgeBoxWorldConfig
from tasks.boxworld.gen_bridge import generate_bridge


def test_tiles_of_different_boxes_never_touch_on_bridge_boards() -> None:
    rng = np.random.default_rng(0)
    cfg = BridgeBoxWorldConfig(min_sol_length=3, max_sol_length=3, bridge_prob=1.0)  # the fullest boards
    for _ in range(200):
        level = generate_bridge(rng, cfg)
        tiles = [box.content_cells + box.lock_cells for box in level.boxes]
        assert len(tiles[0]) == 4  # the gem box: two rows of content and lock
        for i, mine in enumerate(tiles):
            for theirs in tiles[i + 1:]:
                assert all(max(abs(x - u), abs(y - v)) >= 2 for x, y in mine for u, v in theirs), (mine, theirs)


def test_a_decoy_path_starts_behind_a_lock_of_either_path() -> None:
    rng = np.random.default_rng(1)
    cfg = BridgeBoxWorldConfig(min_sol_length=2, max_sol_length=2, has_bridge=False, max_decoy_paths=2)
    first_locks: set[int] = set()
    for _ in range(400):
        level = generate_bridge(rng, cfg)
        decoys = [box for box in level.boxes if box.distractor]
        assert len(decoys) == level.info["num_decoy_paths"]  # one box per path (max_decoy_length 1)
        for box in decoys:
            (lock,) = box.locks
            (content,) = box.contents
            assert 1 <= lock <= 4 and content > 4  # a path colour opens it; a fresh colour is inside
            first_locks.add(lock)
    assert first_locks == {1, 2, 3, 4}
