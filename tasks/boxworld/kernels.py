"""One move on every board of a batched BoxWorld env, compiled with numba: the step loops of ``rules_bridge`` and
``rules_classic``.

A batched step is a handful of array lookups per board, so written as numpy calls over all boards its time goes to
the calls' fixed cost (about 60 calls a step, 1-2 us each) rather than to the boards. Compiled, the loop over
boards costs about 10 ns a board. The rules are those of the single envs (``bridge.BridgeBoxWorldEnv``,
``classic.BoxWorldEnv``), which stay the readable reference; ``tests/test_boxworld_vector.py`` replays the batched
envs against them move for move. Compiled code is cached beside this file (``cache=True``), so a process compiles
it only when the cache is missing or stale (about 2 s).

Arrays (B boards, N cells in observation layout, C palette codes) are the rule classes' own state, updated in place:
cells int8 [B, N] (tile codes), pos int64 [B] (player cell), flat uint8 [B, N, 3] (the observation's pixels),
palette uint8 [B, C, 3]; moves int64 [N * 4] is the move table (cell * 4 + action -> cell). Outputs rewards float64
[B], terminated and won bool [B] come in zeroed.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from tasks.boxworld.classic import NO_KEY
from tasks.boxworld.level import EMPTY, GEM, KEY0, LOCK0, WALL

# Columns of bridge BoxWorld's take table [B, N, TAKE_COLUMNS] (``rules_bridge.BridgeRules.take``): two lock colours
# needed from NEED, two colours given from GIVE, four tiles cleared from CLEAR, and whether it is a bridge or decoy
# lock at DECOY. numba reads these module ints as compile-time constants.
NEED, GIVE, CLEAR, DECOY = 0, 2, 4, 8
TAKE_COLUMNS = 9


@njit(cache=True, nogil=True)
def _paint(flat: np.ndarray, b: int, cell: int, rgb: np.ndarray) -> None:
    flat[b, cell, 0] = rgb[0]
    flat[b, cell, 1] = rgb[1]
    flat[b, cell, 2] = rgb[2]


@njit(cache=True, nogil=True)
def _walk(flat: np.ndarray, pos: np.ndarray, b: int, target: int, empty_rgb: np.ndarray, player_rgb: np.ndarray
          ) -> None:
    """Board b's player steps onto ``target``: its old tile repainted empty, the new one with the player."""
    _paint(flat, b, pos[b], empty_rgb)
    _paint(flat, b, target, player_rgb)
    pos[b] = target


@njit(cache=True, nogil=True)
def bridge_step(actions: np.ndarray, pos: np.ndarray, moves: np.ndarray, cells: np.ndarray, take: np.ndarray,
                held: np.ndarray, inventory: np.ndarray, carried: np.ndarray, flat: np.ndarray, palette: np.ndarray,
                inventory_cells: np.ndarray, empty_rgb: np.ndarray, player_rgb: np.ndarray, rewards: np.ndarray,
                terminated: np.ndarray, won: np.ndarray) -> None:
    """Bridge BoxWorld (paper §3.2; ``updateState`` in dmurfet/2simplicialtransformer, env/bridge_boxworld.py).

    take int16 [B, N, TAKE_COLUMNS]: per tile the player can take from, lock colours needed (from column NEED),
    colours given (GIVE), tiles cleared (CLEAR) and bridge or decoy (DECOY), -1 where none; held int16
    [B, 1 + colours]: copies held per colour, column 0 a sentinel 1 (a missing lock, -1, reads it);
    inventory int8 [B, N]: colours held in pick-up order, the first carried [B] of each row."""
    rows = inventory_cells.shape[0]
    for b in range(pos.shape[0]):
        target = moves[pos[b] * 4 + actions[b]]
        code = cells[b, target]
        moved = code == EMPTY
        if code >= KEY0:
            entry = take[b, target]
            if entry[GIVE] >= 0 and held[b, 1 + entry[NEED]] > 0 and held[b, 1 + entry[NEED + 1]] > 0:
                for j in range(NEED, NEED + 2):  # the lock colours leave the inventory (first copy of each)
                    colour = entry[j]
                    if colour >= 0:
                        count = carried[b]
                        at = 0
                        while inventory[b, at] != colour:
                            at += 1
                        for k in range(at, count - 1):
                            inventory[b, k] = inventory[b, k + 1]
                        carried[b] = count - 1
                        held[b, 1 + colour] -= 1
                for j in range(GIVE, GIVE + 2):  # the contents join it
                    colour = entry[j]
                    if colour >= 0:
                        inventory[b, carried[b]] = colour
                        carried[b] += 1
                        held[b, 1 + colour] += 1
                for j in range(CLEAR, CLEAR + 4):
                    cells[b, entry[j]] = EMPTY
                    _paint(flat, b, entry[j], empty_rgb)
                for i in range(rows):  # the inventory column, in pick-up order, walls below
                    shown = KEY0 + inventory[b, i] if i < carried[b] else WALL
                    _paint(flat, b, inventory_cells[i], palette[b, shown])
                moved = True
                if entry[GIVE] == GEM:  # +10 and the end for the gem
                    rewards[b], terminated[b], won[b] = 10.0, True, True
                elif entry[DECOY] > 0:  # -1 and the end for a bridge or decoy lock
                    rewards[b], terminated[b] = -1.0, True
                else:  # +1: the inventory changed
                    rewards[b] = 1.0
        if moved:
            _walk(flat, pos, b, target, empty_rgb, player_rgb)


@njit(cache=True, nogil=True)
def classic_step(actions: np.ndarray, pos: np.ndarray, moves: np.ndarray, cells: np.ndarray, distractor: np.ndarray,
                 held: np.ndarray, flat: np.ndarray, palette: np.ndarray, border_rgb: np.ndarray, empty_rgb: np.ndarray,
                 player_rgb: np.ndarray, rewards: np.ndarray, terminated: np.ndarray, won: np.ndarray) -> None:
    """Original BoxWorld (google-deepmind/pycolab, pycolab/examples/research/box_world/box_world.py).

    distractor bool [B, N]: distractor lock tiles; held int64 [B]: the key held (-1 none), shown in cell 0."""
    for b in range(pos.shape[0]):
        target = moves[pos[b] * 4 + actions[b]]
        code = cells[b, target]
        moved = code == EMPTY
        if code >= LOCK0:
            if code - LOCK0 == held[b]:  # the held key opens it: +1, or -1 and the end for a distractor
                cells[b, target] = EMPTY
                held[b] = NO_KEY
                _paint(flat, b, 0, border_rgb)
                moved = True
                bad = distractor[b, target]
                rewards[b] = -1.0 if bad else 1.0
                terminated[b] = bad
        elif code >= KEY0 and cells[b, target + 1] < LOCK0:  # a key (or the gem) with no lock on its right
            cells[b, target] = EMPTY
            moved = True
            if code - KEY0 == GEM:
                rewards[b], terminated[b], won[b] = 10.0, True, True
            else:
                held[b] = code - KEY0
                _paint(flat, b, 0, palette[b, code])
        if moved:
            _walk(flat, pos, b, target, empty_rgb, player_rgb)
