"""Game of Life with interventions (Moskvichev & Liu 2021, §7.2 and Appendix B, "Experiment 2"): the settings,
Conway's rule (B3/S23) on a batch of boards, and the random draws of initial boards and interventions.

A board is a bool tensor [B, S, S]; cell (x, y) is ``board[:, x, y]`` (x indexes the first axis).

* The rule: a dead cell with exactly 3 live neighbours is born, a live cell with 2 or 3 live neighbours survives,
  every other cell is dead at the next generation. Neighbours are the 8 cells around, counted for the whole
  batch at once as a 3 x 3 box sum of shifted (rolled) boards less the cell itself.
* Boundary (``boundary``; the paper says only "an 8 by 8 grid world"): ``torus`` (default) wraps the board
  around, so the board's edges touch (rolls wrap round); ``dead`` treats every cell outside the board as dead
  forever (what a roll wraps round is zeroed).
* Initial boards: each cell alive with probability ``density`` (the paper does not give it; 0.5 by default).
* Interventions (the paper: "an arbitrary instruction to change the state of any specific cell", "variable
  numbers of interventions on each time step", their number left open): after each generation, a world draws
  n ~ U{0..interventions} and n distinct cells, uniformly; each intervention *flips* its cell (a live cell dies,
  a dead one is born), so it always changes the world.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch

from harness.errors import UserError

GENERATOR_VERSION = 1
BOUNDARIES = ("torus", "dead")
DEFAULTS: dict[str, Any] = {"size": 8, "boundary": "torus", "density": 0.5, "interventions": 0}


@dataclass(frozen=True)
class Settings:
    """What the worlds are a function of (with the generator's seed)."""

    size: int = 8  # S: the board is S x S
    boundary: str = "torus"
    density: float = 0.5
    interventions: int = 0  # the most interventions at one step

    @classmethod
    def from_config(cls, task_cfg: Any) -> Settings:
        """The settings under ``cfg.task`` (a mapping), checked: a UserError names the first bad key."""
        values = {}
        for key, default in DEFAULTS.items():
            value = task_cfg.get(key) if key in task_cfg else None
            if value is None:
                raise UserError(f"game_of_life: 'task.{key}' is missing (default {default!r})")
            values[key] = value
        settings = cls(**values)
        settings.check()
        return settings

    def check(self) -> None:
        """A UserError (one line) for a value outside its range."""
        if self.boundary not in BOUNDARIES:
            raise UserError(f"bad value for 'task.boundary': {self.boundary!r}; one of {', '.join(BOUNDARIES)}")
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 3:
            raise UserError(f"bad value for 'task.size': {self.size!r}; an int >= 3")
        cells = self.size * self.size
        n = self.interventions
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= cells:
            raise UserError(f"bad value for 'task.interventions': {n!r}; an int in [0, {cells}] (task.size squared: "
                            "the cells flipped at one step are distinct)")
        d = self.density
        if isinstance(d, bool) or not isinstance(d, (int, float)) or not 0.0 <= d <= 1.0:
            raise UserError(f"bad value for 'task.density': {d!r}; a probability in [0, 1]")

    def describe(self) -> dict[str, str]:
        return {"generator": f"game_of_life v{GENERATOR_VERSION}", **{k: str(v) for k, v in asdict(self).items()}}


def neighbours(board: torch.Tensor, boundary: str) -> torch.Tensor:
    """The live neighbours of every cell: board bool [B, S, S] -> uint8 [B, S, S] (0..8), as the 3 x 3 box sum
    (a row sum of three, then a column sum of three) less the cell itself."""
    cells = board.to(torch.uint8)  # [B, S, S]
    rows = _three_sum(cells, 2, boundary)  # [B, S, S]: (x, y-1) + (x, y) + (x, y+1)
    return _three_sum(rows, 1, boundary) - cells


def _three_sum(values: torch.Tensor, dim: int, boundary: str) -> torch.Tensor:
    """Each entry plus its two neighbours along ``dim``: wrapped round on the torus, zero beyond a dead edge."""
    before, after = values.roll(1, dim), values.roll(-1, dim)  # [B, S, S]: the entries at i-1 and i+1
    if boundary == "dead":
        before.select(dim, 0).zero_()  # nothing lies before the first row (column)
        after.select(dim, -1).zero_()  # nor after the last
    return values + before + after


def life_step(board: torch.Tensor, boundary: str) -> torch.Tensor:
    """One generation of B3/S23: board bool [B, S, S] -> bool [B, S, S]."""
    count = neighbours(board, boundary)  # [B, S, S]
    return (count == 3) | (board & (count == 2))


def random_boards(settings: Settings, batch: int, generator: torch.Generator) -> torch.Tensor:
    """Initial boards, each cell alive with probability ``density``: bool [B, S, S]."""
    size = settings.size
    return torch.rand(batch, size, size, generator=generator, device=generator.device) < settings.density


@dataclass
class Interventions:
    """The interventions of one step, padded to ``interventions`` per world."""

    cells: torch.Tensor  # int64 [B, N]: flat cell index x * S + y, distinct within a world
    mask: torch.Tensor  # bool [B, N]: True for the real ones (the first n of each row)


def draw_interventions(settings: Settings, batch: int, generator: torch.Generator) -> Interventions:
    """n ~ U{0..N} distinct uniform cells per world (N = ``interventions``); nothing is drawn when N is 0."""
    n_max, cells = settings.interventions, settings.size * settings.size
    device = generator.device
    if n_max == 0:
        empty = torch.zeros(batch, 0, dtype=torch.long, device=device)
        return Interventions(cells=empty, mask=empty.bool())
    count = torch.randint(0, n_max + 1, (batch,), generator=generator, device=device)  # [B]
    scores = torch.rand(batch, cells, generator=generator, device=device)  # [B, S*S]
    chosen = scores.topk(n_max, dim=1).indices  # [B, N]: a uniform random subset of N cells, in random order
    mask = torch.arange(n_max, device=device)[None, :] < count[:, None]  # [B, N]
    return Interventions(cells=chosen, mask=mask)


def apply_interventions(board: torch.Tensor, interventions: Interventions) -> tuple[torch.Tensor, torch.Tensor]:
    """Flip the intervened cells: board bool [B, S, S] -> (the new board [B, S, S], the flipped map [B, S, S])."""
    batch, size = board.shape[0], board.shape[-1]
    flipped = torch.zeros(batch, size * size, dtype=torch.bool, device=board.device)  # [B, S*S]
    flipped.scatter_(1, interventions.cells, interventions.mask)  # distinct cells: no write collides
    flipped = flipped.view(batch, size, size)
    return board ^ flipped, flipped
