"""An independent solver working on the scene description (``Level.boxes`` and geometry), not on pixels or
the envs' step code.

Abstract game: a state is (inventory, unlocked boxes, emptied boxes). Rules per variant:

* "classic" (pycolab BoxWorld: google-deepmind/pycolab, pycolab/examples/research/box_world/box_world.py): the
  inventory is one held key. Opening a box whose lock colour is held consumes the key; its content must then be
  picked up; picking up any key replaces the held one.
* "bridge" (dmurfet/2simplicialtransformer, env/bridge_boxworld.py, ``updateState``): the inventory is a multiset.
  Opening a box needs all its lock colours (one copy each is consumed) and adds its contents immediately; a loose
  key is simply added.

Movement is abstracted away, but every action is checked for reachability: a tile can be entered if one of its
4-neighbours is reachable from the player's start through cells not occupied by a closed box or an uncollected
key (so pick-ups are never forced on the way). Boxes are obstacles; in the generated layouts they never cut the
board, which the solver confirms rather than assumes.

``solve`` returns the smallest number of box openings to get the gem (0-cost pick-ups; Dijkstra).
``doomed_boxes`` explores every state reachable when opening a distractor does not end the episode and returns
the boxes after whose opening the gem can never be obtained.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from tasks.boxworld.level import GEM, Cell, Level

State = tuple[tuple[int, ...], frozenset[int], frozenset[int]]  # (sorted inventory, unlocked, emptied)


@dataclass(frozen=True)
class Solution:
    """solvable: the gem is obtainable; boxes_opened: fewest lock openings needed (None if unsolvable)."""

    solvable: bool
    boxes_opened: int | None
    states: int  # states expanded


class _Game:
    """The abstract game of one level: moves from a state, with reachability checks."""

    def __init__(self, level: Level) -> None:
        self.level = level
        self.bridge = level.rules == "bridge"
        self._reach_cache: dict[tuple[frozenset[int], frozenset[int]], frozenset[Cell]] = {}
        # the region only grows as boxes open, so if everything can be entered at the start, it always can
        _, unlocked, emptied = self.start()
        reach = self._reachable(unlocked, emptied)
        self.open_board = all(
            self._enterable(box.lock_cells if box.locks else box.content_cells, reach) for box in level.boxes
        )

    def start(self) -> State:
        return (), frozenset(i for i, b in enumerate(self.level.boxes) if not b.locks), frozenset()

    @staticmethod
    def won(state: State) -> bool:
        return GEM in state[0]

    def _reachable(self, unlocked: frozenset[int], emptied: frozenset[int]) -> frozenset[Cell]:
        key = (unlocked, emptied)
        if key not in self._reach_cache:
            blocked: set[Cell] = set()
            for i, box in enumerate(self.level.boxes):
                if i not in unlocked:
                    blocked.update(box.lock_cells)
                if i not in emptied:
                    blocked.update(box.content_cells)
            x0, y0, x1, y1 = self.level.board
            seen = {self.level.player}
            stack = [self.level.player]
            while stack:
                x, y = stack.pop()
                for nxt in ((x - 1, y), (x + 1, y), (x, y - 1), (x, y + 1)):
                    if x0 <= nxt[0] <= x1 and y0 <= nxt[1] <= y1 and nxt not in blocked and nxt not in seen:
                        seen.add(nxt)
                        stack.append(nxt)
            self._reach_cache[key] = frozenset(seen)
        return self._reach_cache[key]

    def _enterable(self, cells: tuple[Cell, ...], reach: frozenset[Cell]) -> bool:
        return any(n in reach for x, y in cells for n in ((x - 1, y), (x + 1, y), (x, y - 1), (x, y + 1)))

    def moves(self, state: State) -> Iterator[tuple[int, int, State]]:
        """(box index, cost, next state) for every legal open (cost 1) or pick-up (cost 0)."""
        inventory, unlocked, emptied = state
        reach = None if self.open_board else self._reachable(unlocked, emptied)
        held = Counter(inventory)
        for i, box in enumerate(self.level.boxes):
            if i not in unlocked:
                need = Counter(box.locks)
                if any(held[c] < k for c, k in need.items()):
                    continue
                if reach is not None and not self._enterable(box.lock_cells, reach):
                    continue
                rest = list((held - need).elements())
                if self.bridge:
                    yield i, 1, (tuple(sorted(rest + list(box.contents))), unlocked | {i}, emptied | {i})
                else:
                    yield i, 1, (tuple(sorted(rest)), unlocked | {i}, emptied)
            elif i not in emptied and (reach is None or self._enterable(box.content_cells, reach)):
                if self.bridge:
                    yield i, 0, (tuple(sorted(inventory + box.contents)), unlocked, emptied | {i})
                else:  # picking up replaces the held key
                    yield i, 0, (box.contents, unlocked, emptied | {i})


def solve(level: Level, stop_on_distractor: bool = True) -> Solution:
    """Fewest box openings to the gem; opening a distractor ends the episode unless ``stop_on_distractor`` is
    False (then it merely consumes keys)."""
    game = _Game(level)
    start = game.start()
    best = {start: 0}
    queue: list[tuple[int, int, State]] = [(0, 0, start)]
    tie = 0
    expanded = 0
    while queue:
        cost, _, state = heapq.heappop(queue)
        if cost > best[state]:
            continue
        expanded += 1
        if game.won(state):
            return Solution(True, cost, expanded)
        for i, step_cost, nxt in game.moves(state):
            if stop_on_distractor and step_cost and level.boxes[i].distractor:
                continue
            if cost + step_cost < best.get(nxt, cost + step_cost + 1):
                best[nxt] = cost + step_cost
                tie += 1
                heapq.heappush(queue, (cost + step_cost, tie, nxt))
    return Solution(False, None, expanded)


def doomed_boxes(level: Level) -> set[int]:
    """Boxes with locks such that no reachable state in which they are open can still reach the gem (opening
    distractors does not end the episode here). A box that can never be opened is doomed vacuously."""
    game = _Game(level)
    start = game.start()
    parents: dict[State, set[State]] = {start: set()}
    stack = [start]
    while stack:
        state = stack.pop()
        if game.won(state):
            continue
        for _, _, nxt in game.moves(state):
            if nxt not in parents:
                parents[nxt] = set()
                stack.append(nxt)
            parents[nxt].add(state)
    alive = {s for s in parents if game.won(s)}  # states from which the gem is obtainable
    frontier = list(alive)
    while frontier:
        for parent in parents[frontier.pop()]:
            if parent not in alive:
                alive.add(parent)
                frontier.append(parent)
    locked = [i for i, b in enumerate(level.boxes) if b.locks]
    return {i for i in locked if not any(i in s[1] for s in alive)}


def fully_reachable(level: Level) -> bool:
    """Every loose key and every lock tile can be entered from the player's start on the initial board, so the
    boxes never wall anything off (opening boxes only frees cells)."""
    return _Game(level).open_board
